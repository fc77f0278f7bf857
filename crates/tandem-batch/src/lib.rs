//! `tandem-batch`: the batch job of the benchmark tandem rebuilds (bluetape4k's, over `benchmark_source`)
//! as a reusable, restartable component, with a blocking runner (threads) and an async runner (tasks).
//!
//! A job reads a source table by keyset pages, passes each row through a processor, and writes the results
//! in chunks. Every chunk is written in one transaction together with its checkpoint (the last source key it
//! covers), so a job that stops for any reason — an error, a killed connection, a killed process — is
//! restarted by running it again with the same name and parameters, and resumes after its last committed
//! chunk: every row is written exactly once. `MIN`/`MAX` of the key split the source into partitions run
//! concurrently, each with its own checkpoint. A run fails unless every source row is read once and written
//! or skipped.
//!
//! # Layout
//! - [`model`]: the job repository tables, kept in the job's database.
//! - [`job`]: [`BatchJob`], the processor and policies, and what both runners share without I/O.
//! - [`blocking`] and [`asynchronous`]: the runners.
//! - [`lock`]: one run of a job at a time — on one server and across a cluster.
//! - [`essay`]: that job as the original benchmark defines it (`benchmark_source` → `benchmark_target`, `upper(name)`, `value * 2`).
#![forbid(unsafe_code)]

pub mod asynchronous;
pub mod blocking;
pub mod essay;
pub mod job;
pub mod lock;
pub mod model;
mod runner;

pub use job::{
    BatchJob, JobError, JobReport, MAX_LEASE, PartitionReport, ProcessError, Processed, SkipPolicy,
    partitions,
};
