//! Given: chapter 9's service, small — `/db` and `/queries?q=N` over TechEmpower's `World` table, served
//! by one executor and loaded by a generator that checks every answer. Your async executor serves on tokio
//! (a task per connection), your blocking one on a thread per connection, and tandem's two the same way:
//! the four servers differ only in the executor behind them, and the call to it — one row by id — is
//! yours (`world_row_blocking`, `world_row_async` in `exercise.rs`). `bench --service` measures them;
//! `just check 09` runs a short load on your two and fails on any wrong answer.
//!
//! The HTTP here is the least that works — HTTP/1.1 with keep-alive, GET only, `Content-Length` bodies —
//! to keep the stage's build small; a real service sits on a well-kept server (tandem-bench's uses axum).

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tables::Dialect;
use tandem::blocking::Executor as _;
use tandem::sql::raw;

use crate::workloads::{Side, runtime};

/// Rows in the `world` table `bench --service` serves.
pub const WORLD_ROWS: i64 = 10_000;

/// Database connections each server's executor may open.
pub const POOL: usize = 16;

/// The number seeded for row `id`: fixed, so that the generator checks an answer without asking the
/// database (TechEmpower's is random; a checker would have to read the table back).
pub fn random_number(id: i64) -> i64 {
    (id * 7_919 + 13) % 10_000 + 1
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Creates `world (id, randomnumber)` afresh with rows `1..=rows`, each holding [`random_number`] (written
/// by tandem: setting up is not what is measured).
pub fn seed_world(url: &str, rows: i64) -> Result<(), String> {
    let db = tandem::blocking::Database::connect(url).map_err(err)?;
    db.execute(&raw("DROP TABLE IF EXISTS world", vec![]))
        .map_err(err)?;
    db.execute(&raw(
        "CREATE TABLE world (id INTEGER PRIMARY KEY, randomnumber INTEGER NOT NULL)",
        vec![],
    ))
    .map_err(err)?;
    let ids: Vec<i64> = (1..=rows).collect();
    for chunk in ids.chunks(500) {
        let values: Vec<String> = chunk
            .iter()
            .map(|id| format!("({id}, {})", random_number(*id)))
            .collect();
        let sql = format!(
            "INSERT INTO world (id, randomnumber) VALUES {}",
            values.join(", ")
        );
        db.execute(&raw(sql, vec![])).map_err(err)?;
    }
    Ok(())
}

/// One row by id, in the engine's placeholder (tandem's side; yours is your `world_row_*`).
fn world_sql(d: Dialect) -> &'static str {
    match d {
        Dialect::Postgres => "SELECT id, randomnumber FROM world WHERE id = $1",
        _ => "SELECT id, randomnumber FROM world WHERE id = ?",
    }
}

/// What a request asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// `/db`: one row.
    Db,
    /// `/queries?q=N`: N rows, one select each (N clamped to 1..=500, 1 when it is not a number, as
    /// TechEmpower's rules say).
    Queries(usize),
}

impl Route {
    /// The route of a request target (`/db`, `/queries?q=20`), if it is one of the service's.
    pub fn of(target: &str) -> Option<Route> {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        match path {
            "/db" => Some(Route::Db),
            "/queries" => {
                let q = query
                    .split('&')
                    .find_map(|kv| kv.strip_prefix("q="))
                    .and_then(|q| q.parse::<usize>().ok())
                    .unwrap_or(1);
                Some(Route::Queries(q.clamp(1, 500)))
            }
            _ => None,
        }
    }

    /// How many rows its answer holds.
    pub fn rows(self) -> usize {
        match self {
            Route::Db => 1,
            Route::Queries(n) => n,
        }
    }
}

/// The answer's JSON: one object for `/db`, an array for `/queries`.
pub fn answer_json(route: Route, rows: &[(i64, i64)]) -> String {
    let object = |(id, n): &(i64, i64)| format!("{{\"id\":{id},\"randomNumber\":{n}}}");
    match route {
        Route::Db => rows.first().map(object).unwrap_or_default(),
        Route::Queries(_) => {
            let all: Vec<String> = rows.iter().map(object).collect();
            format!("[{}]", all.join(","))
        }
    }
}

/// At most 200 characters of `s`, for messages.
fn cut(s: &str) -> String {
    match s.char_indices().nth(200) {
        Some((i, _)) => format!("{}… ({} bytes)", &s[..i], s.len()),
        None => s.to_owned(),
    }
}

/// Whether `body` is the right answer to `target` over a table of `rows` rows: the service's JSON, as many
/// rows as asked for, every id in range and every number as seeded.
pub fn check_answer(target: &str, body: &str, rows: i64) -> Result<(), String> {
    let route = Route::of(target).ok_or_else(|| format!("{target} is not a route"))?;
    let mut pairs = Vec::new();
    for part in body.split("{\"id\":").skip(1) {
        let parsed = part
            .split_once(",\"randomNumber\":")
            .and_then(|(id, rest)| {
                let n = rest.split('}').next()?;
                Some((id.parse::<i64>().ok()?, n.parse::<i64>().ok()?))
            });
        pairs.push(parsed.ok_or_else(|| format!("{target}: not World rows: {}", cut(body)))?);
    }
    if answer_json(route, &pairs) != body {
        return Err(format!("{target}: not the service's JSON: {}", cut(body)));
    }
    if pairs.len() != route.rows() {
        return Err(format!(
            "{target}: {} rows, expected {}",
            pairs.len(),
            route.rows()
        ));
    }
    for (id, n) in pairs {
        if !(1..=rows).contains(&id) {
            return Err(format!("{target}: id {id} is outside 1..={rows}"));
        }
        if n != random_number(id) {
            return Err(format!(
                "{target}: row {id} answered randomNumber {n}, the table holds {}",
                random_number(id)
            ));
        }
    }
    Ok(())
}

/// A small xorshift, one per connection: the ids a server draws.
struct Ids(u64);

impl Ids {
    fn next(&mut self, rows: i64) -> i64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % rows as u64) as i64 + 1
    }
}

/// An HTTP/1.1 response.
fn response(status: &str, body: &str) -> Vec<u8> {
    let kind = if status.starts_with("200") {
        "application/json"
    } else {
        "text/plain; charset=utf-8"
    };
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The request target of a request line (`GET /db HTTP/1.1`).
fn target_of(request_line: &str) -> Option<&str> {
    let mut words = request_line.split_whitespace();
    (words.next() == Some("GET")).then_some(())?;
    words.next()
}

/// A blocking executor behind the thread-per-connection server.
#[derive(Clone)]
enum BlockingStore {
    /// Yours, through your `world_row_blocking`.
    Mine(blocking::Database, FirstPanic),
    Tandem(tandem::blocking::Database, Dialect),
    /// tandem's, answering one row in ten with a wrong number: what the generator must catch.
    Sabotaged(tandem::blocking::Database, Dialect),
}

impl BlockingStore {
    fn row(&self, id: i64) -> Result<(i64, i64), String> {
        let found = match self {
            BlockingStore::Mine(db, first) => {
                first.before()?;
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    crate::world_row_blocking(db, id)
                }))
                .map_err(|payload| first.record(payload))?
                .map_err(err)?
            }
            BlockingStore::Tandem(db, d) | BlockingStore::Sabotaged(db, d) => {
                let st = raw(world_sql(*d), vec![tandem::sql::Value::I64(id)]);
                let mut rows = db.fetch_all::<(i64, i64)>(&st).map_err(err)?;
                if matches!(self, BlockingStore::Sabotaged(..)) && id % 10 == 0 {
                    rows.iter_mut().for_each(|r| r.1 += 1);
                }
                rows.into_iter().next()
            }
        };
        the_row(id, found)
    }
}

/// An async executor behind the tokio server.
#[derive(Clone)]
enum AsyncStore {
    /// Yours, through your `world_row_async`.
    Mine(asynchronous::Database, FirstPanic),
    Tandem(tandem::asynchronous::Database, Dialect),
}

impl AsyncStore {
    async fn row(&self, id: i64) -> Result<(i64, i64), String> {
        let found = match self {
            AsyncStore::Mine(db, first) => {
                first.before()?;
                caught(crate::world_row_async(db, id))
                    .await
                    .map_err(|payload| first.record(payload))?
                    .map_err(err)?
            }
            AsyncStore::Tandem(db, d) => {
                let st = raw(world_sql(*d), vec![tandem::sql::Value::I64(id)]);
                tandem::asynchronous::Executor::fetch_all::<(i64, i64)>(db, &st)
                    .await
                    .map_err(err)?
                    .into_iter()
                    .next()
            }
        };
        the_row(id, found)
    }
}

/// The first panic of your code behind a server (the starter's `todo!`, say). From then on every answer
/// is a `500` saying it and your code is not called again: one panic message in the terminal, not one
/// per request.
#[derive(Clone, Default)]
struct FirstPanic(Arc<std::sync::OnceLock<String>>);

impl FirstPanic {
    /// The panic's message, once there was one.
    fn before(&self) -> Result<(), String> {
        match self.0.get() {
            Some(said) => Err(said.clone()),
            None => Ok(()),
        }
    }

    /// Keeps the first panic's message (a panic at the same moment on another connection says its own).
    fn record(&self, payload: Box<dyn std::any::Any + Send>) -> String {
        let said = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("(no message)");
        let said = format!("your code panicked: {said}");
        self.0.get_or_init(|| said).clone()
    }
}

/// `f`, a panic in it caught and returned: each poll of it runs under `catch_unwind`.
async fn caught<F: std::future::Future>(f: F) -> Result<F::Output, Box<dyn std::any::Any + Send>> {
    use std::task::Poll;
    let mut f = std::pin::pin!(f);
    std::future::poll_fn(|cx| {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f.as_mut().poll(cx))) {
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(payload)),
        }
    })
    .await
}

/// The row the executor found for `id`: there must be one, and it must be row `id` (a row from another
/// request, or always the same one, is an error the generator cannot see: it only knows the numbers).
fn the_row(id: i64, found: Option<(i64, i64)>) -> Result<(i64, i64), String> {
    match found {
        Some(row) if row.0 == id => Ok(row),
        Some(row) => Err(format!(
            "asked for world row {id}, the executor answered row {}",
            row.0
        )),
        None => Err(format!("no row {id} in world")),
    }
}

/// A running server on a loopback port; dropping it stops it (connections still open end with their
/// client).
pub struct Server {
    /// Where it listens.
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        match self.runtime.take() {
            Some(rt) => rt.shutdown_background(),
            // Wakes the accept loop so that it sees the flag.
            None => drop(TcpStream::connect(self.addr)),
        }
    }
}

/// Starts the service at `url` (its `world` table seeded with `rows` rows) on `side`'s executor, with a
/// pool of [`POOL`] connections: the async sides on a tokio runtime of two workers, a task per
/// connection; the blocking sides on a thread per connection. `Side::Sabotaged` serves wrong numbers.
pub fn serve(url: &str, side: Side, rows: i64) -> Result<Server, String> {
    let dialect = blocking::drivers::dialect_of(url).map_err(err)?;
    let listener = TcpListener::bind("127.0.0.1:0").map_err(err)?;
    let addr = listener.local_addr().map_err(err)?;
    let stop = Arc::new(AtomicBool::new(false));
    let tandem_pool = || tandem::blocking::PoolConfig {
        max_size: POOL as u32,
        ..tandem::blocking::PoolConfig::default()
    };
    if side.is_async() {
        let rt = runtime()?;
        let store = rt.block_on(async {
            Ok::<_, String>(match side {
                Side::MineAsync => AsyncStore::Mine(
                    asynchronous::Database::open(url, POOL).await.map_err(err)?,
                    FirstPanic::default(),
                ),
                _ => AsyncStore::Tandem(
                    tandem::asynchronous::Database::connect_with(url, tandem_pool())
                        .await
                        .map_err(err)?,
                    dialect,
                ),
            })
        })?;
        listener.set_nonblocking(true).map_err(err)?;
        let listener = {
            let _in = rt.enter();
            tokio::net::TcpListener::from_std(listener).map_err(err)?
        };
        rt.spawn(async move {
            let mut n = 0u64;
            while let Ok((conn, _)) = listener.accept().await {
                n += 1;
                tokio::spawn(serve_async(conn, store.clone(), rows, n));
            }
        });
        return Ok(Server {
            addr,
            stop,
            runtime: Some(rt),
        });
    }
    let store = match side {
        Side::MineBlocking => BlockingStore::Mine(
            blocking::Database::open(url, POOL).map_err(err)?,
            FirstPanic::default(),
        ),
        Side::Sabotaged => BlockingStore::Sabotaged(
            tandem::blocking::Database::connect_with(url, tandem_pool()).map_err(err)?,
            dialect,
        ),
        _ => BlockingStore::Tandem(
            tandem::blocking::Database::connect_with(url, tandem_pool()).map_err(err)?,
            dialect,
        ),
    };
    let flag = Arc::clone(&stop);
    std::thread::spawn(move || {
        for (n, conn) in listener.incoming().enumerate() {
            if flag.load(Ordering::SeqCst) {
                break;
            }
            let Ok(conn) = conn else { continue };
            let store = store.clone();
            std::thread::spawn(move || serve_blocking(conn, store, rows, n as u64 + 1));
        }
    });
    Ok(Server {
        addr,
        stop,
        runtime: None,
    })
}

/// One connection on the thread server: requests read and answered in turn until the client closes it.
fn serve_blocking(conn: TcpStream, store: BlockingStore, rows: i64, n: u64) {
    let _ = conn.set_nodelay(true);
    let Ok(mut out) = conn.try_clone() else {
        return;
    };
    let mut input = BufReader::new(conn);
    let mut ids = Ids(0x9e37_79b9_7f4a_7c15 ^ n);
    let mut line = String::new();
    loop {
        line.clear();
        if input.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let target = target_of(&line).map(str::to_owned);
        // The headers, up to the blank line (a GET has no body).
        let mut header = String::new();
        loop {
            header.clear();
            if input.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            if header.trim_end().is_empty() {
                break;
            }
        }
        let reply = match target.as_deref().and_then(Route::of) {
            None => response("404 Not Found", "routes: /db, /queries?q=N"),
            Some(route) => {
                let rows: Result<Vec<_>, _> = (0..route.rows())
                    .map(|_| store.row(ids.next(rows)))
                    .collect();
                match rows {
                    Ok(rows) => response("200 OK", &answer_json(route, &rows)),
                    Err(e) => response("500 Internal Server Error", &e),
                }
            }
        };
        if out.write_all(&reply).is_err() {
            return;
        }
    }
}

/// One connection on the tokio server: a task reading and answering requests in turn.
async fn serve_async(conn: tokio::net::TcpStream, store: AsyncStore, rows: i64, n: u64) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let _ = conn.set_nodelay(true);
    let (input, mut out) = conn.into_split();
    let mut input = tokio::io::BufReader::new(input);
    let mut ids = Ids(0x9e37_79b9_7f4a_7c15 ^ n);
    let mut line = String::new();
    loop {
        line.clear();
        if input.read_line(&mut line).await.unwrap_or(0) == 0 {
            return;
        }
        let target = target_of(&line).map(str::to_owned);
        let mut header = String::new();
        loop {
            header.clear();
            if input.read_line(&mut header).await.unwrap_or(0) == 0 {
                return;
            }
            if header.trim_end().is_empty() {
                break;
            }
        }
        let reply = match target.as_deref().and_then(Route::of) {
            None => response("404 Not Found", "routes: /db, /queries?q=N"),
            Some(route) => {
                let mut found = Vec::with_capacity(route.rows());
                let mut failed = None;
                for _ in 0..route.rows() {
                    match store.row(ids.next(rows)).await {
                        Ok(row) => found.push(row),
                        Err(e) => {
                            failed = Some(e);
                            break;
                        }
                    }
                }
                match failed {
                    None => response("200 OK", &answer_json(route, &found)),
                    Some(e) => response("500 Internal Server Error", &e),
                }
            }
        };
        if out.write_all(&reply).await.is_err() {
            return;
        }
    }
}

/// What a load found.
#[derive(Clone, Debug, Default)]
pub struct LoadResult {
    /// Answers that were right.
    pub ok: u64,
    /// Answers that were not 200, and connections that failed.
    pub errors: u64,
    /// The first few wrong answers and errors, each with why (each said once).
    pub problems: Vec<String>,
    /// How long each right answer took, sorted.
    pub latencies: Vec<Duration>,
    /// How long the load ran.
    pub elapsed: Duration,
}

impl LoadResult {
    /// Right answers per second.
    pub fn per_sec(&self) -> f64 {
        self.ok as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// The latency under which `q` of the right answers came (0.99 for p99).
    pub fn quantile(&self, q: f64) -> Duration {
        match self.latencies.len() {
            0 => Duration::ZERO,
            n => self.latencies[((n as f64 * q).ceil() as usize).clamp(1, n) - 1],
        }
    }
}

/// Sends `target` for `duration` from `connections` connections, each waiting for its answer before the
/// next request (a closed loop), and checks every answer with [`check_answer`].
pub fn drive(
    addr: SocketAddr,
    target: &str,
    connections: usize,
    duration: Duration,
    rows: i64,
) -> LoadResult {
    let start = Instant::now();
    let until = start + duration;
    let results: Vec<LoadResult> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..connections)
            .map(|_| s.spawn(move || client(addr, target, until, rows)))
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join().unwrap_or_else(|_| LoadResult {
                    errors: 1,
                    problems: vec!["a load thread panicked".into()],
                    ..LoadResult::default()
                })
            })
            .collect()
    });
    let mut all = LoadResult {
        elapsed: start.elapsed(),
        ..LoadResult::default()
    };
    for r in results {
        all.ok += r.ok;
        all.errors += r.errors;
        all.latencies.extend(r.latencies);
        for p in r.problems {
            if all.problems.len() < 5 && !all.problems.contains(&p) {
                all.problems.push(p);
            }
        }
    }
    all.latencies.sort_unstable();
    all
}

/// One connection of a load.
fn client(addr: SocketAddr, target: &str, until: Instant, rows: i64) -> LoadResult {
    let mut r = LoadResult::default();
    let fail = |r: &mut LoadResult, why: String| {
        r.errors += 1;
        if r.problems.len() < 5 && !r.problems.contains(&why) {
            r.problems.push(why);
        }
    };
    let conn = match TcpStream::connect(addr) {
        Ok(c) => c,
        Err(e) => {
            fail(&mut r, format!("connect to {addr}: {e}"));
            return r;
        }
    };
    let _ = conn.set_nodelay(true);
    let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
    let Ok(mut out) = conn.try_clone() else {
        fail(&mut r, "a second handle on the connection".into());
        return r;
    };
    let mut input = BufReader::new(conn);
    let request = format!("GET {target} HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    while Instant::now() < until {
        let sent = Instant::now();
        match exchange(&mut out, &mut input, &request) {
            Ok((200, body)) => match check_answer(target, &body, rows) {
                Ok(()) => {
                    r.ok += 1;
                    r.latencies.push(sent.elapsed());
                }
                Err(why) => fail(&mut r, why),
            },
            Ok((status, body)) => fail(&mut r, format!("{target}: {status}: {}", cut(&body))),
            Err(e) => {
                fail(&mut r, format!("{target}: {e}"));
                return r;
            }
        }
    }
    r
}

/// One request and its answer: the status and the body.
fn exchange(
    out: &mut TcpStream,
    input: &mut BufReader<TcpStream>,
    request: &str,
) -> std::io::Result<(u16, String)> {
    let bad = |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_owned());
    out.write_all(request.as_bytes())?;
    let mut line = String::new();
    if input.read_line(&mut line)? == 0 {
        return Err(bad("the server closed the connection"));
    }
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .ok_or_else(|| bad("not an HTTP status line"))?;
    let mut length = None;
    loop {
        line.clear();
        if input.read_line(&mut line)? == 0 {
            return Err(bad("the server closed the connection in the headers"));
        }
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse::<usize>().ok();
        }
    }
    let mut body = vec![0; length.ok_or_else(|| bad("no Content-Length"))?];
    std::io::Read::read_exact(input, &mut body)?;
    String::from_utf8(body)
        .map(|b| (status, b))
        .map_err(|_| bad("a body that is not UTF-8"))
}
