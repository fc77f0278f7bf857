//! The service's data and answers, written once: the `World` table (TechEmpower's: 10,000 rows of `id` and
//! `randomNumber`), the requests it serves, their JSON, and each request's work over a store — a blocking one
//! (a thread waits on each call) or an async one (a task does) — so that every variant of the server runs the
//! same code and only the store and the execution model under it differ.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tandem_sql::Table;

/// A row of TechEmpower's `World` table.
#[derive(Table, Debug, Clone, Copy, PartialEq)]
#[table(name = "world")]
pub struct World {
    /// 1 to 10,000.
    #[column(primary_key)]
    pub id: i32,
    /// 1 to 10,000.
    pub randomnumber: i32,
}

/// Rows in `world`.
pub const ROWS: i32 = 10_000;

/// What row `id` holds after seeding: a fixed scramble, so the load generator can check each answer.
pub fn stored(id: i32) -> i32 {
    (id * 7_919) % ROWS + 1
}

/// The seeded table.
pub fn rows() -> Vec<World> {
    (1..=ROWS)
        .map(|id| World {
            id,
            randomnumber: stored(id),
        })
        .collect()
}

/// A request the service answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    /// `/ping`: no database.
    Ping,
    /// `/db`: one row.
    Db,
    /// `/queries?q=N`: N rows, N selects.
    Queries(usize),
    /// `/updates?q=N`: N rows read, each given a new number and written back.
    Updates(usize),
    /// `/wait?ms=D`: one row, then D ms waiting on "another service".
    Wait(Duration),
}

impl Request {
    /// The request a path (with its query) names; `None` for an unknown path. `q` follows TechEmpower's
    /// rule: missing or not a number is 1, and it is clamped to 1..=500. `ms` is clamped to 0..=60,000.
    pub fn parse(target: &str) -> Option<Request> {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let param = |name: &str| {
            query
                .split('&')
                .filter_map(|kv| kv.split_once('='))
                .find(|(k, _)| *k == name)
                .and_then(|(_, v)| v.parse::<i64>().ok())
        };
        let q = || param("q").unwrap_or(1).clamp(1, 500) as usize;
        Some(match path {
            "/ping" => Request::Ping,
            "/db" => Request::Db,
            "/queries" => Request::Queries(q()),
            "/updates" => Request::Updates(q()),
            "/wait" => Request::Wait(Duration::from_millis(
                param("ms").unwrap_or(0).clamp(0, 60_000) as u64,
            )),
            _ => return None,
        })
    }
}

/// A random id or number in 1..=10,000: splitmix64 over one shared counter (cheap, no lock, a different
/// value on every call from any thread).
pub fn random() -> i32 {
    static NEXT: AtomicU64 = AtomicU64::new(0x9e37_79b9_7f4a_7c15);
    let mut z = NEXT.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z % ROWS as u64) as i32 + 1
}

/// `{"id":1,"randomNumber":2}`.
fn push_row(out: &mut String, w: &World) {
    use std::fmt::Write as _;
    let _ = write!(
        out,
        r#"{{"id":{},"randomNumber":{}}}"#,
        w.id, w.randomnumber
    );
}

/// One row's JSON.
pub fn row_json(w: &World) -> String {
    let mut out = String::with_capacity(32);
    push_row(&mut out, w);
    out
}

/// Rows as a JSON array.
pub fn rows_json(rows: &[World]) -> String {
    let mut out = String::with_capacity(2 + rows.len() * 32);
    out.push('[');
    for (i, w) in rows.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_row(&mut out, w);
    }
    out.push(']');
    out
}

/// `/ping`'s answer.
pub const PONG: &str = r#"{"message":"pong"}"#;

/// A store the async handlers call: each call awaits.
pub trait AsyncStore: Send + Sync + 'static {
    /// The row `id`; an error if there is none.
    fn row(&self, id: i32) -> impl Future<Output = anyhow::Result<World>> + Send;
    /// Writes `w.randomnumber` to row `w.id`.
    fn update(&self, w: World) -> impl Future<Output = anyhow::Result<()>> + Send;
}

/// A store the thread-per-connection server calls: each call blocks its thread.
pub trait BlockingStore: Send + Sync + 'static {
    /// The row `id`; an error if there is none.
    fn row(&self, id: i32) -> anyhow::Result<World>;
    /// Writes `w.randomnumber` to row `w.id`.
    fn update(&self, w: World) -> anyhow::Result<()>;
}

/// A request's answer (JSON) on an async store; the wait is a timer, no thread sleeps.
pub async fn answer<S: AsyncStore>(store: &S, request: Request) -> anyhow::Result<String> {
    Ok(match request {
        Request::Ping => PONG.into(),
        Request::Db => row_json(&store.row(random()).await?),
        Request::Queries(n) => {
            let mut rows = Vec::with_capacity(n);
            for _ in 0..n {
                rows.push(store.row(random()).await?);
            }
            rows_json(&rows)
        }
        Request::Updates(n) => {
            let mut rows = Vec::with_capacity(n);
            for _ in 0..n {
                let mut w = store.row(random()).await?;
                w.randomnumber = random();
                store.update(w).await?;
                rows.push(w);
            }
            rows_json(&rows)
        }
        Request::Wait(d) => {
            let w = store.row(random()).await?;
            tokio::time::sleep(d).await;
            row_json(&w)
        }
    })
}

/// A request's answer (JSON) on a blocking store, on the calling thread; the wait sleeps that thread.
pub fn answer_blocking<S: BlockingStore>(store: &S, request: Request) -> anyhow::Result<String> {
    Ok(match request {
        Request::Ping => PONG.into(),
        Request::Db => row_json(&store.row(random())?),
        Request::Queries(n) => rows_json(
            &(0..n)
                .map(|_| store.row(random()))
                .collect::<anyhow::Result<Vec<_>>>()?,
        ),
        Request::Updates(n) => {
            let mut rows = Vec::with_capacity(n);
            for _ in 0..n {
                let mut w = store.row(random())?;
                w.randomnumber = random();
                store.update(w)?;
                rows.push(w);
            }
            rows_json(&rows)
        }
        Request::Wait(d) => {
            let w = store.row(random())?;
            std::thread::sleep(d);
            row_json(&w)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_parse_by_techempowers_rules() {
        assert_eq!(Request::parse("/db"), Some(Request::Db));
        assert_eq!(Request::parse("/queries?q=20"), Some(Request::Queries(20)));
        assert_eq!(Request::parse("/queries?q=0"), Some(Request::Queries(1)));
        assert_eq!(
            Request::parse("/queries?q=9999"),
            Some(Request::Queries(500))
        );
        assert_eq!(Request::parse("/queries?q=foo"), Some(Request::Queries(1)));
        assert_eq!(Request::parse("/updates"), Some(Request::Updates(1)));
        assert_eq!(
            Request::parse("/wait?x=1&ms=250"),
            Some(Request::Wait(Duration::from_millis(250)))
        );
        assert_eq!(Request::parse("/nowhere"), None);
    }

    #[test]
    fn rows_render_as_techempowers_json() {
        let w = World {
            id: 3,
            randomnumber: 77,
        };
        assert_eq!(row_json(&w), r#"{"id":3,"randomNumber":77}"#);
        assert_eq!(
            rows_json(&[w, w]),
            r#"[{"id":3,"randomNumber":77},{"id":3,"randomNumber":77}]"#
        );
        assert_eq!(rows_json(&[]), "[]");
    }

    #[test]
    fn random_stays_in_range_and_varies() {
        let seen: std::collections::HashSet<i32> = (0..1_000).map(|_| random()).collect();
        assert!(seen.iter().all(|v| (1..=ROWS).contains(v)));
        assert!(seen.len() > 900, "{} distinct of 1,000", seen.len());
        assert!((1..=ROWS).all(|id| (1..=ROWS).contains(&stored(id))));
    }
}
