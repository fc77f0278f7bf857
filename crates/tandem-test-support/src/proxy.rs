//! A TCP proxy in front of a server, for tests that must see or shape the connections a pool makes, or
//! see a server vanish ([`Proxy::cut`]: as a node dying, for this client).

use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// A proxy listening on `127.0.0.1:port`.
pub struct Proxy {
    /// The port to connect to instead of the server's.
    pub port: u16,
    accepted: Arc<AtomicUsize>,
    cut: Arc<AtomicBool>,
    /// Every socket the proxy holds (both ends of forwarded connections, held ones).
    sockets: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    /// Connections accepted so far.
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
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
    let sockets = Arc::new(Mutex::new(Vec::new()));
    let (counted, stop, kept) = (accepted.clone(), cut.clone(), sockets.clone());
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            if stop.load(Ordering::SeqCst) {
                let _ = client.shutdown(Shutdown::Both);
                break;
            }
            let i = counted.fetch_add(1, Ordering::SeqCst);
            if !forward(i) {
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
            for (mut from, mut to) in [(client_in, server_in), (server, client)] {
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from, &mut to);
                    let _ = to.shutdown(Shutdown::Both);
                });
            }
        }
    });
    Proxy {
        port,
        accepted,
        cut,
        sockets,
    }
}
