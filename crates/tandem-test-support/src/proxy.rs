//! A TCP proxy in front of a server, for tests that must see or shape the connections a pool makes, or
//! see a server vanish ([`Proxy::cut`]: as a node dying, for this client) or fall silent
//! ([`Proxy::silence`]: as a frozen server or a partition, for this client), or count what goes through
//! ([`counting`]: round trips, statements and prepares, read off the wire protocol).

use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A proxy listening on `127.0.0.1:port`.
pub struct Proxy {
    /// The port to connect to instead of the server's.
    pub port: u16,
    accepted: Arc<AtomicUsize>,
    cut: Arc<AtomicBool>,
    silent: Arc<AtomicBool>,
    /// Every socket the proxy holds (both ends of forwarded connections, held ones).
    sockets: Arc<Mutex<Vec<TcpStream>>>,
    counts: Arc<Counts>,
}

/// The wire protocol a [`counting`] proxy reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    /// PostgreSQL's frontend/backend protocol 3.0.
    Postgres,
    /// The MySQL/MariaDB client/server protocol.
    MySql,
}

/// What clients sent through a [`counting`] proxy, since it started or since [`Proxy::take_traffic`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Traffic {
    /// Connections forwarded.
    pub connections: u64,
    /// Times a client sent something after hearing from the server: each a round trip it waited on
    /// (however many messages it sent at once). Connection handshakes included.
    pub round_trips: u64,
    /// Statements executed: PostgreSQL's simple queries and Execute messages; MySQL's `COM_QUERY` and
    /// `COM_STMT_EXECUTE`.
    pub statements: u64,
    /// Statements prepared: PostgreSQL's Parse messages; MySQL's `COM_STMT_PREPARE`.
    pub prepares: u64,
    /// The text of every simple query and prepare, in the order the proxy read them (connections
    /// interleaved).
    pub texts: Vec<String>,
}

#[derive(Default)]
struct Counts {
    wire: Option<Wire>,
    connections: AtomicU64,
    round_trips: AtomicU64,
    statements: AtomicU64,
    prepares: AtomicU64,
    texts: Mutex<Vec<String>>,
}

impl Proxy {
    /// What clients sent so far (zero unless the proxy was started by [`counting`]), and counting starts
    /// again from zero.
    pub fn take_traffic(&self) -> Traffic {
        let c = &self.counts;
        let take = |a: &AtomicU64| a.swap(0, Ordering::SeqCst);
        Traffic {
            connections: take(&c.connections),
            round_trips: take(&c.round_trips),
            statements: take(&c.statements),
            prepares: take(&c.prepares),
            texts: std::mem::take(&mut *c.texts.lock().unwrap()),
        }
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    /// From now on nothing goes through, either way, and nothing is closed: what the proxy receives it
    /// takes (so the sender's writes succeed) and drops, and new connections are accepted and held
    /// without a word — a frozen server, or one behind a partition, as its clients see it.
    pub fn silence(&self) {
        self.silent.store(true, Ordering::SeqCst);
    }

    /// Closes every connection through the proxy and stops listening: clients see their connections
    /// broken and new ones refused, as when the server's machine dies.
    pub fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        // Wakes the accept loop, which then closes the listener.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        for s in self.sockets.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
        // Until the loop has dropped the listener, a connect would still be accepted.
        while TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
}

/// Starts a proxy to `upstream` (`host:port`). Connection number `i` (from 0) is forwarded when
/// `forward(i)`; otherwise it is accepted and held without a word, as a server that never answers.
pub fn start(upstream: &str, forward: impl Fn(usize) -> bool + Send + 'static) -> Proxy {
    start_with(upstream, forward, Counts::default())
}

/// Starts a proxy to `upstream` that forwards every connection and counts, reading `wire`, the round
/// trips, statements and prepares its clients make ([`Proxy::take_traffic`]).
pub fn counting(upstream: &str, wire: Wire) -> Proxy {
    let counts = Counts {
        wire: Some(wire),
        ..Counts::default()
    };
    start_with(upstream, |_| true, counts)
}

fn start_with(
    upstream: &str,
    forward: impl Fn(usize) -> bool + Send + 'static,
    counts: Counts,
) -> Proxy {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a local port");
    let port = listener.local_addr().expect("its address").port();
    let upstream = upstream.to_owned();
    let accepted = Arc::new(AtomicUsize::new(0));
    let cut = Arc::new(AtomicBool::new(false));
    let silent = Arc::new(AtomicBool::new(false));
    let sockets = Arc::new(Mutex::new(Vec::new()));
    let (counted, stop, kept) = (accepted.clone(), cut.clone(), sockets.clone());
    let quiet = silent.clone();
    let counts = Arc::new(counts);
    let counter = counts.clone();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            if stop.load(Ordering::SeqCst) {
                let _ = client.shutdown(Shutdown::Both);
                break;
            }
            let i = counted.fetch_add(1, Ordering::SeqCst);
            if !forward(i) || quiet.load(Ordering::SeqCst) {
                kept.lock().unwrap().push(client);
                continue;
            }
            let Ok(server) = TcpStream::connect(&upstream) else {
                continue;
            };
            let (Ok(client_in), Ok(server_in)) = (client.try_clone(), server.try_clone()) else {
                continue;
            };
            {
                let mut kept = kept.lock().unwrap();
                if let (Ok(c), Ok(s)) = (client.try_clone(), server.try_clone()) {
                    kept.push(c);
                    kept.push(s);
                }
            }
            counter.connections.fetch_add(1, Ordering::SeqCst);
            // Whether the server has sent anything since the client last did: the client's next send
            // is then a new round trip. (The client speaks first on PostgreSQL: its first send counts.)
            let answered = Arc::new(AtomicBool::new(true));
            for (from, to, client_side) in [(client_in, server_in, true), (server, client, false)] {
                let (quiet, counter, answered) = (quiet.clone(), counter.clone(), answered.clone());
                std::thread::spawn(move || {
                    let mut reader = counter.wire.map(Reader::new);
                    relay(from, to, &quiet, |bytes| match client_side {
                        true => {
                            if answered.swap(false, Ordering::SeqCst) {
                                counter.round_trips.fetch_add(1, Ordering::SeqCst);
                            }
                            if let Some(r) = reader.as_mut() {
                                r.read(bytes, &counter);
                            }
                        }
                        false => answered.store(true, Ordering::SeqCst),
                    })
                });
            }
        }
    });
    Proxy {
        port,
        accepted,
        cut,
        silent,
        sockets,
        counts,
    }
}

/// Copies `from` to `to` until either closes, dropping what arrives once `quiet` is set; `seen` sees each
/// read before it is passed on.
fn relay(mut from: TcpStream, mut to: TcpStream, quiet: &AtomicBool, mut seen: impl FnMut(&[u8])) {
    use std::io::{Read, Write};
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        seen(&buf[..n]);
        if !quiet.load(Ordering::SeqCst) && to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    if !quiet.load(Ordering::SeqCst) {
        let _ = to.shutdown(Shutdown::Both);
    }
}

impl Counts {
    /// Keeps a statement's text (a PostgreSQL Parse's statement name, before a NUL, is left out).
    fn keep(&self, text: Vec<u8>) {
        let text = String::from_utf8_lossy(&text);
        let mut parts = text.split('\0').filter(|p| !p.is_empty());
        let text = match self.wire {
            Some(Wire::Postgres) if text.matches('\0').count() > 1 => {
                // Parse: name NUL query NUL types; the name may be empty.
                let mut fields = text.split('\0');
                let _name = fields.next();
                fields.next().unwrap_or_default().to_owned()
            }
            _ => parts.next().unwrap_or_default().to_owned(),
        };
        self.texts.lock().unwrap().push(text);
    }
}

/// Reads a client's side of the wire message by message, counting its statements and prepares.
struct Reader {
    wire: Wire,
    /// Bytes of the current message's header read so far.
    header: Vec<u8>,
    /// Bytes of the current message's body still to pass over.
    skip: usize,
    /// PostgreSQL: still in the untyped startup phase (a startup message, or an SSL / GSS request).
    startup: bool,
    /// The current message's text being read (a query or a prepare), and the bytes of it still to come.
    text: Option<(Vec<u8>, usize)>,
}

impl Reader {
    fn new(wire: Wire) -> Reader {
        Reader {
            wire,
            header: Vec::new(),
            skip: 0,
            startup: true,
            text: None,
        }
    }

    fn read(&mut self, mut bytes: &[u8], counts: &Counts) {
        while !bytes.is_empty() {
            if let Some((text, left)) = &mut self.text {
                let n = (*left).min(bytes.len());
                text.extend_from_slice(&bytes[..n]);
                *left -= n;
                bytes = &bytes[n..];
                if *left == 0 {
                    let (text, _) = self.text.take().unwrap();
                    counts.keep(text);
                }
                continue;
            }
            if self.skip > 0 {
                let n = self.skip.min(bytes.len());
                self.skip -= n;
                bytes = &bytes[n..];
                continue;
            }
            // PostgreSQL: type (1) + length (4, counting itself), or in the startup phase length (4) +
            // code (4); MySQL: length (3, little-endian) + sequence number (1) + the command's first byte.
            let want = match (self.wire, self.startup) {
                (Wire::Postgres, true) => 8,
                (Wire::Postgres, false) => 5,
                (Wire::MySql, _) => 5,
            };
            let n = (want - self.header.len()).min(bytes.len());
            self.header.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
            if self.header.len() < want {
                return;
            }
            let h = std::mem::take(&mut self.header);
            let count = |a: &AtomicU64| {
                a.fetch_add(1, Ordering::SeqCst);
            };
            match self.wire {
                Wire::Postgres if self.startup => {
                    let len = u32::from_be_bytes([h[0], h[1], h[2], h[3]]) as usize;
                    let code = u32::from_be_bytes([h[4], h[5], h[6], h[7]]);
                    // 80877103 / 80877104: SSL and GSS encryption requests, answered by one byte.
                    self.startup = matches!(code, 80_877_103 | 80_877_104);
                    self.skip = len.saturating_sub(8);
                }
                Wire::Postgres => {
                    let len = u32::from_be_bytes([h[1], h[2], h[3], h[4]]) as usize;
                    match h[0] {
                        b'Q' | b'E' => count(&counts.statements),
                        b'P' => count(&counts.prepares),
                        _ => {}
                    }
                    // A query's body is its text; a Parse's, the statement's name and then its text.
                    self.skip = len.saturating_sub(4);
                    if matches!(h[0], b'Q' | b'P') && self.skip > 0 {
                        self.text = Some((Vec::new(), std::mem::take(&mut self.skip)));
                    }
                }
                Wire::MySql => {
                    let len = u32::from_le_bytes([h[0], h[1], h[2], 0]) as usize;
                    // A command starts a new sequence; the handshake's reply and a command's
                    // continuation packets do not.
                    let command = (h[3] == 0 && len > 0).then_some(h[4]);
                    match command {
                        Some(0x03 | 0x17) => count(&counts.statements),
                        Some(0x16) => count(&counts.prepares),
                        _ => {}
                    }
                    // The header took the body's first byte (an empty body: the next header's).
                    if len == 0 {
                        self.header.push(h[4]);
                    } else {
                        self.skip = len - 1;
                        if matches!(command, Some(0x03 | 0x16)) && self.skip > 0 {
                            self.text = Some((Vec::new(), std::mem::take(&mut self.skip)));
                        }
                    }
                }
            }
        }
    }
}
