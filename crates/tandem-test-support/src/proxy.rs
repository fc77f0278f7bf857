//! A TCP proxy in front of a server, for tests that must see or shape the connections a pool makes.

use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A proxy listening on `127.0.0.1:port`.
pub struct Proxy {
    /// The port to connect to instead of the server's.
    pub port: u16,
    accepted: Arc<AtomicUsize>,
}

impl Proxy {
    /// Connections accepted so far.
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

/// Starts a proxy to `upstream` (`host:port`). Connection number `i` (from 0) is forwarded when
/// `forward(i)`; otherwise it is accepted and held without a word, as a server that never answers.
pub fn start(upstream: &str, forward: impl Fn(usize) -> bool + Send + 'static) -> Proxy {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a local port");
    let port = listener.local_addr().expect("its address").port();
    let upstream = upstream.to_owned();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counted = accepted.clone();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for client in listener.incoming().flatten() {
            let i = counted.fetch_add(1, Ordering::SeqCst);
            if !forward(i) {
                held.push(client);
                continue;
            }
            let Ok(server) = TcpStream::connect(&upstream) else {
                continue;
            };
            let (Ok(client_in), Ok(server_in)) = (client.try_clone(), server.try_clone()) else {
                continue;
            };
            for (mut from, mut to) in [(client_in, server_in), (server, client)] {
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from, &mut to);
                    let _ = to.shutdown(Shutdown::Both);
                });
            }
        }
    });
    Proxy { port, accepted }
}
