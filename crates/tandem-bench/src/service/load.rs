//! The load generator: HTTP/1.1 connections kept alive, each sending GETs one after another, in a closed loop
//! (the next request as soon as the answer is in) or an open one (requests due at a fixed rate, latency
//! counted from when each was due, not when it could be sent: wrk2's correction for coordinated omission).
//! Every answer is parsed and checked against the table; a wrong one aborts the run.
//!
//! Written here rather than driving `wrk`/`h2load`: it checks every body, counts the requests in flight while
//! it runs, and runs in the benchmark's own process beside the server it measures (which is another process,
//! so the server's memory and threads are its own).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use super::app::{PONG, ROWS, stored};
use crate::report::Latencies;

/// How long one request may take before it counts as an error (and its connection is dropped).
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// One load: `conns` connections sending `target` for `window`.
#[derive(Clone, Debug)]
pub struct Load {
    /// Path and query.
    pub target: &'static str,
    /// Connections.
    pub conns: usize,
    /// How long requests are sent.
    pub window: Duration,
    /// Requests per second per connection (open loop); `None` for a closed loop.
    pub rate: Option<f64>,
    /// Besides, `/ping` on this many connections at 50 requests per second each (open loop): how long a
    /// request with no database work waits while the others run.
    pub probes: usize,
}

/// What a load measured.
pub struct Outcome {
    /// From the first request to the last answer.
    pub took: Duration,
    /// Requests answered with 200 and checked.
    pub ok: u64,
    /// Requests answered otherwise, timed out or cut off.
    pub errors: u64,
    /// The first error's text.
    pub first_error: Option<String>,
    /// Latencies of the checked answers.
    pub latencies: Latencies,
    /// Latencies of the `/ping` probes.
    pub probe: Latencies,
    /// `(id, number)` of every row an `/updates` answer said it wrote.
    pub written: Vec<(i32, i32)>,
    /// Requests in flight at three quarters of the window.
    pub in_flight: u64,
}

/// A row of an answer.
#[derive(serde::Deserialize)]
struct Row {
    id: i32,
    #[serde(rename = "randomNumber")]
    random_number: i32,
}

/// What an answer to `target` must be.
#[derive(Clone, Copy)]
enum Expect {
    Pong,
    /// One row, as stored.
    Row,
    /// `n` rows, as stored.
    Rows(usize),
    /// `n` rows with new numbers.
    Written(usize),
}

impl Expect {
    fn of(target: &str) -> Expect {
        let q = || {
            let n = target
                .split_once("q=")
                .and_then(|(_, v)| v.parse::<i64>().ok())
                .unwrap_or(1);
            n.clamp(1, 500) as usize
        };
        if target.starts_with("/ping") {
            Expect::Pong
        } else if target.starts_with("/queries") {
            Expect::Rows(q())
        } else if target.starts_with("/updates") {
            Expect::Written(q())
        } else {
            Expect::Row
        }
    }

    /// Checks `body`; the rows an update wrote go into `written`.
    fn check(self, body: &[u8], written: &mut Vec<(i32, i32)>) -> Result<(), String> {
        let text = || String::from_utf8_lossy(body).into_owned();
        let in_range = |v: i32| (1..=ROWS).contains(&v);
        match self {
            Expect::Pong if body == PONG.as_bytes() => Ok(()),
            Expect::Pong => Err(format!("/ping answered {}", text())),
            Expect::Row => {
                let r: Row =
                    serde_json::from_slice(body).map_err(|e| format!("{e}: {}", text()))?;
                if in_range(r.id) && r.random_number == stored(r.id) {
                    Ok(())
                } else {
                    Err(format!(
                        "row {} is not as stored ({}): {}",
                        r.id,
                        stored(r.id),
                        text()
                    ))
                }
            }
            Expect::Rows(n) | Expect::Written(n) => {
                let rows: Vec<Row> =
                    serde_json::from_slice(body).map_err(|e| format!("{e}: {}", text()))?;
                if rows.len() != n {
                    return Err(format!(
                        "{} rows where {n} were asked for: {}",
                        rows.len(),
                        text()
                    ));
                }
                for r in &rows {
                    let good = match self {
                        Expect::Written(_) => in_range(r.id) && in_range(r.random_number),
                        _ => in_range(r.id) && r.random_number == stored(r.id),
                    };
                    if !good {
                        return Err(format!("row {} is not as it should be: {}", r.id, text()));
                    }
                    if let Expect::Written(_) = self {
                        written.push((r.id, r.random_number));
                    }
                }
                Ok(())
            }
        }
    }
}

/// A wrong answer: the run stops.
#[derive(Debug)]
pub struct WrongAnswer(pub String);

impl std::fmt::Display for WrongAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "wrong answer: {}", self.0)
    }
}

impl std::error::Error for WrongAnswer {}

/// One exchange on a kept-alive connection: the status and body of the answer to `request`.
async fn exchange(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    request: &[u8],
) -> std::io::Result<(u16, Vec<u8>)> {
    use std::io::{Error, ErrorKind};
    stream.write_all(request).await?;
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 16];
        let mut response = httparse::Response::new(&mut headers);
        if let httparse::Status::Complete(head) = response
            .parse(buf)
            .map_err(|e| Error::new(ErrorKind::InvalidData, e))?
        {
            let length = response
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                .and_then(|h| {
                    std::str::from_utf8(h.value)
                        .ok()?
                        .trim()
                        .parse::<usize>()
                        .ok()
                })
                .ok_or_else(|| {
                    Error::new(ErrorKind::InvalidData, "an answer without content-length")
                })?;
            let status = response.code.unwrap_or(0);
            if buf.len() >= head + length {
                let body = buf[head..head + length].to_vec();
                buf.drain(..head + length);
                return Ok((status, body));
            }
        }
        if stream.read_buf(buf).await? == 0 {
            return Err(Error::new(
                ErrorKind::UnexpectedEof,
                "the server closed the connection",
            ));
        }
    }
}

/// One connection's share of a load.
struct Seen {
    ok: u64,
    errors: u64,
    first_error: Option<String>,
    latencies: Latencies,
    written: Vec<(i32, i32)>,
}

/// Sends `target` on `stream` until `deadline`: closed loop, or every `interval` (open loop, from `first`).
async fn drive(
    mut stream: TcpStream,
    target: &'static str,
    deadline: Instant,
    schedule: Option<(Instant, Duration)>,
    in_flight: Arc<AtomicU64>,
) -> Result<Seen, WrongAnswer> {
    let expect = Expect::of(target);
    let request = format!("GET {target} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n").into_bytes();
    let mut buf = Vec::with_capacity(4_096);
    let mut seen = Seen {
        ok: 0,
        errors: 0,
        first_error: None,
        latencies: Latencies::new(),
        written: Vec::new(),
    };
    let mut due = schedule.map(|(first, _)| first);
    loop {
        let start = match (due, schedule) {
            (Some(at), Some((_, every))) => {
                if at >= deadline {
                    break;
                }
                tokio::time::sleep_until(at.into()).await;
                due = Some(at + every);
                at
            }
            _ => {
                let now = Instant::now();
                if now >= deadline {
                    break;
                }
                now
            }
        };
        in_flight.fetch_add(1, Ordering::Relaxed);
        let answer =
            tokio::time::timeout(REQUEST_TIMEOUT, exchange(&mut stream, &mut buf, &request)).await;
        in_flight.fetch_sub(1, Ordering::Relaxed);
        // Only a 5xx keeps the connection in a known state; after a timeout or a broken answer it is dropped.
        let (failed, keep) = match answer {
            Ok(Ok((200, body))) => {
                expect
                    .check(&body, &mut seen.written)
                    .map_err(|e| WrongAnswer(format!("{target}: {e}")))?;
                seen.ok += 1;
                seen.latencies.record(start.elapsed());
                continue;
            }
            Ok(Ok((status, body))) => (
                format!(
                    "{target}: status {status}: {}",
                    String::from_utf8_lossy(&body)
                ),
                true,
            ),
            Ok(Err(e)) => (format!("{target}: {e}"), false),
            Err(_) => (
                format!("{target}: no answer within {REQUEST_TIMEOUT:?}"),
                false,
            ),
        };
        seen.errors += 1;
        seen.first_error.get_or_insert(failed);
        if !keep {
            break;
        }
    }
    Ok(seen)
}

/// Runs `load` against `addr`; `sample` is called at three quarters of the window (the server's memory and
/// threads while the load is on).
pub async fn run(
    addr: SocketAddr,
    load: &Load,
    sample: impl FnOnce() + Send + 'static,
) -> anyhow::Result<Outcome> {
    let connect = |n: usize| async move {
        let mut streams = Vec::with_capacity(n);
        for _ in 0..n {
            let s = tokio::time::timeout(REQUEST_TIMEOUT, TcpStream::connect(addr))
                .await
                .map_err(|_| {
                    anyhow::anyhow!("connecting to {addr}: no answer within {REQUEST_TIMEOUT:?}")
                })??;
            s.set_nodelay(true)?;
            streams.push(s);
        }
        anyhow::Ok(streams)
    };
    let (streams, probes) = (connect(load.conns).await?, connect(load.probes).await?);
    let in_flight = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let deadline = start + load.window;
    let spawn = |streams: Vec<TcpStream>, target: &'static str, rate: Option<f64>| {
        let n = streams.len().max(1) as f64;
        streams
            .into_iter()
            .enumerate()
            .map(|(i, s)| {
                // Open loop: connections' first requests spread over one interval.
                let schedule = rate.map(|r| {
                    let every = Duration::from_secs_f64(1.0 / r);
                    (start + every.mul_f64(i as f64 / n), every)
                });
                tokio::spawn(drive(s, target, deadline, schedule, in_flight.clone()))
            })
            .collect::<Vec<_>>()
    };
    let main = spawn(streams, load.target, load.rate);
    let probe = spawn(probes, "/ping", Some(50.0));
    let sampled = {
        let in_flight = in_flight.clone();
        let at = load.window.mul_f64(0.75);
        tokio::spawn(async move {
            tokio::time::sleep(at).await;
            let n = in_flight.load(Ordering::Relaxed);
            tokio::task::spawn_blocking(sample).await.ok();
            n
        })
    };
    let mut out = Outcome {
        took: Duration::ZERO,
        ok: 0,
        errors: 0,
        first_error: None,
        latencies: Latencies::new(),
        probe: Latencies::new(),
        written: Vec::new(),
        in_flight: 0,
    };
    for (handles, is_probe) in [(main, false), (probe, true)] {
        for h in handles {
            let seen = h.await??;
            out.errors += seen.errors;
            if out.first_error.is_none() {
                out.first_error = seen.first_error;
            }
            if is_probe {
                out.probe.add(&seen.latencies);
            } else {
                out.ok += seen.ok;
                out.latencies.add(&seen.latencies);
                out.written.extend(seen.written);
            }
        }
    }
    out.took = start.elapsed();
    out.in_flight = sampled.await?;
    Ok(out)
}

/// Checks the table after `/updates` answered `written`: each row an answer wrote holds one of the numbers
/// written to it (the last write of several wins), every other row is as seeded. `table` is `(id, number)`
/// for every row.
pub fn check_updates(table: &[(i32, i32)], written: &[(i32, i32)]) -> anyhow::Result<()> {
    let mut by_id: HashMap<i32, Vec<i32>> = HashMap::new();
    for &(id, n) in written {
        by_id.entry(id).or_default().push(n);
    }
    anyhow::ensure!(
        table.len() == ROWS as usize,
        "world holds {} rows after the updates, not {ROWS}",
        table.len()
    );
    for &(id, n) in table {
        let good = match by_id.get(&id) {
            Some(ns) => ns.contains(&n),
            None => n == stored(id),
        };
        anyhow::ensure!(
            good,
            "after the updates row {id} holds {n}: {}",
            match by_id.get(&id) {
                Some(ns) => format!("the answers wrote {ns:?}"),
                None => format!("no answer wrote it and it was seeded {}", stored(id)),
            }
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_checked_against_the_table() {
        let mut w = Vec::new();
        let good = format!(r#"{{"id":5,"randomNumber":{}}}"#, stored(5));
        assert!(Expect::Row.check(good.as_bytes(), &mut w).is_ok());
        let wrong = format!(r#"{{"id":5,"randomNumber":{}}}"#, stored(5) + 1);
        assert!(Expect::Row.check(wrong.as_bytes(), &mut w).is_err());
        assert!(
            Expect::Row
                .check(b"{\"id\":0,\"randomNumber\":1}", &mut w)
                .is_err()
        );
        assert!(
            Expect::Rows(2)
                .check(format!("[{good}]").as_bytes(), &mut w)
                .is_err()
        );
        assert!(
            Expect::Rows(2)
                .check(format!("[{good},{good}]").as_bytes(), &mut w)
                .is_ok()
        );
        assert!(Expect::Pong.check(b"pong", &mut w).is_err());
        assert!(
            Expect::Written(1)
                .check(b"[{\"id\":7,\"randomNumber\":10001}]", &mut w)
                .is_err()
        );
        assert!(
            Expect::Written(1)
                .check(b"[{\"id\":7,\"randomNumber\":42}]", &mut w)
                .is_ok()
        );
        assert_eq!(w, vec![(7, 42)]);
    }

    #[test]
    fn updates_are_checked_against_what_was_written() {
        let mut table: Vec<(i32, i32)> = (1..=ROWS).map(|id| (id, stored(id))).collect();
        table[6].1 = 42;
        assert!(check_updates(&table, &[(7, 42)]).is_ok());
        assert!(check_updates(&table, &[(7, 42), (7, 43)]).is_ok());
        assert!(check_updates(&table, &[(7, 43)]).is_err(), "a write lost");
        assert!(
            check_updates(&table, &[]).is_err(),
            "a write no answer made"
        );
        assert!(
            check_updates(&table[1..], &[(7, 42)]).is_err(),
            "a row lost"
        );
    }
}
