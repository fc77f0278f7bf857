//! The seed workload written by hand on each raw driver, with no tandem layer: the same multi-row INSERT of
//! `chunk` rows per statement, each statement its own (implicit) transaction, exactly as tandem sends it.
//! And the essay's batch job by hand ([`sqlite_job`] on rusqlite, [`postgres_job`], [`mysql_job`]): what the
//! engine needs for that job's shape, before any library code.

use postgres::types::ToSql;

use tandem_batch::essay::Source;

fn insert_sql(rows: usize, pg: bool) -> String {
    let mut sql = String::from("INSERT INTO benchmark_source (name, value) VALUES ");
    for r in 0..rows {
        if r > 0 {
            sql.push_str(", ");
        }
        if pg {
            sql.push_str(&format!("(${}, ${})", 2 * r + 1, 2 * r + 2));
        } else {
            sql.push_str("(?, ?)");
        }
    }
    sql
}

/// rusqlite.
pub fn sqlite(conn: &rusqlite::Connection, rows: &[Source], chunk: usize) -> rusqlite::Result<()> {
    for part in rows.chunks(chunk) {
        let mut stmt = conn.prepare_cached(&insert_sql(part.len(), false))?;
        let params = part.iter().flat_map(|s| {
            [
                &s.name as &dyn rusqlite::ToSql,
                &s.value as &dyn rusqlite::ToSql,
            ]
        });
        stmt.execute(rusqlite::params_from_iter(params))?;
    }
    Ok(())
}

/// postgres.
pub fn postgres(
    client: &mut postgres::Client,
    rows: &[Source],
    chunk: usize,
) -> Result<(), postgres::Error> {
    let mut prepared = std::collections::HashMap::new();
    for part in rows.chunks(chunk) {
        let stmt = prepared_insert(client, &mut prepared, part.len(), insert_sql)?;
        let params: Vec<&(dyn ToSql + Sync)> = part
            .iter()
            .flat_map(|s| {
                [
                    &s.name as &(dyn ToSql + Sync),
                    &s.value as &(dyn ToSql + Sync),
                ]
            })
            .collect();
        client.execute(stmt, &params)?;
    }
    Ok(())
}

/// The multi-row INSERT of `rows` rows that `sql` writes (PostgreSQL placeholders), prepared once per row
/// count on `client` and kept in `cache`.
fn prepared_insert<'c>(
    client: &mut postgres::Client,
    cache: &'c mut std::collections::HashMap<usize, postgres::Statement>,
    rows: usize,
    sql: fn(usize, bool) -> String,
) -> Result<&'c postgres::Statement, postgres::Error> {
    Ok(match cache.entry(rows) {
        std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
        std::collections::hash_map::Entry::Vacant(v) => v.insert(client.prepare(&sql(rows, true))?),
    })
}

/// mysql.
pub fn mysql(conn: &mut mysql::Conn, rows: &[Source], chunk: usize) -> Result<(), mysql::Error> {
    use mysql::prelude::Queryable;
    for part in rows.chunks(chunk) {
        let params: Vec<mysql::Value> = part
            .iter()
            .flat_map(|s| {
                [
                    mysql::Value::from(s.name.as_str()),
                    mysql::Value::from(s.value),
                ]
            })
            .collect();
        conn.exec_drop(
            insert_sql(part.len(), false),
            mysql::Params::Positional(params),
        )?;
    }
    Ok(())
}

/// sqlx: the same statements, arguments bound one by one, on a pooled connection, each its own transaction.
pub async fn sqlx_seed<DB>(
    pool: &sqlx::Pool<DB>,
    rows: &[Source],
    chunk: usize,
    pg: bool,
) -> Result<(), sqlx::Error>
where
    DB: sqlx::Database,
    for<'c> &'c mut DB::Connection: sqlx::Executor<'c, Database = DB>,
    DB::Arguments: sqlx::IntoArguments<DB>,
    String: for<'q> sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    i32: for<'q> sqlx::Encode<'q, DB> + sqlx::Type<DB>,
{
    let mut conn = pool.acquire().await?;
    for part in rows.chunks(chunk) {
        let mut q = sqlx::query::<DB>(sqlx::AssertSqlSafe(insert_sql(part.len(), pg)));
        for s in part {
            q = q.bind(s.name.clone()).bind(s.value);
        }
        q.execute(&mut *conn).await?;
    }
    Ok(())
}

/// SQLite's bulk path: one prepared single-row INSERT, stepped for every row, in one transaction.
pub fn sqlite_one_statement(conn: &rusqlite::Connection, rows: &[Source]) -> rusqlite::Result<()> {
    conn.execute_batch("BEGIN")?;
    {
        let mut stmt =
            conn.prepare("INSERT INTO benchmark_source (name, value) VALUES (?1, ?2)")?;
        for s in rows {
            stmt.execute(rusqlite::params![s.name, s.value])?;
        }
    }
    conn.execute_batch("COMMIT")
}

/// PostgreSQL's bulk path: binary COPY of every row in one transaction.
pub fn postgres_copy(
    client: &mut postgres::Client,
    rows: &[Source],
) -> Result<(), postgres::Error> {
    use postgres::binary_copy::BinaryCopyInWriter;
    use postgres::types::Type;
    let mut tx = client.transaction()?;
    let sink = tx.copy_in("COPY benchmark_source (name, value) FROM STDIN (FORMAT binary)")?;
    let mut writer = BinaryCopyInWriter::new(sink, &[Type::VARCHAR, Type::INT4]);
    for s in rows {
        writer.write(&[&s.name, &s.value])?;
    }
    writer.finish()?;
    tx.commit()
}

/// MySQL's bulk path: `LOAD DATA LOCAL INFILE` of every row, streamed from memory.
pub fn mysql_load_data(conn: &mut mysql::Conn, rows: &[Source]) -> Result<(), mysql::Error> {
    use mysql::prelude::Queryable;
    use std::io::Write;
    let mut data = Vec::with_capacity(rows.len() * 20);
    for s in rows {
        let _ = writeln!(data, "{}\t{}", s.name, s.value);
    }
    let data = std::sync::Arc::new(data);
    conn.set_local_infile_handler(Some(mysql::LocalInfileHandler::new(move |_, out| {
        out.write_all(&data)?;
        Ok(())
    })));
    conn.query_drop(
        "LOAD DATA LOCAL INFILE 'tandem-seed' INTO TABLE benchmark_source (name, value)",
    )
}

/// The statements that make the checkpoint table the hand-written jobs update, one row per partition (run
/// before the clock starts; [`END_JOB`] drops it afterwards). `INTEGER PRIMARY KEY`: on SQLite the row id.
pub fn job_checkpoints(partitions: usize) -> Vec<String> {
    let mut sql = vec![
        END_JOB.into(),
        "CREATE TABLE raw_job_checkpoint (id INTEGER PRIMARY KEY, checkpoint BIGINT NOT NULL, \
         read_count BIGINT NOT NULL, chunk_count BIGINT NOT NULL)"
            .into(),
    ];
    sql.extend(
        (1..=partitions).map(|i| format!("INSERT INTO raw_job_checkpoint VALUES ({i}, 0, 0, 0)")),
    );
    sql
}

/// Drops what [`job_checkpoints`] made.
pub const END_JOB: &str = "DROP TABLE IF EXISTS raw_job_checkpoint";

/// [`job_checkpoints`] for [`sqlite_job`]'s one partition.
pub fn prepare_sqlite_job(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    conn.execute_batch(&job_checkpoints(1).join(";"))
}

/// Drops what [`prepare_sqlite_job`] made.
pub fn end_sqlite_job(conn: &rusqlite::Connection) -> rusqlite::Result<()> {
    conn.execute_batch(END_JOB)
}

/// The essay's batch job by hand on one rusqlite connection, one partition: keyset pages of `page` source
/// rows, `upper(name)` and `value * 2` in Rust, then per page one transaction with the multi-row INSERT
/// and the checkpoint UPDATE (on the table [`prepare_sqlite_job`] made). What the engine needs for this
/// job's shape before any library code: 200 commits for 100,000 rows, every row read out and bound back,
/// which `INSERT … SELECT` does not do.
pub fn sqlite_job(conn: &rusqlite::Connection, page: usize) -> rusqlite::Result<()> {
    let mut after = 0i64;
    loop {
        let rows: Vec<(i64, String, i32)> = conn
            .prepare_cached(
                "SELECT id, name, value FROM benchmark_source WHERE id > ?1 ORDER BY id LIMIT ?2",
            )?
            .query_map(rusqlite::params![after, page as i64], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })?
            .collect::<rusqlite::Result<_>>()?;
        let Some(&(last, _, _)) = rows.last() else {
            return Ok(());
        };
        let out: Vec<(String, i32)> = rows
            .iter()
            .map(|(_, name, value)| (name.to_uppercase(), value * 2))
            .collect();
        conn.execute_batch("BEGIN IMMEDIATE")?;
        conn.prepare_cached(&insert_target_sql(out.len(), false))?
            .execute(rusqlite::params_from_iter(out.iter().flat_map(|(n, v)| {
                [n as &dyn rusqlite::ToSql, v as &dyn rusqlite::ToSql]
            })))?;
        conn.prepare_cached(
            "UPDATE raw_job_checkpoint SET checkpoint = ?1, read_count = read_count + ?2, chunk_count = chunk_count + 1 WHERE id = 1",
        )?
        .execute(rusqlite::params![last, rows.len() as i64])?;
        conn.execute_batch("COMMIT")?;
        after = last;
    }
}

/// A partition's next keyset page, and its checkpoint UPDATE, as the server jobs by hand send them (on the
/// blocking drivers and on sqlx alike).
const PG_PAGE: &str =
    "SELECT id, name, value FROM benchmark_source WHERE id > $1 AND id <= $2 ORDER BY id LIMIT $3";
const PG_CHECKPOINT: &str = "UPDATE raw_job_checkpoint SET checkpoint = $1, read_count = read_count + $2, \
     chunk_count = chunk_count + 1 WHERE id = $3";
const MYSQL_PAGE: &str =
    "SELECT id, name, value FROM benchmark_source WHERE id > ? AND id <= ? ORDER BY id LIMIT ?";
const MYSQL_CHECKPOINT: &str = "UPDATE raw_job_checkpoint SET checkpoint = ?, read_count = read_count + ?, \
     chunk_count = chunk_count + 1 WHERE id = ?";

/// Runs `partition` on its own thread and connection for each of `conns.len()` key ranges of `bounds`
/// (the connections are opened by the caller, before the clock starts).
fn partitioned<C: Send, E: Send>(
    mut conns: Vec<C>,
    bounds: (i64, i64),
    partition: impl Fn(&mut C, usize, (i64, i64)) -> Result<(), E> + Sync,
) -> Result<(), E> {
    let ranges = tandem_batch::job::partitions(bounds.0, bounds.1, conns.len());
    std::thread::scope(|s| {
        let running: Vec<_> = conns
            .iter_mut()
            .zip(ranges)
            .enumerate()
            .map(|(i, (conn, range))| {
                let partition = &partition;
                s.spawn(move || partition(conn, i + 1, range))
            })
            .collect();
        running
            .into_iter()
            .try_for_each(|t| t.join().expect("a raw job partition panicked"))
    })
}

/// The essay's batch job by hand on the `postgres` crate: `clients.len()` partitions, each on its own
/// thread and connection, reading keyset pages of `page` rows, transforming them in Rust, and writing each
/// page in one transaction with its multi-row INSERT and its checkpoint UPDATE (statements prepared once
/// per connection). The same round trips per chunk as the job, and no library code.
pub fn postgres_job(
    mut clients: Vec<postgres::Client>,
    page: usize,
) -> Result<(), postgres::Error> {
    let bounds: (Option<i64>, Option<i64>) = {
        let row = clients[0].query_one("SELECT MIN(id), MAX(id) FROM benchmark_source", &[])?;
        (row.get(0), row.get(1))
    };
    let (Some(lo), Some(hi)) = bounds else {
        return Ok(());
    };
    partitioned(clients, (lo, hi), |client, id, (lo, hi)| {
        let select = client.prepare(PG_PAGE)?;
        let checkpoint = client.prepare(PG_CHECKPOINT)?;
        let mut inserts = std::collections::HashMap::new();
        let mut after = lo - 1;
        loop {
            let rows = client.query(&select, &[&after, &hi, &(page as i64)])?;
            let Some(last) = rows.last().map(|r| r.get::<_, i64>(0)) else {
                return Ok(());
            };
            let out: Vec<(String, i32)> = rows
                .iter()
                .map(|r| (r.get::<_, &str>(1).to_uppercase(), r.get::<_, i32>(2) * 2))
                .collect();
            let insert = prepared_insert(client, &mut inserts, out.len(), insert_target_sql)?;
            let params: Vec<&(dyn ToSql + Sync)> = out
                .iter()
                .flat_map(|(n, v)| [n as &(dyn ToSql + Sync), v as &(dyn ToSql + Sync)])
                .collect();
            let mut tx = client.transaction()?;
            tx.execute(insert, &params)?;
            tx.execute(&checkpoint, &[&last, &(rows.len() as i64), &(id as i32)])?;
            tx.commit()?;
            after = last;
        }
    })
}

/// [`postgres_job`] on the `mysql` crate (its statement cache prepares each statement once per connection).
pub fn mysql_job(mut conns: Vec<mysql::Conn>, page: usize) -> Result<(), mysql::Error> {
    use mysql::prelude::Queryable;
    let bounds: Option<(Option<i64>, Option<i64>)> =
        conns[0].query_first("SELECT MIN(id), MAX(id) FROM benchmark_source")?;
    let Some((Some(lo), Some(hi))) = bounds else {
        return Ok(());
    };
    partitioned(conns, (lo, hi), |conn, id, (lo, hi)| {
        let mut after = lo - 1;
        loop {
            let rows: Vec<(i64, String, i32)> = conn.exec(MYSQL_PAGE, (after, hi, page as i64))?;
            let Some(&(last, _, _)) = rows.last() else {
                return Ok(());
            };
            let mut tx = conn.start_transaction(mysql::TxOpts::default())?;
            tx.exec_drop(
                insert_target_sql(rows.len(), false),
                mysql::Params::Positional(transformed(&rows)),
            )?;
            tx.exec_drop(MYSQL_CHECKPOINT, (last, rows.len() as i64, id as i64))?;
            tx.commit()?;
            after = last;
        }
    })
}

/// A page of source rows transformed (`upper(name)`, `value * 2`) into the INSERT's parameters, for both
/// MySQL drivers (the same `mysql_common` values).
fn transformed(rows: &[(i64, String, i32)]) -> Vec<mysql::Value> {
    rows.iter()
        .flat_map(|(_, name, value)| {
            [
                mysql::Value::from(name.to_uppercase()),
                mysql::Value::from(value * 2),
            ]
        })
        .collect()
}

/// [`postgres_job`] and [`mysql_job`] on sqlx, the async executor's driver: `partitions` tasks (spawned, so
/// both runtime threads work), each on its own pooled connection, with the same statements and round trips
/// (sqlx prepares each statement once per connection). What the async side's driver and runtime cost for
/// the job's shape, before any library code.
macro_rules! sqlx_job {
    ($name:ident, $db:ty, $pg:expr, $select:expr, $checkpoint:expr) => {
        pub async fn $name(
            pool: sqlx::Pool<$db>,
            partitions: usize,
            page: usize,
        ) -> Result<(), sqlx::Error> {
            use sqlx::Connection as _;
            let (lo, hi): (Option<i64>, Option<i64>) =
                sqlx::query_as("SELECT MIN(id), MAX(id) FROM benchmark_source")
                    .fetch_one(&pool)
                    .await?;
            let (Some(lo), Some(hi)) = (lo, hi) else {
                return Ok(());
            };
            let ranges = tandem_batch::job::partitions(lo, hi, partitions);
            let running: Vec<_> = ranges
                .into_iter()
                .enumerate()
                .map(|(i, (lo, hi))| {
                    let pool = pool.clone();
                    tokio::spawn(async move {
                        let mut conn = pool.acquire().await?;
                        let mut after = lo - 1;
                        loop {
                            let rows: Vec<(i64, String, i32)> = sqlx::query_as($select)
                                .bind(after)
                                .bind(hi)
                                .bind(page as i64)
                                .fetch_all(&mut *conn)
                                .await?;
                            let Some(last) = rows.last().map(|r| r.0) else {
                                return Ok::<_, sqlx::Error>(());
                            };
                            let mut insert = sqlx::query(sqlx::AssertSqlSafe(insert_target_sql(
                                rows.len(),
                                $pg,
                            )));
                            for (_, name, value) in &rows {
                                insert = insert.bind(name.to_uppercase()).bind(value * 2);
                            }
                            let mut tx = conn.begin().await?;
                            insert.execute(&mut *tx).await?;
                            sqlx::query($checkpoint)
                                .bind(last)
                                .bind(rows.len() as i64)
                                .bind(i as i32 + 1)
                                .execute(&mut *tx)
                                .await?;
                            tx.commit().await?;
                            after = last;
                        }
                    })
                })
                .collect();
            for t in running {
                t.await.expect("a raw sqlx job partition panicked")?;
            }
            Ok(())
        }
    };
}

sqlx_job!(
    sqlx_postgres_job,
    sqlx::Postgres,
    true,
    PG_PAGE,
    PG_CHECKPOINT
);
sqlx_job!(
    sqlx_mysql_job,
    sqlx::MySql,
    false,
    MYSQL_PAGE,
    MYSQL_CHECKPOINT
);

/// Spawns `partition` as a task for each of `conns.len()` key ranges of `bounds`, each with its own
/// connection (opened by the caller, before the clock starts), and waits for all: [`partitioned`] on tokio.
async fn partitioned_tasks<C, E, F>(
    conns: Vec<C>,
    bounds: (i64, i64),
    partition: impl Fn(C, usize, (i64, i64)) -> F,
) -> Result<(), E>
where
    F: Future<Output = Result<(), E>> + Send + 'static,
    E: Send + 'static,
{
    let ranges = tandem_batch::job::partitions(bounds.0, bounds.1, conns.len());
    let running: Vec<_> = (conns.into_iter().zip(ranges).enumerate())
        .map(|(i, (conn, range))| tokio::spawn(partition(conn, i + 1, range)))
        .collect();
    for t in running {
        t.await.expect("a raw job partition panicked")?;
    }
    Ok(())
}

/// [`postgres_job`] on tokio-postgres: a task and a client per partition, statements prepared once per
/// client.
pub async fn tokio_postgres_job(
    clients: Vec<tokio_postgres::Client>,
    page: usize,
) -> Result<(), tokio_postgres::Error> {
    let row = clients[0]
        .query_one("SELECT MIN(id), MAX(id) FROM benchmark_source", &[])
        .await?;
    let (Some(lo), Some(hi)) = (row.get::<_, Option<i64>>(0), row.get::<_, Option<i64>>(1)) else {
        return Ok(());
    };
    partitioned_tasks(clients, (lo, hi), |mut client, id, (lo, hi)| async move {
        let select = client.prepare(PG_PAGE).await?;
        let checkpoint = client.prepare(PG_CHECKPOINT).await?;
        let mut inserts = std::collections::HashMap::new();
        let mut after = lo - 1;
        loop {
            let rows = client
                .query(&select, &[&after, &hi, &(page as i64)])
                .await?;
            let Some(last) = rows.last().map(|r| r.get::<_, i64>(0)) else {
                return Ok(());
            };
            let out: Vec<(String, i32)> = rows
                .iter()
                .map(|r| (r.get::<_, &str>(1).to_uppercase(), r.get::<_, i32>(2) * 2))
                .collect();
            let insert = match inserts.entry(out.len()) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(v) => {
                    v.insert(client.prepare(&insert_target_sql(out.len(), true)).await?)
                }
            };
            let params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = out
                .iter()
                .flat_map(|(n, v)| [n as &(dyn ToSql + Sync), v as &(dyn ToSql + Sync)])
                .collect();
            let tx = client.transaction().await?;
            tx.execute(&*insert, &params).await?;
            tx.execute(&checkpoint, &[&last, &(rows.len() as i64), &(id as i32)])
                .await?;
            tx.commit().await?;
            after = last;
        }
    })
    .await
}

/// [`mysql_job`] on mysql_async: a task and a connection per partition (its statement cache prepares each
/// statement once per connection).
pub async fn mysql_async_job(
    mut conns: Vec<mysql_async::Conn>,
    page: usize,
) -> Result<(), mysql_async::Error> {
    use mysql_async::prelude::Queryable;
    let bounds: Option<(Option<i64>, Option<i64>)> = conns[0]
        .query_first("SELECT MIN(id), MAX(id) FROM benchmark_source")
        .await?;
    let Some((Some(lo), Some(hi))) = bounds else {
        return Ok(());
    };
    partitioned_tasks(conns, (lo, hi), |mut conn, id, (lo, hi)| async move {
        let mut after = lo - 1;
        loop {
            let rows: Vec<(i64, String, i32)> =
                conn.exec(MYSQL_PAGE, (after, hi, page as i64)).await?;
            let Some(&(last, _, _)) = rows.last() else {
                return Ok(());
            };
            let mut tx = conn
                .start_transaction(mysql_async::TxOpts::default())
                .await?;
            tx.exec_drop(
                insert_target_sql(rows.len(), false),
                mysql_async::Params::Positional(transformed(&rows)),
            )
            .await?;
            tx.exec_drop(MYSQL_CHECKPOINT, (last, rows.len() as i64, id as i64))
                .await?;
            tx.commit().await?;
            after = last;
        }
    })
    .await
}

fn insert_target_sql(rows: usize, pg: bool) -> String {
    insert_sql(rows, pg).replacen(
        "benchmark_source (name, value)",
        "benchmark_target (source_name, transformed_value)",
        1,
    )
}
