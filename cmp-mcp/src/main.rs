//! `cmp-mcp`: gives AI clients (Claude Desktop, ChatGPT connectors, Cursor, any MCP client or HTTP
//! agent) the cmp memory store as tools: get_context, query_memory, expand, remember, search, fetch.
//! Over stdio by default (`cmp-mcp --db PATH`), over HTTP with `cmp-mcp serve` (MCP Streamable HTTP
//! and `/v1/context`), behind bearer tokens managed by `cmp-mcp token`. See README.md.

mod db;
mod http;
mod server;
mod tokens;
mod tools;

use rmcp::ServiceExt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

const USAGE: &str = "\
usage: cmp-mcp --db PATH [--scope SCOPE]
       cmp-mcp serve --db PATH --listen ADDR:PORT [limits]
       cmp-mcp token create --db PATH --scope SCOPE [--read-only] [--label TEXT]
       cmp-mcp token list --db PATH
       cmp-mcp token revoke --db PATH ID

Serves the cmp memory database at PATH to MCP clients.
  (no command)    MCP over stdio (JSON-RPC on stdin/stdout); every call is confined to --scope
                  (default: default)
  serve           MCP over Streamable HTTP at /mcp, plus GET|POST /v1/context, GET /v1/expand,
                  POST /v1/query and POST /v1/tools/call; every request needs a bearer token, whose
                  scope it is confined to. A non-loopback ADDR is refused while no token exists.
                  limits: --max-body-bytes N (default 262144), --max-text-bytes N (longest task,
                  query or memory; default 16384), --max-concurrent N (requests in flight; default
                  32), --timeout-secs N (per request; default 30), --header-timeout-secs N (to send
                  a request's head, and idle between requests; default 10), --max-connections N
                  (open at once, more are closed at once; default 256, keep it above
                  --max-concurrent), --max-sessions N (live MCP sessions; default 1024),
                  --allowed-host NAME (a Host name MCP requests may carry
                  besides the loopback ones, and a browser Origin may name; repeatable)
  token create    prints a new token once (only its hash is stored); --read-only refuses remember
  token list      id, scope, access, label, created and revoked times (never a secret)
  token revoke    revokes a token by id (or the token itself); takes effect on the next request
  --db PATH       SQLite database (created, and the cmp schema applied, if missing)
  -h, --help      this text
  -V, --version   the version";

/// What the command line asks for.
#[derive(Debug, PartialEq)]
enum Cli {
    Stdio { db: PathBuf, scope: String },
    Serve { db: PathBuf, cfg: http::Config },
    TokenCreate { db: PathBuf, scope: String, read_only: bool, label: Option<String> },
    TokenList { db: PathBuf },
    TokenRevoke { db: PathBuf, id: String },
    Help,
    Version,
}

/// Longest `--timeout-secs` and `--header-timeout-secs`: a day.
const MAX_SECS: usize = 86_400;
/// Most `--max-connections`.
const MAX_CONNECTIONS: usize = 1_000_000;

/// Flags and positional words of one command line.
#[derive(Default)]
struct Flags {
    values: Vec<(String, String)>,
    switches: Vec<String>,
    words: Vec<String>,
}

impl Flags {
    fn parse(mut it: impl Iterator<Item = String>, switches: &[&str]) -> Result<Flags, String> {
        let mut f = Flags::default();
        while let Some(a) = it.next() {
            if !a.starts_with("--") {
                f.words.push(a);
                continue;
            }
            let (flag, inline) = match a.split_once('=') {
                Some((fl, v)) => (fl.to_string(), Some(v.to_string())),
                None => (a.clone(), None),
            };
            if switches.contains(&flag.as_str()) {
                if inline.is_some() {
                    return Err(format!("{flag} takes no value"));
                }
                f.switches.push(flag);
                continue;
            }
            let v = inline.or_else(|| it.next()).ok_or(format!("{flag} needs a value"))?;
            f.values.push((flag, v));
        }
        Ok(f)
    }

    /// Refuses any flag not in `known`.
    fn only(&self, known: &[&str]) -> Result<(), String> {
        match self.values.iter().map(|(k, _)| k).chain(&self.switches).find(|k| !known.contains(&k.as_str())) {
            Some(k) => Err(format!("unknown argument {k:?}")),
            None => Ok(()),
        }
    }

    fn one(&self, name: &str) -> Result<Option<String>, String> {
        let mut it = self.values.iter().filter(|(k, _)| k == name).map(|(_, v)| v.clone());
        let first = it.next();
        if it.next().is_some() {
            return Err(format!("{name} is given twice"));
        }
        Ok(first)
    }

    fn all(&self, name: &str) -> Vec<String> {
        self.values.iter().filter(|(k, _)| k == name).map(|(_, v)| v.clone()).collect()
    }

    fn db(&self) -> Result<PathBuf, String> {
        self.one("--db")?.map(PathBuf::from).ok_or_else(|| "--db PATH is required".into())
    }

    fn number(&self, name: &str, default: usize) -> Result<usize, String> {
        self.number_at_most(name, default, usize::MAX)
    }

    fn number_at_most(&self, name: &str, default: usize, max: usize) -> Result<usize, String> {
        match self.one(name)? {
            None => Ok(default),
            Some(v) => match v.parse::<usize>() {
                Ok(n) if n > 0 && n <= max => Ok(n),
                Ok(n) if n > max => Err(format!("{name} must be at most {max}, got {v:?}")),
                _ => Err(format!("{name} must be a positive integer, got {v:?}")),
            },
        }
    }

    /// A positive number of seconds, at most a day (a deadline past that would overflow `Instant`
    /// for the largest numbers).
    fn seconds(&self, name: &str, default: Duration) -> Result<Duration, String> {
        Ok(Duration::from_secs(self.number_at_most(name, default.as_secs() as usize, MAX_SECS)? as u64))
    }
}

fn non_empty(name: &str, v: Option<String>) -> Result<String, String> {
    match v {
        Some(s) if !s.trim().is_empty() => Ok(s),
        Some(_) => Err(format!("{name} must not be empty")),
        None => Err(format!("{name} is required")),
    }
}

fn parse_args(args: impl Iterator<Item = String>) -> Result<Cli, String> {
    let args: Vec<String> = args.collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        return Ok(Cli::Help);
    }
    if args.iter().any(|a| a == "-V" || a == "--version") {
        return Ok(Cli::Version);
    }
    match args.first().map(String::as_str) {
        Some("serve") => parse_serve(Flags::parse(args.into_iter().skip(1), &[])?),
        Some("token") => {
            let sub = args.get(1).cloned().unwrap_or_default();
            parse_token(&sub, Flags::parse(args.into_iter().skip(2), &["--read-only"])?)
        }
        _ => parse_stdio(Flags::parse(args.into_iter(), &[])?),
    }
}

/// `cmp-mcp serve --listen ADDR:PORT [--db PATH] [limits…]`.
fn parse_serve(f: Flags) -> Result<Cli, String> {
    f.only(&[
        "--db",
        "--listen",
        "--max-body-bytes",
        "--max-text-bytes",
        "--max-concurrent",
        "--timeout-secs",
        "--header-timeout-secs",
        "--max-connections",
        "--max-sessions",
        "--allowed-host",
    ])?;
    if let Some(w) = f.words.first() {
        return Err(format!("serve: unexpected argument {w:?}"));
    }
    let listen = f.one("--listen")?.ok_or("serve: --listen ADDR:PORT is required (e.g. 127.0.0.1:8787)")?;
    let listen = listen
        .parse::<SocketAddr>()
        .map_err(|_| format!("--listen must be an IP address and port like 127.0.0.1:8787, got {listen:?}"))?;
    let cfg = http::Config {
        listen,
        max_body_bytes: f.number("--max-body-bytes", http::DEFAULT_MAX_BODY_BYTES)?,
        max_text_bytes: f.number("--max-text-bytes", tools::DEFAULT_MAX_TEXT_BYTES)?,
        max_concurrent: f.number("--max-concurrent", http::DEFAULT_MAX_CONCURRENT)?,
        timeout: f.seconds("--timeout-secs", http::DEFAULT_TIMEOUT)?,
        header_timeout: f.seconds("--header-timeout-secs", http::DEFAULT_HEADER_TIMEOUT)?,
        max_connections: f.number_at_most("--max-connections", http::DEFAULT_MAX_CONNECTIONS, MAX_CONNECTIONS)?,
        max_sessions: f.number("--max-sessions", http::DEFAULT_MAX_SESSIONS)?,
        allowed_hosts: f.all("--allowed-host"),
    };
    Ok(Cli::Serve { db: f.db()?, cfg })
}

/// `cmp-mcp token create|list|revoke …`.
fn parse_token(sub: &str, f: Flags) -> Result<Cli, String> {
    match sub {
        "create" => {
            f.only(&["--db", "--scope", "--read-only", "--label"])?;
            if let Some(w) = f.words.first() {
                return Err(format!("token create: unexpected argument {w:?}"));
            }
            Ok(Cli::TokenCreate {
                db: f.db()?,
                scope: non_empty("--scope", f.one("--scope")?)?,
                read_only: !f.switches.is_empty(),
                label: f.one("--label")?,
            })
        }
        "list" => {
            f.only(&["--db"])?;
            if let Some(w) = f.words.first() {
                return Err(format!("token list: unexpected argument {w:?}"));
            }
            Ok(Cli::TokenList { db: f.db()? })
        }
        "revoke" => {
            f.only(&["--db"])?;
            let [id] = f.words.as_slice() else {
                return Err("token revoke: give exactly one token id".into());
            };
            Ok(Cli::TokenRevoke { db: f.db()?, id: id.clone() })
        }
        other => Err(format!("token: unknown subcommand {other:?} (create, list, revoke)")),
    }
}

/// `cmp-mcp [--db PATH] [--scope NAME]`: the stdio server.
fn parse_stdio(f: Flags) -> Result<Cli, String> {
    f.only(&["--db", "--scope"])?;
    if let Some(w) = f.words.first() {
        return Err(format!("unknown argument {w:?}"));
    }
    let db = f.db()?;
    let scope = match f.one("--scope")? {
        None => "default".to_string(),
        given => non_empty("--scope", given)?,
    };
    Ok(Cli::Stdio { db, scope })
}

async fn serve_stdio(db: PathBuf, scope: String) -> Result<(), String> {
    let db = db::Db::open(&db)?;
    let server = server::CmpServer::stdio(db, scope);
    let running = server.serve(rmcp::transport::stdio()).await.map_err(|e| format!("MCP handshake failed: {e}"))?;
    running.waiting().await.map_err(|e| e.to_string())?;
    Ok(())
}

/// A plain connection for the token commands, with the cmp schema applied.
fn open_plain(path: &PathBuf) -> Result<rusqlite::Connection, String> {
    let conn = rusqlite::Connection::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    conn.busy_timeout(Duration::from_secs(5)).map_err(|e| e.to_string())?;
    cmp::register(&conn).map_err(|e| e.to_string())?;
    conn.query_row("SELECT cmp_init()", [], |_| Ok(())).map_err(|e| e.to_string())?;
    Ok(conn)
}

fn run_token(cli: Cli) -> Result<(), String> {
    match cli {
        Cli::TokenCreate { db, scope, read_only, label } => {
            let conn = open_plain(&db)?;
            let (id, token) = tokens::create(&conn, &scope, read_only, label.as_deref())?;
            eprintln!(
                "cmp-mcp: created token {id} for scope {scope:?} ({}); it is shown once, only its hash is stored",
                if read_only { "read-only" } else { "read-write" }
            );
            println!("{token}");
            Ok(())
        }
        Cli::TokenList { db } => {
            let conn = open_plain(&db)?;
            println!("id\tscope\taccess\tcreated_at\trevoked_at\tlabel");
            for t in tokens::list(&conn)? {
                println!(
                    "{}\t{}\t{}\t{}\t{}\t{}",
                    t.id,
                    t.scope,
                    if t.read_only { "read-only" } else { "read-write" },
                    t.created_at,
                    t.revoked_at.as_deref().unwrap_or("-"),
                    t.label.as_deref().unwrap_or("")
                );
            }
            Ok(())
        }
        Cli::TokenRevoke { db, id } => {
            let conn = open_plain(&db)?;
            if tokens::revoke(&conn, &id)? {
                eprintln!("cmp-mcp: revoked token {}", id.split('_').nth(1).unwrap_or(&id));
                Ok(())
            } else {
                Err("token revoke: no live token with that id".into())
            }
        }
        _ => Err("not a token command".into()),
    }
}

fn block_on(
    multi_thread: bool,
    blocking: usize,
    fut: impl std::future::Future<Output = Result<(), String>>,
) -> Result<(), String> {
    let mut b = if multi_thread {
        tokio::runtime::Builder::new_multi_thread()
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    let runtime = b
        .enable_all()
        .max_blocking_threads(blocking)
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime.block_on(fut)
}

fn main() -> ExitCode {
    let cli = match parse_args(std::env::args().skip(1)) {
        Ok(Cli::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Ok(Cli::Version) => {
            println!("cmp-mcp {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Ok(c) => c,
        Err(e) => {
            eprintln!("cmp-mcp: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let outcome = match cli {
        Cli::Stdio { db, scope } => block_on(false, 512, serve_stdio(db, scope)),
        Cli::Serve { db, cfg } => {
            let threads = cfg.max_concurrent + 8;
            block_on(true, threads, async move { http::serve(db::Db::open(&db)?, cfg).await })
        }
        token => run_token(token),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cmp-mcp: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(a: &[&str]) -> Result<Cli, String> {
        parse_args(a.iter().map(|s| s.to_string()))
    }

    #[test]
    fn command_line() {
        let stdio = |db: &str, scope: &str| Ok(Cli::Stdio { db: db.into(), scope: scope.into() });
        assert_eq!(parse(&["--db", "m.db"]), stdio("m.db", "default"));
        assert_eq!(parse(&["--db=m.db", "--scope", "work"]), stdio("m.db", "work"));
        assert_eq!(parse(&["--scope=work", "--db", "m.db"]), stdio("m.db", "work"));
        assert_eq!(parse(&["--help"]), Ok(Cli::Help));
        assert!(parse(&[]).unwrap_err().contains("--db"));
        assert!(parse(&["--db"]).unwrap_err().contains("needs a value"));
        assert!(parse(&["--db", "m.db", "--scope="]).unwrap_err().contains("empty"));
        assert!(parse(&["--db", "m.db", "--scope", "  "]).unwrap_err().contains("empty"));
        assert!(parse(&["--db", "m.db", "--verbose"]).unwrap_err().contains("--verbose"));
    }

    #[test]
    fn serve_and_token_command_lines() {
        match parse(&["serve", "--db", "m.db", "--listen", "127.0.0.1:0", "--max-concurrent=4"]) {
            Ok(Cli::Serve { cfg, .. }) => {
                assert_eq!(cfg.listen.to_string(), "127.0.0.1:0");
                assert_eq!(cfg.max_concurrent, 4);
                assert_eq!(cfg.max_body_bytes, http::DEFAULT_MAX_BODY_BYTES);
                assert_eq!(cfg.timeout, http::DEFAULT_TIMEOUT);
                assert_eq!(cfg.header_timeout, Duration::from_secs(10));
                assert_eq!(cfg.max_connections, 256);
                assert_eq!(cfg.max_sessions, http::DEFAULT_MAX_SESSIONS);
            }
            other => panic!("{other:?}"),
        }
        let serve = |extra: &[&str]| {
            let mut a = vec!["serve", "--db", "m.db", "--listen", "127.0.0.1:1"];
            a.extend_from_slice(extra);
            parse(&a)
        };
        match serve(&["--header-timeout-secs", "3", "--max-connections=7"]) {
            Ok(Cli::Serve { cfg, .. }) => {
                assert_eq!((cfg.header_timeout, cfg.max_connections), (Duration::from_secs(3), 7));
            }
            other => panic!("{other:?}"),
        }
        for (flag, bad) in
            [("--header-timeout-secs", "0"), ("--header-timeout-secs", "soon"), ("--header-timeout-secs", "-1")]
        {
            assert_eq!(
                serve(&[flag, bad]).unwrap_err(),
                format!("--header-timeout-secs must be a positive integer, got {bad:?}")
            );
        }
        assert_eq!(
            serve(&["--header-timeout-secs", "86401"]).unwrap_err(),
            "--header-timeout-secs must be at most 86400, got \"86401\""
        );
        assert_eq!(
            serve(&["--timeout-secs", "18446744073709551615"]).unwrap_err(),
            "--timeout-secs must be at most 86400, got \"18446744073709551615\""
        );
        assert_eq!(
            serve(&["--max-connections", "0"]).unwrap_err(),
            "--max-connections must be a positive integer, got \"0\""
        );
        assert!(serve(&["--max-connections", "many"]).unwrap_err().contains("positive integer"));
        assert!(serve(&["--max-connections", "1000001"]).unwrap_err().contains("at most 1000000"));
        assert!(serve(&["--max-connections", "1", "--max-connections", "2"]).unwrap_err().contains("given twice"));
        assert!(parse(&["serve", "--db", "m.db"]).unwrap_err().contains("--listen"));
        assert!(parse(&["serve", "--db", "m.db", "--listen", "localhost"]).unwrap_err().contains("--listen"));
        assert!(parse(&["serve", "--db", "m.db", "--listen", "127.0.0.1:1", "--scope", "x"])
            .unwrap_err()
            .contains("--scope"));
        assert!(parse(&["serve", "--db", "m.db", "--listen", "127.0.0.1:1", "--timeout-secs", "0"])
            .unwrap_err()
            .contains("positive"));
        assert_eq!(
            parse(&["token", "create", "--db", "m.db", "--scope", "work", "--read-only"]),
            Ok(Cli::TokenCreate { db: "m.db".into(), scope: "work".into(), read_only: true, label: None })
        );
        assert!(parse(&["token", "create", "--db", "m.db"]).unwrap_err().contains("--scope"));
        assert_eq!(parse(&["token", "list", "--db", "m.db"]), Ok(Cli::TokenList { db: "m.db".into() }));
        assert_eq!(
            parse(&["token", "revoke", "--db", "m.db", "abc"]),
            Ok(Cli::TokenRevoke { db: "m.db".into(), id: "abc".into() })
        );
        assert!(parse(&["token", "revoke", "--db", "m.db"]).unwrap_err().contains("exactly one"));
        assert!(parse(&["token", "mint"]).unwrap_err().contains("unknown subcommand"));
    }
}
