//! Shared by the HTTP tests: a seeded database, tokens made with the real `cmp-mcp token` command, a
//! real `cmp-mcp serve` on 127.0.0.1 (port chosen by the OS), and a small HTTP/1.1 client over
//! `TcpStream` (one connection per request, `Connection: close`).

#![allow(dead_code)]

use rusqlite::Connection;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

pub const BIN: &str = env!("CARGO_BIN_EXE_cmp-mcp");

pub fn open(db: &Path) -> Connection {
    let conn = Connection::open(db).expect("open db");
    cmp::register(&conn).expect("register");
    conn.query_row("SELECT cmp_init()", [], |_| Ok(())).expect("cmp_init");
    conn
}

/// Hand-written memories in scope `default`, some Atlas filler, and two memories in scope `finance`.
/// Returns (default ids, finance ids).
pub fn seed(db: &Path) -> (Vec<String>, Vec<String>) {
    let conn = open(db);
    let insert = |content: &str, kind: &str, entities: &str, scope: &str| -> String {
        conn.query_row(
            "INSERT INTO cmp_memories(content, kind, entities, scope) VALUES (?1, ?2, ?3, ?4) RETURNING id",
            rusqlite::params![content, kind, entities, scope],
            |r| r.get(0),
        )
        .expect("insert")
    };
    let default = vec![
        insert(
            "Never deploy Atlas on a Friday: the on-call rota is thin at weekends.",
            "negative",
            r#"["Atlas"]"#,
            "default",
        ),
        insert(
            "Atlas launches on 1 July 2026; the web workstream owns the marketing site.",
            "decision",
            r#"["Atlas"]"#,
            "default",
        ),
        insert("Dana leads the Atlas mobile workstream.", "semantic", r#"["Atlas","Dana"]"#, "default"),
    ];
    for i in 0..10 {
        insert(
            &format!(
                "Atlas launch readiness note {i}: checklist item {i} covers rollout step {i} and the rollback drill."
            ),
            "semantic",
            r#"["Atlas"]"#,
            "default",
        );
    }
    let finance = vec![
        insert("The Atlas budget is two million euros (FINANCE-SECRET).", "semantic", r#"["Atlas"]"#, "finance"),
        insert(
            "Atlas launch costs are reviewed by Omar every quarter (FINANCE-SECRET).",
            "semantic",
            r#"["Atlas","Omar"]"#,
            "finance",
        ),
    ];
    (default, finance)
}

/// Runs `cmp-mcp token …`; returns stdout (trimmed), panicking on failure.
pub fn token_cmd(db: &Path, args: &[&str]) -> String {
    let out = Command::new(BIN).arg("token").args(args).arg("--db").arg(db).output().expect("run cmp-mcp token");
    assert!(out.status.success(), "token {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8").trim().to_string()
}

/// A new token for `scope`.
pub fn token(db: &Path, scope: &str, read_only: bool) -> String {
    let mut args = vec!["create", "--scope", scope];
    if read_only {
        args.push("--read-only");
    }
    let t = token_cmd(db, &args);
    assert!(t.starts_with("cmpt_"), "{t}");
    t
}

/// A running `cmp-mcp serve`, killed on drop.
pub struct Server {
    child: Child,
    pub addr: SocketAddr,
    /// Everything the server wrote to stderr after its listening line.
    log: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Server {
    pub fn start(db: &Path, extra: &[&str]) -> Server {
        let mut child = Command::new(BIN)
            .args(["serve", "--listen", "127.0.0.1:0", "--db"])
            .arg(db)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn cmp-mcp serve");
        let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let addr = loop {
            let line = lines.next().expect("cmp-mcp serve exited before listening").expect("read stderr");
            if let Some(rest) = line.split("listening on http://").nth(1) {
                break rest.split_whitespace().next().expect("address").parse().expect("socket address");
            }
        };
        let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let mut l = sink.lock().unwrap_or_else(|p| p.into_inner());
                l.push_str(&line);
                l.push('\n');
            }
        });
        Server { child, addr, log }
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// True while the process runs.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP response.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    /// The `{"error": …}` message.
    pub fn error(&self) -> String {
        self.json()["error"].as_str().unwrap_or_else(|| panic!("no error message: {}", self.body)).to_string()
    }

    /// The JSON-RPC messages of an SSE body (the `data:` lines that hold JSON).
    pub fn sse_messages(&self) -> Vec<Value> {
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .collect()
    }
}

fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = raw.windows(2).position(|w| w == b"\r\n") {
        let size_text = String::from_utf8_lossy(&raw[..eol]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16).unwrap_or(0);
        raw = &raw[eol + 2..];
        if size == 0 || raw.len() < size {
            out.extend_from_slice(&raw[..size.min(raw.len())]);
            break;
        }
        out.extend_from_slice(&raw[..size]);
        raw = &raw[(size + 2).min(raw.len())..];
    }
    out
}

/// Sends one request and reads the whole response.
pub fn request(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: Option<&[u8]>) -> Resp {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(120))).expect("timeout");
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(b) = body {
        head.push_str(&format!("Content-Length: {}\r\n", b.len()));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).expect("write head");
    if let Some(b) = body {
        // The server may answer (413) and close before reading a large body.
        let _ = s.write_all(b);
    }
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    parse(&raw)
}

pub fn parse(raw: &[u8]) -> Resp {
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap_or_else(|| {
        panic!("no HTTP head in {:?}", String::from_utf8_lossy(raw));
    });
    let head = String::from_utf8_lossy(&raw[..split]).to_string();
    let mut lines = head.lines();
    let status = lines.next().and_then(|l| l.split_whitespace().nth(1)).and_then(|c| c.parse().ok()).expect("status");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let rest = &raw[split + 4..];
    let chunked = headers.iter().any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked { dechunk(rest) } else { rest.to_vec() };
    Resp { status, headers, body: String::from_utf8_lossy(&body).to_string() }
}

/// The `Authorization` header for a token.
pub fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

pub fn get(addr: SocketAddr, path: &str, token: &str) -> Resp {
    let auth = bearer(token);
    request(addr, "GET", path, &[("Authorization", &auth)], None)
}

pub fn post(addr: SocketAddr, path: &str, token: &str, body: &Value) -> Resp {
    let auth = bearer(token);
    let b = body.to_string();
    request(addr, "POST", path, &[("Authorization", &auth), ("Content-Type", "application/json")], Some(b.as_bytes()))
}

/// Percent-encodes a query value.
pub fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A minimal MCP client over Streamable HTTP: POSTs JSON-RPC to /mcp and reads the SSE answer.
pub struct Mcp {
    pub addr: SocketAddr,
    pub token: String,
    pub session: Option<String>,
    next_id: i64,
}

impl Mcp {
    pub fn new(addr: SocketAddr, token: &str) -> Mcp {
        Mcp { addr, token: token.to_string(), session: None, next_id: 1 }
    }

    /// POSTs one JSON-RPC message; returns the raw response.
    pub fn post(&self, msg: &Value) -> Resp {
        let auth = bearer(&self.token);
        let mut headers = vec![
            ("Authorization", auth.as_str()),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
            ("MCP-Protocol-Version", "2025-06-18"),
        ];
        if let Some(s) = &self.session {
            headers.push(("Mcp-Session-Id", s));
        }
        let body = msg.to_string();
        request(self.addr, "POST", "/mcp", &headers, Some(body.as_bytes()))
    }

    /// A request; returns the JSON-RPC response message (result or error).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let r = self.post(&serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        assert_eq!(r.status, 200, "{method}: {r:?}");
        r.sse_messages()
            .into_iter()
            .find(|m| m.get("id") == Some(&serde_json::json!(id)))
            .unwrap_or_else(|| panic!("{method}: no answer in {}", r.body))
    }

    /// initialize + notifications/initialized; keeps the session id.
    pub fn initialize(&mut self) -> Value {
        let r = self.post(&serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "http-test", "version": "0"}}}));
        assert_eq!(r.status, 200, "{r:?}");
        self.session = Some(r.header("mcp-session-id").expect("Mcp-Session-Id").to_string());
        let init = r.sse_messages().into_iter().find(|m| m.get("id") == Some(&serde_json::json!(0))).expect("init");
        let n = self.post(&serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        assert_eq!(n.status, 202, "{n:?}");
        init
    }

    /// tools/call → (isError, text).
    pub fn call(&mut self, name: &str, args: Value) -> (bool, String) {
        let r = self.request("tools/call", serde_json::json!({"name": name, "arguments": args}));
        let result = r.get("result").unwrap_or_else(|| panic!("{name}: JSON-RPC error {r}"));
        let text = result["content"][0]["text"].as_str().expect("text").to_string();
        (result["isError"] == serde_json::json!(true), text)
    }

    pub fn ok(&mut self, name: &str, args: Value) -> Value {
        let (err, text) = self.call(name, args.clone());
        assert!(!err, "{name} {args} failed: {text}");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: not JSON ({e}): {text}"))
    }
}

/// `PRAGMA integrity_check` of the database.
pub fn integrity(db: &Path) -> String {
    Connection::open(db).expect("open").query_row("PRAGMA integrity_check", [], |r| r.get(0)).expect("integrity_check")
}
