//! PostgreSQL on tokio-postgres for the async executor: `tandem-postgres`' connections — the very wire code
//! the blocking executor drives on a runtime of its own per connection — awaited on the caller's runtime,
//! in tandem's own pool ([`NativePool`]).
//!
//! Where this differs from sqlx's pool, on purpose: every new connection walks the URL's list of servers
//! (as the blocking pool's connections do), so a pool spreads over the servers with
//! `load_balance_hosts=random` and each connection knows — and names, when it falls silent — the server it
//! is on; the check of a suspect idle connection is bounded; and the sockets carry `TCP_USER_TIMEOUT` and
//! keepalive, as the blocking side's.

use std::time::Duration;

use tandem_core::hosts::Remote;
use tandem_core::{ConnectOptions, Error, HostWalk, Result, ServerRole, Verdict};
use tandem_sql::Row;

use crate::native::{NativePool, Opener, Pooled};

/// Opens the connections of one PostgreSQL database.
pub(crate) struct PgOpener {
    pub(crate) options: ConnectOptions,
    pub(crate) connect_timeout: Duration,
}

/// One connection and the server it is on.
pub(crate) struct PgLink {
    /// Boxed once, when opened: a checked-out connection moves through every call's future.
    pub(crate) pg: Box<tandem_postgres::PgConn>,
    /// The server: a call it left unanswered names it, and marks it silent for the host walks.
    pub(crate) remote: Option<Remote>,
}

/// The connections of one PostgreSQL database.
pub(crate) type PgPool = NativePool<PgOpener>;

/// A connection checked out of its pool.
pub(crate) type PooledPg = Pooled<PgOpener>;

impl Opener for PgOpener {
    type Conn = PgLink;

    /// The first server of the URL's list that answers within the connect timeout and is the kind
    /// `target_session_attrs=` asks for (the walk of `tandem_core::hosts`, the same as the blocking
    /// pool's); a URL with one server is not walked.
    async fn open(&self) -> Result<PgLink> {
        if !self.options.chooses_server() {
            return connect_one(&self.options, self.connect_timeout).await;
        }
        let mut walk = HostWalk::new(&self.options);
        while let Some(server) = walk.next_server() {
            let mut link = match connect_one(&server, self.connect_timeout).await {
                Ok(link) => link,
                Err(e) => {
                    walk.failed(&server, e);
                    continue;
                }
            };
            let role = match walk.needs_probe() {
                true => match server_role(&mut link.pg).await {
                    Ok(role) => Some(role),
                    Err(e) => {
                        walk.failed(&server, e);
                        continue;
                    }
                },
                false => None,
            };
            if walk.judge(&server, role) == Verdict::Take {
                return Ok(link);
            }
        }
        Err(walk.into_error())
    }

    /// A connection that closed, or whose server fell silent, is not handed out again.
    fn fit(link: &PgLink) -> bool {
        !link.pg.is_closed() && !link.remote.as_ref().is_some_and(Remote::is_silent)
    }

    async fn answers(link: &mut PgLink) -> bool {
        link.answers().await
    }
}

/// One connection to the one server `opts` names, handshake included within `timeout`.
async fn connect_one(opts: &ConnectOptions, timeout: Duration) -> Result<PgLink> {
    let connect = tandem_postgres::connect(opts, timeout);
    match tokio::time::timeout(timeout, connect).await {
        Ok(conn) => Ok(PgLink {
            pg: Box::new(conn?),
            remote: Remote::of(opts),
        }),
        Err(_) => Err(Error::connect_timeout(opts, timeout)),
    }
}

/// What the server is (standby, read-only), by [`tandem_core::hosts::probe_statement`].
async fn server_role(conn: &mut tandem_postgres::PgConn) -> Result<ServerRole> {
    struct First(Option<Row>);
    impl tandem_postgres::RowSink for First {
        async fn push(&mut self, row: &mut tandem_postgres::PgCells<'_>) -> Result<bool> {
            self.0 = Some(tandem_sql::Cells::row(row)?);
            Ok(false)
        }
    }
    let mut first = First(None);
    conn.run(&tandem_core::hosts::probe_statement(), &mut first)
        .await?;
    let row = first
        .0
        .ok_or_else(|| Error::Internal("the role probe returned no row".into()))?;
    ServerRole::from_row(&row)
}

/// How long the check of a suspect idle connection may take before the connection is replaced (or the
/// URL's `socket_timeout`, if shorter): a check is no call of the application's, and a server that does not
/// answer it quickly is treated as gone.
pub(crate) const CHECK_BOUND: Duration = Duration::from_secs(1);

impl PgLink {
    /// Whether the connection answers a trivial statement within [`CHECK_BOUND`].
    pub(crate) async fn answers(&mut self) -> bool {
        let check = Box::pin(self.pg.batch_execute("SELECT 1"));
        matches!(tokio::time::timeout(CHECK_BOUND, check).await, Ok(Ok(())))
    }
}
