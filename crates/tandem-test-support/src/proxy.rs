//! A TCP proxy in front of a server, for tests that must see or shape the connections a pool makes, or
//! see a server vanish ([`Proxy::cut`]: as a node dying, for this client) or fall silent
//! ([`Proxy::silence`]: as a frozen server or a partition, for this client).

use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
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
}

impl Proxy {
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
    let listener = TcpListener::bind("127.0.0.1:0").expect("a local port");
    let port = listener.local_addr().expect("its address").port();
    let upstream = upstream.to_owned();
    let accepted = Arc::new(AtomicUsize::new(0));
    let cut = Arc::new(AtomicBool::new(false));
    let silent = Arc::new(AtomicBool::new(false));
    let sockets = Arc::new(Mutex::new(Vec::new()));
    let (counted, stop, kept) = (accepted.clone(), cut.clone(), sockets.clone());
    let quiet = silent.clone();
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
            for (from, to) in [(client_in, server_in), (server, client)] {
                let quiet = quiet.clone();
                std::thread::spawn(move || relay(from, to, &quiet));
            }
        }
    });
    Proxy {
        port,
        accepted,
        cut,
        silent,
        sockets,
    }
}

/// Copies `from` to `to` until either closes, dropping what arrives once `quiet` is set.
fn relay(mut from: TcpStream, mut to: TcpStream, quiet: &AtomicBool) {
    use std::io::{Read, Write};
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if !quiet.load(Ordering::SeqCst) && to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    if !quiet.load(Ordering::SeqCst) {
        let _ = to.shutdown(Shutdown::Both);
    }
}
