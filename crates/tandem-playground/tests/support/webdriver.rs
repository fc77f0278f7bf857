//! Just enough of the W3C WebDriver protocol to drive Debian's Chromium through chromedriver: sessions,
//! navigation, elements, keys, scripts, screenshots. Plain HTTP/1.1 over a `TcpStream`, JSON through
//! serde_json; nothing is downloaded.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A chromedriver process and one browser session in it; both end when this is dropped.
pub struct Browser {
    port: u16,
    session: String,
    driver: Child,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn http(port: u16, method: &str, path: &str, body: Option<&Value>) -> std::io::Result<Value> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    // Read the head, then exactly Content-Length bytes: chromedriver may keep the connection open.
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    let head_end = loop {
        let n = s.read(&mut buf)?;
        if n == 0 {
            return Err(std::io::Error::other(
                "connection closed before the response",
            ));
        }
        raw.extend_from_slice(&buf[..n]);
        if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&raw[..head_end]).to_ascii_lowercase();
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    while raw.len() < head_end + length {
        let n = s.read(&mut buf)?;
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&buf[..n]);
    }
    let body = &raw[head_end..(head_end + length).min(raw.len())];
    serde_json::from_slice(body)
        .map_err(|e| std::io::Error::other(format!("{e}: {}", String::from_utf8_lossy(&raw))))
}

impl Browser {
    /// Starts chromedriver and a headless Chromium session (flags as this machine's browser needs them:
    /// no sandbox as root, no background networking on a closed network).
    pub fn start(chromedriver: &str, chromium: &str) -> Result<Browser, String> {
        let port = free_port();
        let driver = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start {chromedriver}: {e}"))?;
        let deadline = Instant::now() + Duration::from_secs(20);
        while http(port, "GET", "/status", None).is_err() {
            if Instant::now() > deadline {
                return Err("chromedriver did not answer".into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let profile = std::env::temp_dir().join(format!("tandem-chromium-{}", std::process::id()));
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                         "--disable-background-networking", "--disable-component-update", "--disable-sync",
                         "--window-size=1400,1300", format!("--user-data-dir={}", profile.display())]
            }
        }}});
        let mut b = Browser {
            port,
            session: String::new(),
            driver,
        };
        let v = http(port, "POST", "/session", Some(&caps)).map_err(|e| e.to_string())?;
        b.session = v["value"]["sessionId"]
            .as_str()
            .ok_or_else(|| format!("no session: {v}"))?
            .to_owned();
        Ok(b)
    }

    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let v = http(
            self.port,
            method,
            &format!("/session/{}{path}", self.session),
            body.as_ref(),
        )
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        if v["value"].get("error").is_some() {
            panic!("{method} {path}: {}", v["value"]);
        }
        v["value"].clone()
    }

    /// Opens a URL.
    pub fn goto(&self, url: &str) {
        self.call("POST", "/url", Some(json!({ "url": url })));
    }

    /// Runs a script (its `return` value comes back).
    pub fn script(&self, js: &str) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            Some(json!({ "script": js, "args": [] })),
        )
    }

    /// Waits (up to 20 s) until the script returns true.
    pub fn wait_for(&self, js: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.script(js) != Value::Bool(true) {
            assert!(Instant::now() < deadline, "timed out waiting for: {js}");
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    fn element(&self, css: &str) -> String {
        let v = self.call(
            "POST",
            "/element",
            Some(json!({ "using": "css selector", "value": css })),
        );
        v.as_object()
            .and_then(|o| o.values().next())
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("no element {css}"))
            .to_owned()
    }

    /// Clears a text field and types into it, key by key, as a person would.
    pub fn type_into(&self, css: &str, text: &str) {
        let id = self.element(css);
        self.call("POST", &format!("/element/{id}/clear"), Some(json!({})));
        self.call(
            "POST",
            &format!("/element/{id}/value"),
            Some(json!({ "text": text })),
        );
    }

    /// Clicks an element.
    pub fn click(&self, css: &str) {
        let id = self.element(css);
        self.call("POST", &format!("/element/{id}/click"), Some(json!({})));
    }

    /// An element's visible text.
    pub fn text(&self, css: &str) -> String {
        let id = self.element(css);
        self.call("GET", &format!("/element/{id}/text"), None)
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// A PNG of the window.
    pub fn screenshot(&self) -> Vec<u8> {
        let b64 = self.call("GET", "/screenshot", None);
        decode_base64(b64.as_str().unwrap_or_default())
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = http(
            self.port,
            "DELETE",
            &format!("/session/{}", self.session),
            None,
        );
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// Standard base64 (what WebDriver screenshots are).
pub fn decode_base64(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for v in s.bytes().filter_map(val) {
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}
