//! Choosing a server from a URL's host list, without I/O: both executors walk it the same way.
//!
//! A URL may name several servers (`postgres://h1:5432,h2:5433/db`, `mysql://h1:3311,h2:3312/db`). A
//! connection tries them in the order written, as libpq and MySQL Connector/J's sequential failover do: the
//! first server that answers — and, on PostgreSQL, that is the kind `target_session_attrs=` asks for — is
//! the one connected to. A server that does not answer, or is not the wanted kind, is passed over; when
//! none will do, the error names every server and why each was passed over.
//!
//! With `load_balance_hosts=random`, each walk takes the servers in a random order (libpq's rule), so
//! that connections spread over them.
//!
//! A server that gave no answer — a connect that timed out, a call past `socket_timeout` — is *silent*
//! for `host_recheck` (pgjdbc's `hostRecheckSeconds`): every walk of the process tries it after the
//! others until then, so a frozen first server costs one timeout, not one per connection ([`mark_silent`]).
//!
//! [`HostWalk`] is that walk as a plan: it says which server to try next and judges what each one said;
//! the executors connect, ask the server what it is ([`SessionAttrs::probe_sql`]) and report back.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tandem_sql::{Dialect, GeneratedKey, Rendered, Row, Value};

use crate::error::{DbError, DbErrorKind, Error};
use crate::options::ConnectOptions;

/// Which kind of PostgreSQL server a connection wants (`target_session_attrs=`, libpq's words and rules).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SessionAttrs {
    /// Any server that answers (the default).
    #[default]
    Any,
    /// A server that takes writes: not in recovery, `default_transaction_read_only` off.
    ReadWrite,
    /// A server that does not take writes: a standby, or one read-only by default.
    ReadOnly,
    /// A server that is not in recovery.
    Primary,
    /// A server in recovery (a hot standby).
    Standby,
    /// A standby if any answers; otherwise any server (a second walk over the list).
    PreferStandby,
}

/// What a server said about itself when asked ([`SessionAttrs::probe_sql`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerRole {
    /// `pg_is_in_recovery()`: a standby replaying the primary's log.
    pub in_recovery: bool,
    /// `transaction_read_only` of a new session: a standby, or a server read-only by default.
    pub read_only: bool,
}

impl ServerRole {
    fn describe(self) -> &'static str {
        match (self.in_recovery, self.read_only) {
            (true, _) => "a standby (in recovery)",
            (false, true) => "a primary, read-only by default",
            (false, false) => "a primary (read-write)",
        }
    }
}

impl SessionAttrs {
    /// The URL word, `None` for an unknown one.
    pub fn parse(word: &str) -> Option<SessionAttrs> {
        Some(match word {
            "any" => SessionAttrs::Any,
            "read-write" => SessionAttrs::ReadWrite,
            "read-only" => SessionAttrs::ReadOnly,
            "primary" => SessionAttrs::Primary,
            "standby" => SessionAttrs::Standby,
            "prefer-standby" => SessionAttrs::PreferStandby,
            _ => return None,
        })
    }

    /// The URL word.
    pub fn word(self) -> &'static str {
        match self {
            SessionAttrs::Any => "any",
            SessionAttrs::ReadWrite => "read-write",
            SessionAttrs::ReadOnly => "read-only",
            SessionAttrs::Primary => "primary",
            SessionAttrs::Standby => "standby",
            SessionAttrs::PreferStandby => "prefer-standby",
        }
    }

    /// Whether a connection must ask the server what it is before using it.
    pub fn needs_probe(self) -> bool {
        self != SessionAttrs::Any
    }

    /// The query that asks a PostgreSQL server what it is: one row, two text columns `t`/`f`
    /// (`pg_is_in_recovery()`, `transaction_read_only`), read by [`ServerRole::from_flags`].
    pub const fn probe_sql() -> &'static str {
        "SELECT CAST(pg_is_in_recovery() AS TEXT), current_setting('transaction_read_only')"
    }

    /// Whether a server of this role will do, on walk number `pass` (0, or 1 for prefer-standby's second
    /// walk, which takes any server).
    fn accepts(self, role: ServerRole, pass: usize) -> bool {
        match self {
            SessionAttrs::Any => true,
            SessionAttrs::ReadWrite => !role.in_recovery && !role.read_only,
            SessionAttrs::ReadOnly => role.in_recovery || role.read_only,
            SessionAttrs::Primary => !role.in_recovery,
            SessionAttrs::Standby => role.in_recovery,
            SessionAttrs::PreferStandby => pass > 0 || role.in_recovery,
        }
    }
}

/// [`SessionAttrs::probe_sql`] as a statement to run.
pub fn probe_statement() -> Rendered {
    Rendered {
        sql: SessionAttrs::probe_sql().to_owned(),
        params: Vec::new(),
        generated_key: GeneratedKey::None,
    }
}

impl ServerRole {
    /// The role from the probe's row.
    pub fn from_row(row: &Row) -> Result<ServerRole, Error> {
        match row.values() {
            [Value::Text(in_recovery), Value::Text(read_only)] => {
                Ok(ServerRole::from_flags(in_recovery, read_only))
            }
            other => Err(Error::Internal(format!(
                "the server's answer to the role probe is not two texts: {other:?}"
            ))),
        }
    }

    /// The role from the probe's two columns (`t`/`f`, `on`/`off`).
    pub fn from_flags(in_recovery: &str, read_only: &str) -> ServerRole {
        let yes = |s: &str| matches!(s, "t" | "true" | "on" | "1");
        ServerRole {
            in_recovery: yes(in_recovery),
            read_only: yes(read_only),
        }
    }
}

/// How strongly a walk avoids a server that gave no answer lately.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Silence {
    /// A call on an open connection outlived `socket_timeout`: the server may be gone, or only slow for a
    /// moment (a Galera node holds every write while the cluster evicts a frozen member, long enough to
    /// mark every live node silent too).
    Statement,
    /// A connect to it timed out or failed: walks try it after every server that only left a statement
    /// unanswered.
    Connect,
}

/// Servers that gave no answer: how, and the moment each may lead a walk again.
static SILENT: Mutex<Vec<(String, u16, Silence, Instant)>> = Mutex::new(Vec::new());

/// How many entries [`SILENT`] holds, kept under its lock: when none, a check asks neither the lock nor
/// the clock. A pool asks at every checkout and every return, and on a healthy cluster the list is empty.
static MARKED: AtomicUsize = AtomicUsize::new(0);

/// Records that `host:port` left a call unanswered: walks try it after the others for `recheck` (nothing
/// for zero). Called by the executors when a call outlived `socket_timeout`. [`HostWalk::failed`] records
/// a failed connect, which weighs more: such a server is tried after those that only left a call
/// unanswered.
pub fn mark_silent(host: &str, port: u16, recheck: Duration) {
    mark(host, port, Silence::Statement, recheck);
}

fn mark(host: &str, port: u16, how: Silence, recheck: Duration) {
    if recheck.is_zero() {
        return;
    }
    let now = Instant::now();
    let until = now + recheck;
    let mut silent = SILENT.lock().unwrap_or_else(|p| p.into_inner());
    silent.retain(|(_, _, _, until)| *until > now);
    match silent.iter_mut().find(|(h, p, ..)| h == host && *p == port) {
        // A failed connect is not made lighter by a later unanswered statement within its window.
        Some(entry) => *entry = (host.to_owned(), port, how.max(entry.2), until),
        None => silent.push((host.to_owned(), port, how, until)),
    }
    MARKED.store(silent.len(), Ordering::Release);
}

/// Forgets every server marked silent: walks go back to the written order at once (for an operator who
/// knows a server is back, or a test that froze one and must not leave the next test its record).
pub fn forget_silent() {
    let mut silent = SILENT.lock().unwrap_or_else(|p| p.into_inner());
    silent.clear();
    MARKED.store(0, Ordering::Release);
}

/// How `host:port` fell silent within its `host_recheck`, if it did.
fn silence(host: &str, port: u16) -> Option<Silence> {
    if MARKED.load(Ordering::Acquire) == 0 {
        return None;
    }
    let mut silent = SILENT.lock().unwrap_or_else(|p| p.into_inner());
    let now = Instant::now();
    // Marks past their time are dropped here too, so that checks go back to the fast path once every
    // server's window has passed.
    silent.retain(|(_, _, _, until)| *until > now);
    MARKED.store(silent.len(), Ordering::Release);
    silent
        .iter()
        .find(|(h, p, _, until)| h == host && *p == port && *until > now)
        .map(|(_, _, how, _)| *how)
}

/// Whether `host:port` gave no answer within its `host_recheck` (see [`mark_silent`]).
pub fn is_silent(host: &str, port: u16) -> bool {
    silence(host, port).is_some()
}

/// The one server a connection talks to, as it is named when that server goes silent.
#[derive(Clone, Debug)]
pub struct Remote {
    host: String,
    port: u16,
    recheck: Duration,
    bound: Option<Duration>,
}

impl Remote {
    /// The server `options` were narrowed to (see [`ConnectOptions::on_host`]); `None` for SQLite.
    pub fn of(options: &ConnectOptions) -> Option<Remote> {
        (options.dialect != Dialect::Sqlite).then(|| Remote {
            host: options.host.clone(),
            port: options.port,
            recheck: options.host_recheck,
            bound: options.socket_timeout,
        })
    }

    /// Whether this server gave no answer lately ([`is_silent`]): a pooled connection to it is dropped,
    /// not pinged (a ping would wait out `socket_timeout` again).
    pub fn is_silent(&self) -> bool {
        is_silent(&self.host, self.port)
    }

    /// A call's result on a connection to this server: a [`DbErrorKind::NoAnswer`] is named after the
    /// server and its bound, and the server is marked silent ([`mark_silent`]).
    pub fn name_silence<T>(&self, result: Result<T, Error>) -> Result<T, Error> {
        match result {
            Err(Error::Database(d)) if d.kind == DbErrorKind::NoAnswer => {
                mark_silent(&self.host, self.port, self.recheck);
                let target = crate::options::host_port(&self.host, self.port);
                Err(Error::Database(DbError {
                    source: d.source,
                    ..DbError::no_answer(d.dialect, &target, self.bound.unwrap_or_default())
                }))
            }
            other => other,
        }
    }
}

/// One walk over a URL's servers (two for `prefer-standby`).
#[derive(Debug)]
pub struct HostWalk {
    options: ConnectOptions,
    /// The servers' indexes in the order this walk tries them.
    order: Vec<usize>,
    attrs: SessionAttrs,
    pass: usize,
    next: usize,
    /// Why each server tried was passed over, in order.
    passed_over: Vec<String>,
    /// The last connect failure, returned as it is when the URL names one server.
    last_failure: Option<Error>,
}

/// The judgement on a server that answered.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Use this connection.
    Take,
    /// Close it and try the next server.
    PassOver,
}

impl HostWalk {
    /// A walk over `options`' servers, in order.
    pub fn new(options: &ConnectOptions) -> HostWalk {
        let mut order: Vec<usize> = (0..options.hosts.len().max(1)).collect();
        if options.load_balance {
            shuffle(&mut order);
        }
        // Silent servers last — those that failed a connect after those that left a statement
        // unanswered — the others in the order chosen (a stable sort).
        if order.len() > 1 {
            order.sort_by_key(|&i| options.hosts.get(i).and_then(|(h, p)| silence(h, *p)));
        }
        HostWalk {
            order,
            attrs: if options.dialect == Dialect::Postgres {
                options.target_session_attrs
            } else {
                SessionAttrs::Any
            },
            options: options.clone(),
            pass: 0,
            next: 0,
            passed_over: Vec::new(),
            last_failure: None,
        }
    }

    /// Whether servers that answer must be asked what they are ([`SessionAttrs::probe_sql`]).
    pub fn needs_probe(&self) -> bool {
        self.attrs.needs_probe()
    }

    /// The options for the next server to try, or `None` when every server was tried.
    pub fn next_server(&mut self) -> Option<ConnectOptions> {
        if self.next == self.order.len() {
            if self.attrs == SessionAttrs::PreferStandby && self.pass == 0 {
                self.pass = 1;
                self.next = 0;
            } else {
                return None;
            }
        }
        let i = self.order[self.next];
        self.next += 1;
        Some(self.options.on_host(i))
    }

    /// The server last handed out did not answer: `error` is why.
    pub fn failed(&mut self, server: &ConnectOptions, error: Error) {
        if matches!(error, Error::ConnectTimeout { .. })
            || error.kind() == Some(DbErrorKind::NoAnswer)
        {
            mark(
                &server.host,
                server.port,
                Silence::Connect,
                server.host_recheck,
            );
        }
        self.passed_over
            .push(format!("{} did not answer ({error})", server.target()));
        self.last_failure = Some(error);
    }

    /// The server last handed out answered and is `role` (`None` when it was not asked): take it or pass
    /// it over.
    pub fn judge(&mut self, server: &ConnectOptions, role: Option<ServerRole>) -> Verdict {
        match role {
            Some(role) if !self.attrs.accepts(role, self.pass) => {
                self.passed_over
                    .push(format!("{} is {}", server.target(), role.describe()));
                Verdict::PassOver
            }
            _ => Verdict::Take,
        }
    }

    /// The error when no server would do. A URL with one server and no `target_session_attrs` gets that
    /// server's own failure, unchanged; otherwise a connection-lost error when no server answered, or
    /// [`DbErrorKind::NodeUnavailable`] when some answered but none was the kind wanted, naming each.
    pub fn into_error(self) -> Error {
        let answered_none = self
            .passed_over
            .iter()
            .all(|why| why.contains("did not answer"));
        if !self.options.chooses_server()
            && let Some(e) = self.last_failure
        {
            return e;
        }
        let why = self.passed_over.join("; ");
        let dialect = self.options.dialect;
        if answered_none {
            return Error::Database(DbError::connection_lost(
                dialect,
                format!("no server of {} answered: {why}", self.options.targets()),
            ));
        }
        Error::Database(DbError {
            dialect,
            kind: DbErrorKind::NodeUnavailable,
            code: None,
            message: format!(
                "no server of {} is {} (target_session_attrs={}): {why}",
                self.options.targets(),
                match self.attrs {
                    SessionAttrs::ReadWrite => "read-write",
                    SessionAttrs::ReadOnly => "read-only",
                    SessionAttrs::Primary => "a primary",
                    _ => "a standby",
                },
                self.attrs.word()
            ),
            constraint: None,
            source: None,
        })
    }
}

/// A random permutation (Fisher–Yates), from the standard library's per-process random hash keys.
fn shuffle(items: &mut [usize]) {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    for i in (1..items.len()).rev() {
        hasher.write_usize(i);
        let j = (hasher.finish() % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PRIMARY: ServerRole = ServerRole {
        in_recovery: false,
        read_only: false,
    };
    const STANDBY: ServerRole = ServerRole {
        in_recovery: true,
        read_only: true,
    };

    /// Runs a walk over servers that behave as `servers` says (`None`: does not answer) and returns the
    /// index taken, or the error.
    fn walk(url: &str, servers: &[Option<ServerRole>]) -> Result<usize, Error> {
        let options = ConnectOptions::parse(url).unwrap();
        let mut walk = HostWalk::new(&options);
        let mut tried = Vec::new();
        while let Some(server) = walk.next_server() {
            let i = options
                .hosts
                .iter()
                .position(|(h, p)| *h == server.host && *p == server.port)
                .unwrap();
            tried.push(i);
            match servers[i] {
                None => walk.failed(
                    &server,
                    Error::Database(DbError::connection_lost(options.dialect, "refused")),
                ),
                Some(role) => {
                    let asked = walk.needs_probe().then_some(role);
                    if walk.judge(&server, asked) == Verdict::Take {
                        return Ok(i);
                    }
                }
            }
        }
        Err(walk.into_error())
    }

    /// libpq's rules: the first server that answers and is the wanted kind, in the order written;
    /// prefer-standby walks twice.
    #[test]
    fn walks_in_order_by_kind() {
        let pg = "postgres://u@h1:5432,h2:5433,h3:5434/db";
        let s = [Some(PRIMARY), Some(STANDBY), Some(STANDBY)];
        assert_eq!(walk(pg, &s).unwrap(), 0);
        let rw = format!("{pg}?target_session_attrs=read-write");
        assert_eq!(walk(&rw, &[None, Some(STANDBY), Some(PRIMARY)]).unwrap(), 2);
        let ro = format!("{pg}?target_session_attrs=read-only");
        assert_eq!(walk(&ro, &s).unwrap(), 1);
        let standby = format!("{pg}?target_session_attrs=standby");
        assert_eq!(
            walk(&standby, &[Some(PRIMARY), None, Some(STANDBY)]).unwrap(),
            2
        );
        let prefer = format!("{pg}?target_session_attrs=prefer-standby");
        assert_eq!(walk(&prefer, &s).unwrap(), 1);
        // No standby answers: the second walk takes the primary.
        assert_eq!(walk(&prefer, &[Some(PRIMARY), None, None]).unwrap(), 0);
        let primary = format!("{pg}?target_session_attrs=primary");
        let read_only_primary = ServerRole {
            in_recovery: false,
            read_only: true,
        };
        assert_eq!(
            walk(&primary, &[Some(STANDBY), Some(read_only_primary), None]).unwrap(),
            1
        );
        assert_eq!(
            walk(
                &rw,
                &[Some(STANDBY), Some(read_only_primary), Some(PRIMARY)]
            )
            .unwrap(),
            2
        );
        // MySQL: the first that answers.
        assert_eq!(
            walk(
                "mysql://r@a:3311,b:3312,c:3313/t",
                &[None, None, Some(PRIMARY)]
            )
            .unwrap(),
            2
        );
    }

    /// When none will do, the error says which kind, and why each server was passed over.
    #[test]
    fn errors_name_every_server() {
        let rw = "postgres://u@h1:5432,h2:5433/db?target_session_attrs=read-write";
        match walk(rw, &[None, Some(STANDBY)]) {
            Err(Error::Database(d)) => {
                assert_eq!(d.kind, DbErrorKind::NodeUnavailable);
                assert!(
                    d.message.contains("h1:5432 did not answer (")
                        && d.message.contains("h2:5433 is a standby")
                        && d.message.contains("target_session_attrs=read-write"),
                    "{}",
                    d.message
                );
            }
            other => panic!("{other:?}"),
        }
        match walk("mysql://r@a:1,b:2/t", &[None, None]) {
            Err(Error::Database(d)) => {
                assert_eq!(d.kind, DbErrorKind::ConnectionLost);
                assert!(
                    d.message.contains("no server of a:1,b:2 answered"),
                    "{}",
                    d.message
                );
            }
            other => panic!("{other:?}"),
        }
        // One server: its own error, as before host lists existed.
        match walk("mysql://r@a:1/t", &[None]) {
            Err(Error::Database(d)) => assert_eq!(d.message, "refused"),
            other => panic!("{other:?}"),
        }
    }

    /// A server whose connect timed out is tried last by later walks until `host_recheck` has passed;
    /// a refused one is not (it answered, quickly). (Host names of their own: the record is the
    /// process's.)
    #[test]
    fn silent_servers_go_last_for_a_while() {
        let url = "mysql://r@quiet1:1,quiet2:2,quiet3:3/t?host_recheck=300ms";
        let options = ConnectOptions::parse(url).unwrap();
        let order = || {
            let mut walk = HostWalk::new(&options);
            std::iter::from_fn(|| walk.next_server().map(|s| s.port)).collect::<Vec<_>>()
        };
        assert_eq!(order(), [1, 2, 3]);
        let mut walk = HostWalk::new(&options);
        let first = walk.next_server().unwrap();
        walk.failed(
            &first,
            Error::ConnectTimeout {
                target: first.target(),
                timeout: Duration::from_secs(1),
            },
        );
        let second = walk.next_server().unwrap();
        walk.failed(
            &second,
            Error::Database(DbError::connection_lost(Dialect::MySql, "refused")),
        );
        assert!(is_silent("quiet1", 1) && !is_silent("quiet2", 2));
        assert_eq!(order(), [2, 3, 1]);
        // A server that only left a statement unanswered goes before one that failed a connect, and a
        // later unanswered statement does not make a failed connect lighter: with every server silent
        // (a Galera cluster holding writes while it evicts a frozen node), walks still start on the
        // servers a connect has not failed on.
        mark_silent("quiet3", 3, Duration::from_millis(300));
        assert_eq!(order(), [2, 3, 1]);
        mark_silent("quiet2", 2, Duration::from_millis(300));
        mark_silent("quiet1", 1, Duration::from_millis(300));
        assert_eq!(order(), [2, 3, 1]);
        std::thread::sleep(Duration::from_millis(350));
        assert_eq!(order(), [1, 2, 3]);
        // `host_recheck=0`: never reordered.
        let never = ConnectOptions::parse("mysql://r@quiet4:4,quiet5:5/t?host_recheck=0").unwrap();
        let mut walk = HostWalk::new(&never);
        let first = walk.next_server().unwrap();
        walk.failed(
            &first,
            Error::Database(DbError::no_answer(
                Dialect::MySql,
                "quiet4:4",
                Duration::from_secs(1),
            )),
        );
        assert!(!is_silent("quiet4", 4));
        // Forgotten: back in the written order at once.
        mark_silent("quiet1", 1, Duration::from_secs(60));
        assert_eq!(order(), [2, 3, 1]);
        forget_silent();
        assert_eq!(order(), [1, 2, 3]);
    }

    /// `load_balance_hosts=random`: every server is tried once per walk, and walks start at different
    /// servers.
    #[test]
    fn random_walks_spread() {
        let options =
            ConnectOptions::parse("mysql://r@a:1,b:2,c:3/t?load_balance_hosts=random").unwrap();
        let mut firsts = std::collections::HashSet::new();
        for _ in 0..200 {
            let mut walk = HostWalk::new(&options);
            let mut seen = Vec::new();
            while let Some(s) = walk.next_server() {
                seen.push(s.port);
            }
            firsts.insert(seen[0]);
            seen.sort();
            assert_eq!(seen, [1, 2, 3]);
        }
        assert_eq!(firsts.len(), 3, "every server comes first in some walk");
    }

    /// The probe's answers in either spelling.
    #[test]
    fn roles_from_flags() {
        assert_eq!(ServerRole::from_flags("t", "on"), STANDBY);
        assert_eq!(ServerRole::from_flags("false", "off"), PRIMARY);
    }
}
