//! The reader's side of a job, shared by both runners: the key bounds, the keyset page query, and a page
//! processed into chunks ready to write.

use super::*;

pub(crate) fn key_col<S: Entity>() -> Expr {
    Expr::qualified(<S::Table as Table>::NAME, S::KEY)
}

/// `SELECT MIN(key), MAX(key), COUNT(*) FROM source`.
pub(crate) fn bounds_statement<S: Entity>() -> tandem_sql::ast::Select {
    use tandem_sql::ast::{Function, SelectItem};
    let mut s = tandem_sql::ast::Select::from(<S::Table as Table>::NAME);
    let item = |e| SelectItem::Expr {
        expr: e,
        alias: None,
    };
    s.items = vec![
        item(Expr::Cast {
            expr: Box::new(Expr::call(Function::Min, vec![key_col::<S>()])),
            ty: tandem_sql::SqlType::BigInt,
        }),
        item(Expr::Cast {
            expr: Box::new(Expr::call(Function::Max, vec![key_col::<S>()])),
            ty: tandem_sql::SqlType::BigInt,
        }),
        item(Expr::CountStar),
    ];
    s
}

/// The keyset page after `after` within `[.., hi]`.
pub(crate) fn page_statement<S: Entity>(after: i64, hi: i64, size: u64) -> tandem_sql::ast::Select {
    let mut s = tandem_core::repo::entity_select::<S>();
    s.and_where(key_col::<S>().binary(BinaryOp::Gt, Expr::value(after)));
    s.and_where(key_col::<S>().binary(BinaryOp::LtEq, Expr::value(hi)));
    s.order_by = vec![OrderBy {
        expr: key_col::<S>(),
        order: Order::Asc,
    }];
    s.limit = Some(size);
    s
}

/// What processing one page produced, in chunks ready to write.
pub(crate) struct ProcessedChunk<T> {
    pub rows: Vec<T>,
    /// The last source key the chunk covers (its checkpoint).
    pub last_key: i64,
    pub read: u64,
    pub skipped: u64,
}

/// Runs the processor over a page, cutting the output into chunks; applies the skip policy.
pub(crate) fn process_page<S: Entity<Key = i64>, T: Entity>(
    job: &BatchJob<S, T>,
    page: Vec<S>,
    failed_so_far: &std::sync::atomic::AtomicU64,
) -> Result<Vec<ProcessedChunk<T>>, JobError> {
    let mut chunks = Vec::new();
    let mut current = ProcessedChunk {
        rows: Vec::new(),
        last_key: 0,
        read: 0,
        skipped: 0,
    };
    for row in page {
        let key = row.key();
        current.read += 1;
        current.last_key = key;
        match (job.processor)(row) {
            Ok(Processed::Write(t)) => current.rows.push(t),
            Ok(Processed::Skip) => current.skipped += 1,
            Err(e) => match job.skip_policy {
                SkipPolicy::SkipUpTo(limit)
                    if failed_so_far.fetch_add(1, std::sync::atomic::Ordering::SeqCst) < limit =>
                {
                    current.skipped += 1;
                    tracing::warn!(key, error = %e, "processor failed; row skipped");
                }
                _ => return Err(JobError::Processor { key, source: e }),
            },
        }
        if current.rows.len() == job.chunk_size {
            let last = current.last_key;
            chunks.push(std::mem::replace(
                &mut current,
                ProcessedChunk {
                    rows: Vec::new(),
                    last_key: last,
                    read: 0,
                    skipped: 0,
                },
            ));
        }
    }
    if current.read > 0 {
        chunks.push(current);
    }
    Ok(chunks)
}
