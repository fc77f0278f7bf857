//! The repository's writes that add rows: `insert`, `insert_all`, `batch_insert` (as a plan, and as
//! borrowed statements for the blocking executor) and `batch_upsert`, with the generated keys they return.

use super::*;

fn entity_insert<'a, E: Entity>(rows: impl IntoIterator<Item = &'a E>) -> Insert {
    Insert::values(
        <E::Table as Table>::NAME,
        E::insert_columns().to_vec(),
        rows.into_iter().map(Entity::insert_values).collect(),
    )
}

/// The keys a step generated: from RETURNING rows, or counted up from MySQL's last insert id. MySQL and
/// MariaDB allocate the keys of one multi-row `INSERT … VALUES` together, `auto_increment_increment` apart
/// (InnoDB, every lock mode, for inserts whose row count is known in advance): consecutive only when that
/// is 1. The driver reads the step from the connection that ran the statement (`Outcome::key_step`).
fn generated_keys<K: SqlValue>(outcome: Outcome) -> Result<Vec<K>> {
    if let Some(first) = outcome.last_insert_id.filter(|_| outcome.rows.is_empty()) {
        let step = outcome.key_step.unwrap_or(1).max(1);
        return (0..outcome.affected as i64)
            .map(|i| K::from_value(Value::I64(first + i * step)).map_err(decode_key))
            .collect();
    }
    let mut keys: Vec<(i64, K)> = outcome
        .rows
        .into_iter()
        .map(|r| {
            let v = r.values().first().cloned().ok_or(Error::RowNotFound)?;
            let order = v.as_i64().unwrap_or_default();
            Ok((order, K::from_value(v).map_err(decode_key)?))
        })
        .collect::<Result<_>>()?;
    // RETURNING gives no order guarantee; generated keys grow in insertion order.
    keys.sort_by_key(|(order, _)| *order);
    Ok(keys.into_iter().map(|(_, k)| k).collect())
}

fn decode_key(source: tandem_sql::ValueError) -> Error {
    Error::Sql(tandem_sql::Error::Decode {
        column: "<generated key>".into(),
        source,
    })
}

/// `insert`: one row; returns its key (generated, or the entity's own).
pub fn insert<E: Entity>(dialect: Dialect, entity: &E) -> Result<Plan<E::Key>> {
    let mut ins = entity_insert([entity]);
    if !E::GENERATED_KEY {
        let key = entity.key();
        return Ok(Plan::one(ins.into_rendered(dialect)?, move |_| Ok(key)));
    }
    ins.returning = Returning::Columns(vec![E::KEY]);
    Ok(Plan::one(ins.into_rendered(dialect)?, |o| {
        generated_keys::<E::Key>(o)?
            .into_iter()
            .next()
            .ok_or(Error::RowNotFound)
    }))
}

/// What `batch_insert` writes with, whatever the values: worked out once for both ways of running it (the
/// plan, and the borrowed statements of a blocking executor).
struct InsertShape<K> {
    template: InsertTemplate,
    /// MySQL ignoring duplicates: the statements that count the skipped rows around each insert.
    counter: Option<tandem_sql::batch::DuplicateCounter>,
    want_ids: bool,
    /// Rows per statement.
    per: usize,
    atomicity: Atomicity,
    /// The rows' own keys, when asked for and not generated.
    given_keys: Vec<K>,
}

fn insert_shape<E: Entity>(
    dialect: Dialect,
    rows: &[E],
    opts: &BatchOptions,
) -> Result<InsertShape<E::Key>> {
    if rows.is_empty() {
        return Err(tandem_sql::Error::EmptyBatch {
            table: <E::Table as Table>::NAME.to_string(),
        }
        .into());
    }
    let atomicity = match opts.transaction {
        BatchTransaction::PerChunk => Atomicity::EachStep,
        BatchTransaction::PerCall => Atomicity::Together,
    };
    let mut shape = Insert::values(
        <E::Table as Table>::NAME,
        E::insert_columns().to_vec(),
        Vec::new(),
    );
    if opts.ignore_duplicates {
        shape.conflict = Conflict::Ignore { target: Vec::new() };
    }
    let want_ids = opts.return_ids && E::GENERATED_KEY;
    // Where the affected-row count cannot tell skipped duplicates from inserted rows (MySQL), tandem-sql
    // gives the statements that count them around each chunk.
    let counter = InsertTemplate::new(dialect, shape.clone()).duplicate_counter()?;
    // Keys: RETURNING where the engine has it. Where duplicates are counted instead (MySQL), a multi-row
    // statement that skipped rows cannot tell the keys of those it kept (they need not be consecutive): one
    // row per statement then, and a kept row's key is the statement's generated key.
    if want_ids && counter.is_none() {
        shape.returning = Returning::Columns(vec![E::KEY]);
    }
    let given_keys = if opts.return_ids && !E::GENERATED_KEY {
        rows.iter().map(Entity::key).collect()
    } else {
        Vec::new()
    };
    let per = if want_ids && counter.is_some() {
        1
    } else {
        rows_per_statement(dialect, E::insert_columns().len(), opts.chunk_rows)?
    };
    Ok(InsertShape {
        template: InsertTemplate::new(dialect, shape),
        counter,
        want_ids,
        per,
        atomicity,
        given_keys,
    })
}

/// `batch_insert`: many rows in chunks, as the options say.
pub fn batch_insert<E: Entity>(
    dialect: Dialect,
    rows: &[E],
    opts: &BatchOptions,
) -> Result<Plan<BatchResult<E::Key>>> {
    let InsertShape {
        mut template,
        counter,
        want_ids,
        per,
        atomicity,
        given_keys,
    } = insert_shape(dialect, rows, opts)?;
    let use_copy = dialect == Dialect::Postgres
        && opts.allow_copy
        && rows.len() >= COPY_MIN_ROWS
        && !opts.ignore_duplicates
        && !opts.return_ids
        && opts.transaction == BatchTransaction::PerCall;
    if use_copy {
        let step = Step::Copy(CopyIn {
            schema: <E::Table as Table>::schema(),
            columns: E::insert_columns().to_vec(),
            rows: rows.iter().map(Entity::insert_values).collect(),
        });
        return Ok(Plan::new(vec![step], Atomicity::Together, |outcomes| {
            Ok(BatchResult {
                inserted: outcomes.iter().map(|o| o.affected).sum(),
                ids: Vec::new(),
            })
        }));
    }
    let width = E::insert_columns().len();
    let mut steps = Steps::new();
    // Per chunk: its insert, its duplicate count (if counted), its size.
    let mut chunks: Vec<(StepId, Option<StepId>, u64)> = Vec::new();
    for chunk in rows.chunks(per) {
        let mut params = Vec::with_capacity(chunk.len() * width);
        for e in chunk {
            e.write_insert_values(&mut params);
        }
        if let Some(c) = &counter {
            steps.sql(c.reset.clone());
        }
        let mut statement = template.statement(params)?;
        if want_ids && counter.is_some() {
            // One row (see `per`): the statement's generated key is that row's when it was kept.
            statement.generated_key = GeneratedKey::LastInsertId;
        }
        let insert = steps.sql(statement);
        let skipped = counter.as_ref().map(|c| steps.sql(c.read.clone()));
        chunks.push((insert, skipped, chunk.len() as u64));
    }
    Ok(steps.finish(atomicity, move |mut outcomes| {
        let mut inserted = 0;
        let mut ids = Vec::new();
        for (insert, skipped, size) in chunks {
            let mut insert = outcomes.take(insert)?;
            let skipped = match skipped {
                Some(s) => Some(first_i64(&outcomes.take(s)?)?.max(0) as u64),
                None => None,
            };
            inserted += match skipped {
                Some(n) => size.saturating_sub(n),
                None => insert.affected,
            };
            if want_ids {
                match skipped {
                    None => ids.extend(generated_keys::<E::Key>(insert)?),
                    // One row per statement (see above), kept: its key is the statement's.
                    Some(0) => {
                        insert.affected = 1;
                        ids.extend(generated_keys::<E::Key>(insert)?);
                    }
                    Some(_) => {}
                }
            }
        }
        Ok(BatchResult {
            inserted,
            ids: if want_ids { ids } else { given_keys },
        })
    }))
}

/// `batch_insert` for an executor that binds values where they are (the blocking one): the same statements
/// as the plan, each borrowing its rows' text and bytes instead of holding copies, produced one at a time
/// as the executor runs them. Only for calls that need nothing of a statement but its affected-row count,
/// and no transaction around several statements: plain multi-row INSERTs (duplicates skipped by the
/// statement itself where the engine can), one chunk per statement, each atomic on its own. `None` when the
/// call needs the plan: PostgreSQL's COPY, generated keys, MySQL's duplicate counting, or several
/// statements in one transaction.
pub fn borrowed_batch_insert<'a, E: Entity>(
    dialect: Dialect,
    rows: &'a [E],
    opts: &BatchOptions,
) -> Result<Option<BorrowedBatch<'a, E>>> {
    let shape = insert_shape(dialect, rows, opts)?;
    let copy = dialect == Dialect::Postgres && opts.allow_copy && rows.len() >= COPY_MIN_ROWS;
    let one_statement = rows.len() <= shape.per;
    let plain = shape.counter.is_none()
        && !shape.want_ids
        && (shape.atomicity == Atomicity::EachStep || one_statement)
        && !(copy && shape.atomicity == Atomicity::Together);
    Ok(plain.then(|| BorrowedBatch {
        chunks: rows.chunks(shape.per),
        shape,
    }))
}

/// The statements of a [`borrowed_batch_insert`], in order; [`BorrowedBatch::finish`] makes the call's
/// result of the rows they affected.
pub struct BorrowedBatch<'a, E: Entity> {
    shape: InsertShape<E::Key>,
    chunks: std::slice::Chunks<'a, E>,
}

impl<'a, E: Entity> Iterator for BorrowedBatch<'a, E> {
    type Item = Result<BorrowedStatement<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        let chunk = self.chunks.next()?;
        let mut params = Vec::with_capacity(chunk.len() * E::insert_columns().len());
        for e in chunk {
            e.write_insert_refs(&mut params);
        }
        Some(
            self.shape
                .template
                .statement_refs(params)
                .map_err(Error::from),
        )
    }
}

impl<E: Entity> BorrowedBatch<'_, E> {
    /// The call's result, given the rows the statements affected in all.
    pub fn finish(self, affected: u64) -> BatchResult<E::Key> {
        BatchResult {
            inserted: affected,
            ids: self.shape.given_keys,
        }
    }
}

/// `insert_all`: many rows in one transaction, returning their keys.
pub fn insert_all<E: Entity>(dialect: Dialect, rows: &[E]) -> Result<Plan<Vec<E::Key>>> {
    let opts = BatchOptions {
        chunk_rows: None,
        transaction: BatchTransaction::PerCall,
        return_ids: true,
        ..BatchOptions::default()
    };
    Ok(batch_insert::<E>(dialect, rows, &opts)?.map(|r| Ok(r.ids)))
}

/// `batch_upsert`: inserts the rows; a row whose `target` columns match an existing row updates that row's
/// other columns instead. Returns the number of rows given (every one was inserted or updated).
pub fn batch_upsert<E: Entity>(
    dialect: Dialect,
    rows: &[E],
    target: Vec<Ident>,
    chunk_rows: Option<usize>,
) -> Result<Plan<u64>> {
    if rows.is_empty() {
        return Err(tandem_sql::Error::EmptyBatch {
            table: <E::Table as Table>::NAME.to_string(),
        }
        .into());
    }
    let mut ins = entity_insert(rows);
    let set: Vec<(Ident, Expr)> = E::insert_columns()
        .iter()
        .filter(|c| !target.contains(c))
        .map(|c| (c.clone(), Expr::Excluded(c.clone())))
        .collect();
    ins.conflict = if set.is_empty() {
        Conflict::Ignore {
            target: target.clone(),
        }
    } else {
        Conflict::Update { target, set }
    };
    let n = rows.len() as u64;
    let steps = ins
        .render_chunks(dialect, chunk_rows)?
        .into_iter()
        .map(Step::Sql)
        .collect();
    Ok(Plan::new(steps, Atomicity::Together, move |_| Ok(n)))
}

#[cfg(test)]
mod borrowed_tests {
    use super::*;
    use tandem_sql::ValueRef;
    use tandem_sql::batch::BorrowedStatement;

    #[derive(tandem_sql::Table, Debug, Clone, PartialEq)]
    #[table(name = "notes")]
    struct Note {
        #[column(primary_key, auto_increment)]
        id: i64,
        title: String,
        body: Option<Vec<u8>>,
        n: i32,
    }

    fn notes(n: usize) -> Vec<Note> {
        (0..n)
            .map(|i| Note {
                id: 0,
                title: format!("note {i}"),
                body: (i % 2 == 0).then(|| vec![i as u8; 3]),
                n: i as i32,
            })
            .collect()
    }

    fn borrowed<'a>(
        dialect: Dialect,
        rows: &'a [Note],
        opts: &BatchOptions,
    ) -> Option<Vec<BorrowedStatement<'a>>> {
        borrowed_batch_insert(dialect, rows, opts)
            .unwrap()
            .map(|b| b.collect::<Result<Vec<_>>>().unwrap())
    }

    /// `find_by_id`'s cached SQL is what rendering the select gives, on every dialect, and each call binds
    /// its own key.
    #[test]
    fn find_by_id_sql_is_rendered_once_and_right() {
        for dialect in [Dialect::Sqlite, Dialect::Postgres, Dialect::MySql] {
            let mut fresh = entity_select::<Note>();
            fresh.and_where(key_eq::<Note>(7));
            let fresh = fresh.render(dialect).unwrap();
            for key in [7_i64, 8, 9] {
                let plan = find_by_id::<Note>(dialect, key).unwrap();
                match &plan.steps[..] {
                    [Step::Sql(r)] => {
                        assert_eq!(r.sql, fresh.sql, "{dialect}");
                        assert_eq!(r.params, vec![Value::I64(key)]);
                        assert_eq!(r.generated_key, fresh.generated_key);
                    }
                    other => panic!("{other:?}"),
                }
            }
        }
    }

    /// Statement by statement, the borrowed path binds what the plan binds, in the same SQL, and its text
    /// and bytes point into the rows themselves.
    #[test]
    fn borrowed_statements_are_the_plans_and_copy_no_text() {
        let rows = notes(25);
        for dialect in [Dialect::Sqlite, Dialect::Postgres, Dialect::MySql] {
            for ignore_duplicates in [false, true] {
                let opts = BatchOptions {
                    chunk_rows: Some(10),
                    ignore_duplicates,
                    ..BatchOptions::default()
                };
                if dialect == Dialect::MySql && ignore_duplicates {
                    // MySQL counts skipped rows with statements of its own around each insert.
                    assert!(borrowed(dialect, &rows, &opts).is_none());
                    continue;
                }
                let plan = batch_insert::<Note>(dialect, &rows, &opts).unwrap();
                let statements = borrowed(dialect, &rows, &opts).expect("a plain batch");
                assert_eq!(statements.len(), 3);
                assert_eq!(plan.steps.len(), 3);
                for (b, step) in statements.iter().zip(plan.steps.iter()) {
                    let Step::Sql(p) = step else {
                        panic!("{dialect}: a SQL step")
                    };
                    assert_eq!(b.sql, p.sql, "{dialect}");
                    assert_eq!(b.to_rendered().params, p.params, "{dialect}");
                }
                let [
                    ValueRef::Text(title),
                    ValueRef::Bytes(body),
                    ValueRef::Value(n),
                    ..,
                ] = &statements[0].params[..]
                else {
                    panic!("{dialect}: {:?}", statements[0].params)
                };
                assert!(std::ptr::eq(title.as_ptr(), rows[0].title.as_ptr()));
                assert!(std::ptr::eq(
                    body.as_ptr(),
                    rows[0].body.as_ref().unwrap().as_ptr()
                ));
                assert_eq!(*n, Value::I32(0));
                assert_eq!(
                    statements[0].params[4],
                    ValueRef::Value(Value::Null(tandem_sql::SqlType::Blob)),
                    "row 1 has no body"
                );
            }
        }
    }

    /// Calls that need more of a statement than its count, or several statements in one transaction, get
    /// the plan; bad input is the same typed error either way.
    #[test]
    fn calls_that_need_the_plan_are_left_to_it() {
        let rows = notes(25);
        let opts = |f: fn(&mut BatchOptions)| {
            let mut o = BatchOptions {
                chunk_rows: Some(10),
                ..BatchOptions::default()
            };
            f(&mut o);
            o
        };
        let ids = opts(|o| o.return_ids = true);
        let together = opts(|o| o.transaction = BatchTransaction::PerCall);
        for dialect in [Dialect::Sqlite, Dialect::Postgres, Dialect::MySql] {
            assert!(borrowed(dialect, &rows, &ids).is_none(), "{dialect}: keys");
            assert!(
                borrowed(dialect, &rows, &together).is_none(),
                "{dialect}: three statements in one transaction"
            );
            // One statement is atomic on its own.
            assert_eq!(borrowed(dialect, &rows[..10], &together).unwrap().len(), 1);
            let empty: &[Note] = &[];
            let plan_err = batch_insert::<Note>(dialect, empty, &together).unwrap_err();
            let borrowed_err = borrowed_batch_insert(dialect, empty, &together)
                .err()
                .expect("an empty batch is refused");
            assert_eq!(plan_err.to_string(), borrowed_err.to_string());
        }
        // PostgreSQL's COPY for a large call in one transaction.
        let many = notes(COPY_MIN_ROWS);
        let copy = opts(|o| {
            o.transaction = BatchTransaction::PerCall;
            o.chunk_rows = None;
        });
        assert!(borrowed(Dialect::Postgres, &many, &copy).is_none());
    }
}
