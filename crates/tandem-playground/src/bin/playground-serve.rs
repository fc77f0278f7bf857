//! Serves the built playground: `playground-serve <dir> [addr]` (default 127.0.0.1:8000).

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
    match tandem_playground::serve::start(dir.into(), &addr) {
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
