// A batch job reads its source in key order and partitions it by key ranges: the source's key must be an
// integer, checked when the job is built.
use tandem_batch::{BatchJob, Processed};
use tandem_sql::prelude::*;

#[derive(Table, Debug, Clone, PartialEq)]
#[table(name = "codes")]
pub struct Code {
    #[column(primary_key, varchar = 20)]
    pub code: String,
    pub n: i64,
}

fn main() {
    let _ = BatchJob::<Code, Code>::new("copy", |c| Ok(Processed::Write(c)));
}
