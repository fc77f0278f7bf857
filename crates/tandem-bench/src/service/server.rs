//! The service's server, one variant per process (`tandem-bench serve-world`, started by the scenario): the
//! async variants serve HTTP with axum on a tokio runtime of one worker per core; the blocking ones with a
//! thread per connection, up to a bound, on the standard library alone.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};

use super::app::{self, AsyncStore, BlockingStore, Request};
use super::stores::{RawAsync, RawBlocking, Sqlx, TandemAsync, TandemBlocking};

/// The service's variants: where the database calls run, on what.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// (a) tandem-async in the axum handlers.
    TandemAsync,
    /// (b) tandem-blocking in the axum handlers through `Database::run_blocking` (tokio's blocking pool).
    TandemBlockingRunBlocking,
    /// (c) tandem-blocking called straight in the async handlers: the anti-pattern.
    TandemBlockingOnEventLoop,
    /// (d) tandem-blocking on a server with a thread per connection.
    TandemBlockingThreads,
    /// tokio-postgres / mysql_async by hand in the axum handlers.
    RawAsync,
    /// sqlx by hand in the axum handlers.
    RawSqlx,
    /// The raw blocking driver by hand on the thread-per-connection server.
    RawThreads,
}

impl Variant {
    /// Every variant, in the order the results list them.
    pub const ALL: [Variant; 7] = [
        Variant::TandemAsync,
        Variant::RawAsync,
        Variant::RawSqlx,
        Variant::TandemBlockingRunBlocking,
        Variant::TandemBlockingOnEventLoop,
        Variant::TandemBlockingThreads,
        Variant::RawThreads,
    ];

    /// The name the results give it.
    pub fn name(self) -> &'static str {
        match self {
            Variant::TandemAsync => "tandem-async",
            Variant::TandemBlockingRunBlocking => "tandem-blocking via run_blocking",
            Variant::TandemBlockingOnEventLoop => "tandem-blocking on the event loop",
            Variant::TandemBlockingThreads => "tandem-blocking, thread per connection",
            Variant::RawAsync => "raw async driver",
            Variant::RawSqlx => "raw sqlx",
            Variant::RawThreads => "raw blocking driver, thread per connection",
        }
    }

    /// The spelling `serve-world --variant` takes.
    pub fn arg(self) -> String {
        use clap::ValueEnum as _;
        self.to_possible_value()
            .expect("no variant is skipped")
            .get_name()
            .to_owned()
    }
}

/// What the async server's handlers call.
trait Service: Send + Sync + 'static {
    fn answer(&self, r: Request) -> impl Future<Output = anyhow::Result<String>> + Send;
}

/// An async store in the handlers.
struct OnTasks<S>(S);

impl<S: AsyncStore> Service for OnTasks<S> {
    async fn answer(&self, r: Request) -> anyhow::Result<String> {
        app::answer(&self.0, r).await
    }
}

/// tandem-blocking in the handlers: each request's database work in one `run_blocking` call (the wait,
/// after it, on a timer), or — `on_loop` — straight on the runtime's worker thread.
struct Blocking {
    db: tandem_blocking::Database,
    on_loop: bool,
}

impl Service for Blocking {
    async fn answer(&self, r: Request) -> anyhow::Result<String> {
        let (work, wait) = match r {
            // No database work: no hop to a blocking thread either.
            Request::Ping => return Ok(app::PONG.into()),
            Request::Wait(d) => (Request::Db, Some(d)),
            r => (r, None),
        };
        let body = if self.on_loop {
            app::answer_blocking(&TandemBlocking(self.db.clone()), work)?
        } else {
            self.db
                .run_blocking(move |db| Ok(app::answer_blocking(&TandemBlocking(db.clone()), work)))
                .await??
        };
        if let Some(d) = wait {
            tokio::time::sleep(d).await;
        }
        Ok(body)
    }
}

async fn handle<S: Service>(
    axum::extract::State(service): axum::extract::State<Arc<S>>,
    uri: axum::http::Uri,
) -> axum::response::Response {
    use axum::http::{StatusCode, header};
    use axum::response::IntoResponse as _;
    let target = uri.path_and_query().map_or("/", |p| p.as_str());
    let Some(request) = Request::parse(target) else {
        return (StatusCode::NOT_FOUND, format!("no such path: {target}")).into_response();
    };
    match service.answer(request).await {
        Ok(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, format!("{e:#}")).into_response(),
    }
}

fn serve_async<S: Service>(
    rt: &tokio::runtime::Runtime,
    listener: TcpListener,
    service: S,
) -> anyhow::Result<()> {
    // Non-blocking, as tokio needs it: a blocking accept would hold a worker thread until the next
    // connection, which under a benchmark's fixed set of connections never comes.
    listener.set_nonblocking(true)?;
    rt.block_on(async {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let router = axum::Router::new()
            .fallback(handle::<S>)
            .with_state(Arc::new(service));
        axum::serve(listener, router).await?;
        Ok(())
    })
}

/// What `serve-world` is told.
#[derive(clap::Args, Debug, Clone)]
pub struct ServeArgs {
    /// Which server.
    #[arg(long, value_enum)]
    pub variant: Variant,
    /// The database.
    #[arg(long)]
    pub url: String,
    /// Database connections.
    #[arg(long, default_value_t = 16)]
    pub pool: u32,
    /// Threads of the thread-per-connection server: past them, connections wait to be accepted.
    #[arg(long, default_value_t = 8_192)]
    pub max_threads: usize,
}

/// A listener on a free loopback port with a backlog for thousands of connections at once (the standard
/// library's `bind` asks for 128); its address is printed as `listening <addr>` for the scenario to read.
pub fn listen() -> anyhow::Result<TcpListener> {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None)?;
    socket.set_reuse_address(true)?;
    socket.bind(&std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into())?;
    socket.listen(8_192)?;
    Ok(socket.into())
}

/// Serves until the scenario closes this process's stdin.
pub fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let listener = listen()?;
    // Gone with the scenario: its end (or its crash) closes the pipe.
    std::thread::spawn(|| {
        let _ = std::io::stdin().lock().read_line(&mut String::new());
        std::process::exit(0);
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(std::thread::available_parallelism().map_or(2, |n| n.get()))
        .enable_all()
        .build()?;
    // As many acquires may wait as the load has requests (the default sheds past 1,000 with a typed error):
    // every variant queues the same way, so what differs is the execution model.
    let config = tandem_blocking::PoolConfig {
        max_size: args.pool,
        max_pending: Some(16_384),
        ..tandem_blocking::PoolConfig::default()
    };
    let n = args.pool as usize;
    let url = args.url.as_str();
    let announce = |l: &TcpListener| -> anyhow::Result<()> {
        println!("listening {}", l.local_addr()?);
        std::io::stdout().flush()?;
        Ok(())
    };
    match args.variant {
        Variant::TandemAsync => {
            let db = rt.block_on(tandem_async::Database::connect_with(url, config))?;
            announce(&listener)?;
            serve_async(&rt, listener, OnTasks(TandemAsync(db)))
        }
        Variant::RawAsync => {
            let store = rt
                .block_on(RawAsync::connect(url, n))?
                .ok_or_else(|| anyhow::anyhow!("{url}: no async driver of its own"))?;
            announce(&listener)?;
            serve_async(&rt, listener, OnTasks(store))
        }
        Variant::RawSqlx => {
            let store = rt.block_on(Sqlx::connect(url, args.pool))?;
            announce(&listener)?;
            serve_async(&rt, listener, OnTasks(store))
        }
        Variant::TandemBlockingRunBlocking | Variant::TandemBlockingOnEventLoop => {
            let db = tandem_blocking::Database::connect_with(url, config)?;
            announce(&listener)?;
            let on_loop = args.variant == Variant::TandemBlockingOnEventLoop;
            serve_async(&rt, listener, Blocking { db, on_loop })
        }
        Variant::TandemBlockingThreads => {
            let store = TandemBlocking(tandem_blocking::Database::connect_with(url, config)?);
            announce(&listener)?;
            serve_threads(listener, Arc::new(store), args.max_threads)
        }
        Variant::RawThreads => {
            let store = RawBlocking::connect(url, n)?;
            announce(&listener)?;
            serve_threads(listener, Arc::new(store), args.max_threads)
        }
    }
}

/// A thread per connection, at most `max` at once: past them the acceptor waits for one to end, and new
/// connections wait in the kernel's accept queue, unanswered.
fn serve_threads<S: BlockingStore>(
    listener: TcpListener,
    store: Arc<S>,
    max: usize,
) -> anyhow::Result<()> {
    let live = Arc::new((Mutex::new(0usize), Condvar::new()));
    loop {
        {
            let (count, ended) = &*live;
            let mut n = count.lock().expect("no panics under the lock");
            while *n >= max {
                n = ended.wait(n).expect("no panics under the lock");
            }
            *n += 1;
        }
        let (stream, _) = listener.accept()?;
        let (store, gate) = (store.clone(), live.clone());
        let spawned = std::thread::Builder::new()
            .name("conn".into())
            .spawn(move || {
                let _ = connection(stream, &*store);
                let (count, ended) = &*gate;
                *count.lock().expect("no panics under the lock") -= 1;
                ended.notify_one();
            });
        if let Err(e) = spawned {
            eprintln!("serve-world: no thread for a connection: {e}");
            let (count, _) = &*live;
            *count.lock().expect("no panics under the lock") -= 1;
        }
    }
}

/// HTTP/1.1 on one connection, kept alive: GET requests, each answered in order.
fn connection<S: BlockingStore>(stream: TcpStream, store: &S) -> anyhow::Result<()> {
    stream.set_nodelay(true)?;
    let mut out = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let target = line.split(' ').nth(1).unwrap_or("/").to_owned();
        // The headers: nothing in them changes the answer (no bodies, keep-alive by default).
        loop {
            line.clear();
            if reader.read_line(&mut line)? == 0 {
                return Ok(());
            }
            if line == "\r\n" || line == "\n" {
                break;
            }
        }
        let (status, body) = match Request::parse(&target) {
            None => ("404 Not Found", format!("no such path: {target}")),
            Some(r) => match app::answer_blocking(store, r) {
                Ok(body) => ("200 OK", body),
                Err(e) => ("500 Internal Server Error", format!("{e:#}")),
            },
        };
        // One write, one segment.
        let response = format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        out.write_all(response.as_bytes())?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::app::{World, stored};
    use crate::service::load::{self, Load};

    /// A store with no database: rows as seeded, or each one off by one (`wrong`).
    #[derive(Clone, Copy)]
    struct Fake {
        wrong: bool,
    }

    impl Fake {
        fn world(self, id: i32) -> World {
            World {
                id,
                randomnumber: stored(id) + i32::from(self.wrong),
            }
        }
    }

    impl BlockingStore for Fake {
        fn row(&self, id: i32) -> anyhow::Result<World> {
            Ok(self.world(id))
        }
        fn update(&self, _: World) -> anyhow::Result<()> {
            Ok(())
        }
    }

    impl AsyncStore for Fake {
        async fn row(&self, id: i32) -> anyhow::Result<World> {
            Ok(self.world(id))
        }
        async fn update(&self, _: World) -> anyhow::Result<()> {
            Ok(())
        }
    }

    /// Both servers, started on a free port in a thread of their own; the address.
    fn start(threads: bool, store: Fake) -> std::net::SocketAddr {
        let listener = listen().unwrap();
        let addr = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            if threads {
                serve_threads(listener, Arc::new(store), 64)
            } else {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                serve_async(&rt, listener, OnTasks(store))
            }
        });
        addr
    }

    fn load(addr: std::net::SocketAddr, target: &'static str) -> anyhow::Result<load::Outcome> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let load = Load {
            target,
            conns: 4,
            window: std::time::Duration::from_millis(200),
            rate: None,
            probes: 1,
        };
        rt.block_on(load::run(addr, &load, || {}))
    }

    /// Each server answers every test type as TechEmpower's rules say, the load generator checks every
    /// answer, and a server that answers with a row not as stored fails the run.
    #[test]
    fn both_servers_answer_and_wrong_answers_fail_the_run() {
        for threads in [false, true] {
            let addr = start(threads, Fake { wrong: false });
            for target in ["/ping", "/db", "/queries?q=3", "/updates?q=2", "/wait?ms=5"] {
                let out = load(addr, target).unwrap();
                assert!(
                    out.ok > 0,
                    "{target}: nothing answered ({} errors: {:?})",
                    out.errors,
                    out.first_error
                );
                assert_eq!(out.errors, 0, "{target}: {:?}", out.first_error);
                assert!(
                    out.probe.len() > 0,
                    "{target}: the /ping probe was not answered"
                );
                if target.starts_with("/updates") {
                    assert_eq!(out.written.len() as u64, 2 * out.ok, "{target}");
                }
            }
            let unknown = load(addr, "/nowhere").unwrap();
            assert_eq!(unknown.ok, 0);
            assert!(unknown.errors > 0 && unknown.first_error.unwrap().contains("404"));
            let wrong = start(threads, Fake { wrong: true });
            let e = load(wrong, "/db")
                .err()
                .expect("a wrong row must fail the run");
            assert!(format!("{e:#}").contains("not as stored"), "{e:#}");
        }
    }
}
