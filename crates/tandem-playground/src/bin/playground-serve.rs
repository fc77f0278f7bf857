//! Serves the built playground: `playground-serve <dir> [addr]` (default 127.0.0.1:8000; port 0 for any
//! free port). The first line it prints names the address. A development tool, not part of the library:
//! `just playground` runs it and the browser test starts one of its own. Files only, with the types
//! browsers need (WebAssembly compiles as it streams in only when served as `application/wasm`).

#![cfg_attr(target_arch = "wasm32", allow(dead_code, unused_imports))]

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};

fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()) {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("wasm") => "application/wasm",
        Some("css") => "text/css; charset=utf-8",
        Some("json") => "application/json",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        _ => "application/octet-stream",
    }
}

/// The file a request path names under `root`, if it is there; `..` and absolute paths name nothing.
fn resolve(root: &Path, target: &str) -> Option<PathBuf> {
    let path = target.split(['?', '#']).next().unwrap_or("/");
    let mut out = root.to_path_buf();
    for part in Path::new(path.trim_start_matches('/')).components() {
        match part {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            _ => return None,
        }
    }
    if out.is_dir() {
        out.push("index.html");
    }
    out.is_file().then_some(out)
}

fn answer(root: &Path, stream: TcpStream) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request = String::new();
    reader.read_line(&mut request)?;
    // Skip the headers.
    let mut line = String::new();
    while reader.read_line(&mut line)? > 2 {
        line.clear();
    }
    let mut parts = request.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or("/"));
    let mut out = stream;
    match (method, resolve(root, target)) {
        ("GET" | "HEAD", Some(file)) => {
            let body = std::fs::read(&file)?;
            write!(
                out,
                "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nContent-Length: {}\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n",
                content_type(&file),
                body.len()
            )?;
            if method == "GET" {
                out.write_all(&body)?;
            }
        }
        _ => {
            // Said on stderr, so a page asking for a file it does not have is seen (the browser test
            // fails on any).
            eprintln!("playground-serve: 404 {method} {target}");
            let body = b"not found";
            write!(
                out,
                "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )?;
            out.write_all(body)?;
        }
    }
    out.flush()
}

/// Serves `root` on `addr` from a background thread; returns the address.
fn start(root: PathBuf, addr: &str) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr)?;
    let local = listener.local_addr()?;
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let root = root.clone();
            std::thread::spawn(move || {
                let _ = answer(&root, stream);
            });
        }
    });
    Ok(local)
}

/// Nothing to serve from inside a browser.
#[cfg(target_arch = "wasm32")]
fn main() {}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next() else {
        eprintln!("usage: playground-serve <dir> [127.0.0.1:8000]");
        std::process::exit(2);
    };
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:8000".into());
    match start(dir.into(), &addr) {
        Ok(at) => {
            println!("tandem playground on http://{at}/ (Ctrl+C to stop)");
            loop {
                std::thread::park();
            }
        }
        Err(e) => {
            eprintln!("playground-serve: cannot listen on {addr}: {e}");
            std::process::exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Paths stay under the root; directories serve their index.
    #[test]
    fn resolves_inside_the_root_only() {
        let root = std::env::temp_dir().join(format!("tandem-serve-{}", std::process::id()));
        std::fs::create_dir_all(root.join("pkg")).unwrap();
        std::fs::write(root.join("index.html"), "hi").unwrap();
        std::fs::write(root.join("pkg/a.wasm"), "w").unwrap();
        assert_eq!(resolve(&root, "/"), Some(root.join("index.html")));
        assert_eq!(
            resolve(&root, "/pkg/a.wasm?x=1"),
            Some(root.join("pkg/a.wasm"))
        );
        assert_eq!(resolve(&root, "/../etc/passwd"), None);
        assert_eq!(resolve(&root, "/missing"), None);
        assert_eq!(content_type(Path::new("a.wasm")), "application/wasm");
        std::fs::remove_dir_all(root).unwrap();
    }
}
