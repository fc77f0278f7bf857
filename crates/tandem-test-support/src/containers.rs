//! PostgreSQL and MariaDB in containers, through `testcontainers-modules` (feature `testcontainers`).
//!
//! Two uses:
//! - [`shared_url`]: the server of one engine for every test of this process, started on first use when
//!   [`crate::servers`] chooses containers (`TANDEM_CONTAINERS=1`, or no local server and an engine).
//! - [`Server`]: a server of one test's own, for the tests that stop, restart or freeze their server —
//!   never the machine's servers on 5432/3306, which belong to the machine.
//!
//! The images are the official Debian-based ones, `postgres:15` and `mariadb:10.11` (the versions tandem's
//! machines run); where no registry can be reached, `.ci/images` builds images of those names from Debian's
//! packages that keep the official images' contract. Ports are published on 127.0.0.1 only. Every
//! container is labelled with the process that started it: the shared ones are removed when the harness
//! ends ([`remove_shared`]), a [`Server`] when it is dropped, and containers left by a process that died
//! (a killed test run) are removed by the next process that starts one.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tandem_sql::Dialect;
use testcontainers_modules::mariadb::Mariadb;
use testcontainers_modules::postgres::Postgres;
use testcontainers_modules::testcontainers::bollard::models::{HostConfig, PortBinding};
use testcontainers_modules::testcontainers::core::error::{ClientError, TestcontainersError};
use testcontainers_modules::testcontainers::core::logs::LogFrame;
use testcontainers_modules::testcontainers::runners::SyncRunner;
use testcontainers_modules::testcontainers::{Container, ContainerRequest, Image, ImageExt};

/// The label naming the process that started a container.
const PID_LABEL: &str = "org.tandem.test-pid";
/// How long a container may take to say it is ready (a first start initialises the data directory).
const STARTUP: Duration = Duration::from_secs(120);
/// How many of a container's last log lines a start failure shows.
const LOG_TAIL: usize = 30;
/// How many containers one start may try when the engine fails to start a created one.
const START_ATTEMPTS: u32 = 3;

/// PostgreSQL with TLS on, the distribution's self-signed certificate (as Debian's packaged server has it),
/// so `tests/connect.rs` can check every `sslmode`; `fsync=off` as testcontainers' module sets it.
const POSTGRES_ARGS: [&str; 8] = [
    "-c",
    "fsync=off",
    "-c",
    "ssl=on",
    "-c",
    "ssl_cert_file=/etc/ssl/certs/ssl-cert-snakeoil.pem",
    "-c",
    "ssl_key_file=/etc/ssl/private/ssl-cert-snakeoil.key",
];

/// MariaDB with a 16 MiB redo log instead of the 96 MiB it preallocates by default: a test server holds
/// little, and a suite starts several, on machines whose disk is shared with build directories.
const MARIADB_ARGS: [&str; 1] = ["--innodb-log-file-size=16M"];

/// A running container of either engine.
enum Running {
    Postgres(Container<Postgres>),
    Mariadb(Container<Mariadb>),
}

/// Calls `$f` on the container whichever engine it runs.
macro_rules! on_container {
    ($running:expr, |$c:ident| $f:expr) => {
        match $running {
            Running::Postgres($c) => $f,
            Running::Mariadb($c) => $f,
        }
    };
}

/// A database server in a container of one test's own: stop, start, pause and resume it as the test needs.
/// Its host port stays the same across a restart, so pools pointed at [`Server::url`] can reconnect.
/// Removed when dropped.
pub struct Server {
    running: Running,
    dialect: Dialect,
    port: u16,
}

impl Server {
    /// Starts a server of `dialect` (PostgreSQL or MariaDB) on a free port of 127.0.0.1 and waits until it
    /// is ready. The error says why, with the container's last log lines.
    pub fn start(dialect: Dialect) -> Result<Server, String> {
        let (running, port) = run(dialect, true)?;
        Ok(Server {
            running,
            dialect,
            port: port.expect("run picks the port when asked to"),
        })
    }

    /// The URL of the server's `test` database.
    pub fn url(&self) -> String {
        url(self.dialect, self.port)
    }

    /// Stops the server (the engine's stop: SIGTERM, or SIGINT for PostgreSQL as its image asks, then
    /// SIGKILL after `grace`).
    pub fn stop(&self, grace: Duration) -> Result<(), String> {
        let secs = i32::try_from(grace.as_secs()).unwrap_or(i32::MAX);
        on_container!(&self.running, |c| c.stop_with_timeout(Some(secs)))
            .map_err(|e| format!("stop the {} container: {e}", self.dialect))
    }

    /// Starts the stopped server again, on the same port. Returns once the engine has started the
    /// container; the server answers a moment later (poll it).
    pub fn restart(&self) -> Result<(), String> {
        on_container!(&self.running, |c| c.start())
            .map_err(|e| format!("start the {} container: {e}", self.dialect))
    }

    /// Freezes every process of the server (the engine's pause: the cgroup freezer). Connections stay open
    /// and the kernel still accepts new ones, but nothing answers — what a client sees of a server that
    /// stalls or of a network partition that drops packets.
    pub fn pause(&self) -> Result<(), String> {
        on_container!(&self.running, |c| now(c.pause()))
            .map_err(|e| format!("pause the {} container: {e}", self.dialect))
    }

    /// Thaws a paused server.
    pub fn unpause(&self) -> Result<(), String> {
        on_container!(&self.running, |c| now(c.unpause()))
            .map_err(|e| format!("unpause the {} container: {e}", self.dialect))
    }

    /// The container's id (for `podman`/`docker` commands in a failure message).
    pub fn id(&self) -> String {
        on_container!(&self.running, |c| c.id().to_owned())
    }
}

/// The URL of `dialect`'s container shared by this process's tests, starting it on first use; the reason,
/// with its log, when it cannot start.
pub(crate) fn shared_url(dialect: Dialect) -> Result<String, String> {
    type Cell = OnceLock<Result<u16, String>>;
    static POSTGRES: Cell = OnceLock::new();
    static MARIADB: Cell = OnceLock::new();
    let cell = if dialect == Dialect::MySql {
        &MARIADB
    } else {
        &POSTGRES
    };
    let port = cell.get_or_init(|| {
        let (running, _) = run(dialect, false)?;
        let port = on_container!(&running, |c| c.get_host_port_ipv4(container_port(dialect)))
            .map_err(|e| format!("the {dialect} container's port: {e}"))?;
        shared()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(running);
        eprintln!(
            "tandem-test-support: {} in a container at 127.0.0.1:{port}",
            crate::harness::server_name(dialect)
        );
        Ok(port)
    });
    port.clone().map(|port| url(dialect, port))
}

/// Removes the containers this process shared between its tests. The harness calls it before the process
/// exits (statics are never dropped, and a container outlives the process that started it).
pub(crate) fn remove_shared() {
    let running = std::mem::take(&mut *shared().lock().unwrap_or_else(|e| e.into_inner()));
    drop(running);
}

/// The shared containers, kept alive until [`remove_shared`].
fn shared() -> &'static Mutex<Vec<Running>> {
    static SHARED: Mutex<Vec<Running>> = Mutex::new(Vec::new());
    &SHARED
}

fn url(dialect: Dialect, port: u16) -> String {
    match dialect {
        Dialect::MySql => format!("mysql://root@127.0.0.1:{port}/test"),
        _ => format!("postgres://postgres@127.0.0.1:{port}/test"),
    }
}

fn container_port(dialect: Dialect) -> u16 {
    if dialect == Dialect::MySql {
        3306
    } else {
        5432
    }
}

/// Starts a container of `dialect` with its port published on 127.0.0.1 — on a port picked here and
/// returned (`pick_port`: a server that must come back on the same port after a restart), or on one the
/// engine picks — after removing the containers of processes that are gone.
fn run(dialect: Dialect, pick_port: bool) -> Result<(Running, Option<u16>), String> {
    remove_orphans();
    let log = Arc::new(Mutex::new(VecDeque::<String>::new()));
    let failed = |e: &dyn std::fmt::Display| {
        let lines = log.lock().unwrap_or_else(|e| e.into_inner());
        let tail: Vec<&str> = lines.iter().map(String::as_str).collect();
        format!(
            "cannot start {} in a container: {e}\n  its log (last {} lines):\n    {}",
            crate::harness::server_name(dialect),
            tail.len(),
            tail.join("\n    ")
        )
    };
    let mut attempt = 1;
    loop {
        let host_port = if pick_port {
            Some(free_port().map_err(|e| format!("no free port on 127.0.0.1: {e}"))?)
        } else {
            None
        };
        let started = match dialect {
            Dialect::MySql => configure(Mariadb::default(), "10.11", dialect, host_port, &log)
                .with_cmd(MARIADB_ARGS)
                .start()
                .map(Running::Mariadb),
            _ => configure(
                Postgres::default().with_db_name("test").with_host_auth(),
                "15",
                dialect,
                host_port,
                &log,
            )
            .with_cmd(POSTGRES_ARGS)
            .start()
            .map(Running::Postgres),
        };
        match started {
            // The engine created the container and then failed to start it, before the server ran at all:
            // a port picked here can be taken by another process (any outgoing connection's ephemeral port)
            // before the engine binds it. A fresh container, on a fresh port, is tried again; an engine
            // that cannot start containers at all fails every attempt, and that error is reported. (The
            // one left created is removed with this process's orphans by a later run.) A server that
            // starts and then fails is never retried: its log is the error.
            Err(TestcontainersError::Client(ClientError::StartContainer(e)))
                if attempt < START_ATTEMPTS =>
            {
                eprintln!(
                    "{}: the container engine did not start the container ({e}); trying a new one",
                    crate::harness::server_name(dialect)
                );
                attempt += 1;
                std::thread::sleep(Duration::from_secs(1));
            }
            other => return other.map(|r| (r, host_port)).map_err(|e| failed(&e)),
        }
    }
}

/// The request every container shares: the tag, the label, the log kept for a failure message, the port
/// on 127.0.0.1 only (testcontainers would publish it on every address).
fn configure<I: Image>(
    image: I,
    tag: &str,
    dialect: Dialect,
    host_port: Option<u16>,
    log: &Arc<Mutex<VecDeque<String>>>,
) -> ContainerRequest<I> {
    let kept = Arc::clone(log);
    let port = container_port(dialect);
    image
        .with_tag(tag)
        .with_label(PID_LABEL, std::process::id().to_string())
        .with_startup_timeout(STARTUP)
        .with_log_consumer(move |frame: &LogFrame| {
            let bytes = match frame {
                LogFrame::StdOut(b) | LogFrame::StdErr(b) => b,
            };
            let mut lines = kept.lock().unwrap_or_else(|e| e.into_inner());
            for line in String::from_utf8_lossy(bytes).lines() {
                if lines.len() == LOG_TAIL {
                    lines.pop_front();
                }
                lines.push_back(line.to_owned());
            }
        })
        .with_host_config_modifier(move |host: &mut HostConfig| {
            host.publish_all_ports = Some(false);
            host.port_bindings = Some(
                [(
                    format!("{port}/tcp"),
                    Some(vec![PortBinding {
                        host_ip: Some("127.0.0.1".into()),
                        host_port: host_port.map(|p| p.to_string()),
                    }]),
                )]
                .into(),
            );
        })
}

/// A port of 127.0.0.1 free now (the engine binds it a moment later; another process taking it in between
/// makes the start fail, and says so).
fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// Removes containers labelled with the id of a process that no longer runs: a test run killed before its
/// harness could remove them. Best effort: a failure here is not the test's.
fn remove_orphans() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        runtime.block_on(async {
            use testcontainers_modules::testcontainers::bollard::Docker;
            use testcontainers_modules::testcontainers::bollard::query_parameters::{
                ListContainersOptionsBuilder, RemoveContainerOptionsBuilder,
            };
            let Ok(docker) = Docker::connect_with_defaults() else {
                return;
            };
            let filters = [("label", vec![PID_LABEL])].into();
            let list = ListContainersOptionsBuilder::default()
                .all(true)
                .filters(&filters)
                .build();
            let Ok(containers) = docker.list_containers(Some(list)).await else {
                return;
            };
            for c in containers {
                let pid = c.labels.as_ref().and_then(|l| l.get(PID_LABEL));
                let gone =
                    pid.is_some_and(|p| !std::path::Path::new(&format!("/proc/{p}")).exists());
                if let (true, Some(id)) = (gone, c.id.as_deref()) {
                    let remove = RemoveContainerOptionsBuilder::default()
                        .force(true)
                        .v(true)
                        .build();
                    let _ = docker.remove_container(id, Some(remove)).await;
                }
            }
        });
    });
}

/// The value of one of testcontainers' sync-container futures. `pause` and `unpause` are `async fn`s on
/// the *sync* container that block on its own runtime inside, so they are done at their first poll; they
/// cannot be awaited on a tokio runtime of ours (a runtime inside a runtime), hence a poll with a no-op
/// waker.
fn now<T>(f: impl Future<Output = T>) -> T {
    let mut f = std::pin::pin!(f);
    match f
        .as_mut()
        .poll(&mut std::task::Context::from_waker(std::task::Waker::noop()))
    {
        std::task::Poll::Ready(v) => v,
        std::task::Poll::Pending => {
            unreachable!("a sync container's future blocks until it is done")
        }
    }
}
