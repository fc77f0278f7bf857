//! The test harness of the test files that need database servers (`harness = false` in Cargo.toml), built
//! on libtest-mimic so that a test whose server is unreachable is reported as *ignored*, with the reason,
//! instead of passing without having run. Under `CI=true` the same test fails.
//!
//! Each file's `main` lists its tests as [`Case`]s. A case declares the servers it needs ([`Case::needs`],
//! [`Case::on`]) and anything else it requires ([`Case::requires`]); each is probed once per test binary.
//! A test that reaches for a server it did not declare fails when that server is missing
//! ([`crate::db::target`] panics): no test passes without having run.

use std::collections::HashMap;
use std::time::Duration;

use libtest_mimic::{Arguments, Completion, Failed, Trial};
use tandem_sql::Dialect;

/// Finds something a test needs, or says why it is missing.
pub type Check = fn() -> Result<(), String>;

/// One test.
pub struct Case {
    name: String,
    needs: Vec<Dialect>,
    /// Other things the test needs (a cluster, say): a name, and a check that says why it is missing.
    requires: Vec<(&'static str, Check)>,
    run: Box<dyn FnOnce() + Send + 'static>,
}

impl Case {
    /// A test called `name` that needs no server (add them with [`Case::needs`] or [`Case::on`]).
    pub fn new(name: impl Into<String>, run: impl FnOnce() + Send + 'static) -> Case {
        Case {
            name: name.into(),
            needs: Vec::new(),
            requires: Vec::new(),
            run: Box::new(run),
        }
    }

    /// Also needs the server of `dialect` (nothing for SQLite, which is always there).
    pub fn on(self, dialect: Dialect) -> Case {
        match dialect {
            Dialect::Sqlite => self,
            server => self.needs(&[server]),
        }
    }

    /// Also needs `what`, which `check` finds (or says why not); each check runs once per test binary.
    /// Missing, the test is ignored with the reason — a failure under `CI=true`.
    pub fn requires(mut self, what: &'static str, check: Check) -> Case {
        self.requires.push((what, check));
        self
    }

    /// Also needs these servers.
    pub fn needs(mut self, servers: &[Dialect]) -> Case {
        for d in servers {
            if !self.needs.contains(d) {
                self.needs.push(*d);
            }
        }
        self
    }
}

/// `name::sqlite`, `name::postgres` and `name::mysql`, each running `run` on its engine.
pub fn engines(name: &str, run: fn(Dialect)) -> Vec<Case> {
    [
        ("sqlite", Dialect::Sqlite),
        ("postgres", Dialect::Postgres),
        ("mysql", Dialect::MySql),
    ]
    .into_iter()
    .map(|(engine, d)| Case::new(format!("{name}::{engine}"), move || run(d)).on(d))
    .collect()
}

/// Whether the server answers; the reason (which URL, which variable sets it) when it does not.
pub fn probe(dialect: Dialect) -> Result<(), String> {
    let (url, var) = crate::servers::server(dialect)?;
    let config = tandem_blocking::PoolConfig {
        max_size: 1,
        min_idle: Some(0),
        connect_timeout: Duration::from_secs(5),
        ..tandem_blocking::PoolConfig::default()
    };
    tandem_blocking::Database::connect_with(&url, config)
        .map(drop)
        .map_err(|e| {
            format!(
                "{} unreachable at {} ({e}); set {var} to a reachable server",
                server_name(dialect),
                tandem_core::options::redact(&url)
            )
        })
}

/// The server a dialect's tests talk to, as the docs name it: the MySQL dialect's is MariaDB (or MySQL).
pub fn server_name(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Sqlite => "SQLite",
        Dialect::Postgres => "PostgreSQL",
        Dialect::MySql => "MariaDB/MySQL",
    }
}

/// Runs the cases with libtest's command line (filters, `--list`, `--test-threads`, …).
pub fn main(cases: Vec<Case>) {
    let args = Arguments::from_args();
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    let mut servers: HashMap<Dialect, Result<(), String>> = HashMap::new();
    let mut others: HashMap<&'static str, Result<(), String>> = HashMap::new();
    if !args.list {
        // Both servers at once: each may be a container starting.
        std::thread::scope(|s| {
            let probes: Vec<_> = [Dialect::Postgres, Dialect::MySql]
                .into_iter()
                .filter(|d| cases.iter().any(|c| c.needs.contains(d)))
                .map(|d| (d, s.spawn(move || probe(d))))
                .collect();
            for (d, probe) in probes {
                let found = probe
                    .join()
                    .unwrap_or_else(|_| Err(format!("probing {d} panicked")));
                servers.insert(d, found);
            }
        });
        for (what, check) in cases.iter().flat_map(|c| c.requires.iter()) {
            others.entry(what).or_insert_with(check);
        }
    }
    let trials = cases
        .into_iter()
        .map(|c| {
            let missing = c
                .needs
                .iter()
                .find_map(|d| servers.get(d).and_then(|r| r.clone().err()))
                .or_else(|| {
                    c.requires
                        .iter()
                        .find_map(|(what, _)| others.get(what).and_then(|r| r.clone().err()))
                });
            let run = c.run;
            Trial::ignorable_test(c.name, move || match missing {
                Some(reason) if !ci => Ok(Completion::ignored_with(reason)),
                Some(reason) => Err(Failed::from(format!(
                    "{reason} (CI=true: a missing server is a failure)"
                ))),
                None => {
                    run();
                    Ok(Completion::Completed)
                }
            })
        })
        .collect();
    let conclusion = libtest_mimic::run(&args, trials);
    #[cfg(feature = "testcontainers")]
    crate::containers::remove_shared();
    conclusion.exit();
}

/// For [`Case::requires`]: a container engine answers, for a test that starts a server of its own
/// (`containers::Server`); else what to do.
#[cfg(feature = "testcontainers")]
pub fn container_engine() -> Result<(), String> {
    crate::servers::engine().map(drop)
}

/// A two-worker tokio runtime, as `#[tokio::test(flavor = "multi_thread", worker_threads = 2)]` builds.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// Runs a future to its end on a fresh [`runtime`].
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    runtime().block_on(f)
}
