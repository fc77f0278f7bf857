//! A static file server for the built page on 127.0.0.1, with the right types (browsers compile
//! WebAssembly as it streams in only when it is served as `application/wasm`). `just playground` runs it;
//! the browser test starts one of its own. Std only: it serves files, nothing else.

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

/// Serves `root` on `addr` (use port 0 for any free port) from a background thread; returns the address.
pub fn start(root: PathBuf, addr: &str) -> std::io::Result<SocketAddr> {
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
