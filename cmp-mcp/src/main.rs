//! `cmp-mcp --db PATH [--scope S]`: an MCP server over stdio that gives AI clients (Claude Desktop,
//! ChatGPT connectors, Cursor, any MCP client) the cmp memory store as tools: get_context,
//! query_memory, expand, remember, search, fetch. See README.md.

mod db;
mod server;
mod tools;

use rmcp::ServiceExt;
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "\
usage: cmp-mcp --db PATH [--scope SCOPE]

Serves the cmp memory database at PATH over MCP (JSON-RPC on stdin/stdout).
  --db PATH       SQLite database (created, and the cmp schema applied, if missing)
  --scope SCOPE   owner namespace every call is confined to (default: default)
  -h, --help      this text
  -V, --version   the version";

/// Parsed command line.
#[derive(Debug, PartialEq)]
struct Args {
    db: PathBuf,
    scope: String,
}

/// What the command line asks for.
#[derive(Debug, PartialEq)]
enum Cli {
    Serve(Args),
    Help,
    Version,
}

fn parse_args(mut it: impl Iterator<Item = String>) -> Result<Cli, String> {
    let (mut db, mut scope) = (None, None);
    while let Some(a) = it.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        let mut value = |name: &str| inline.clone().or_else(|| it.next()).ok_or(format!("{name} needs a value"));
        match flag.as_str() {
            "-h" | "--help" => return Ok(Cli::Help),
            "-V" | "--version" => return Ok(Cli::Version),
            "--db" => db = Some(PathBuf::from(value("--db")?)),
            "--scope" => scope = Some(value("--scope")?),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    let db = db.ok_or("--db PATH is required")?;
    let scope = scope.unwrap_or_else(|| "default".into());
    if scope.is_empty() {
        return Err("--scope must not be empty".into());
    }
    Ok(Cli::Serve(Args { db, scope }))
}

async fn serve(args: Args) -> Result<(), String> {
    let db = db::Db::open(&args.db)?;
    let server = server::CmpServer::new(db, args.scope).await?;
    let running = server.serve(rmcp::transport::stdio()).await.map_err(|e| format!("MCP handshake failed: {e}"))?;
    running.waiting().await.map_err(|e| e.to_string())?;
    Ok(())
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(Cli::Serve(a)) => a,
        Ok(Cli::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Ok(Cli::Version) => {
            println!("cmp-mcp {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("cmp-mcp: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("cmp-mcp: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(args)) {
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
        let serve = |db: &str, scope: &str| Ok(Cli::Serve(Args { db: db.into(), scope: scope.into() }));
        assert_eq!(parse(&["--db", "m.db"]), serve("m.db", "default"));
        assert_eq!(parse(&["--db=m.db", "--scope", "work"]), serve("m.db", "work"));
        assert_eq!(parse(&["--scope=work", "--db", "m.db"]), serve("m.db", "work"));
        assert_eq!(parse(&["--help"]), Ok(Cli::Help));
        assert!(parse(&[]).unwrap_err().contains("--db"));
        assert!(parse(&["--db"]).unwrap_err().contains("needs a value"));
        assert!(parse(&["--db", "m.db", "--scope="]).unwrap_err().contains("empty"));
        assert!(parse(&["--db", "m.db", "--verbose"]).unwrap_err().contains("--verbose"));
    }
}
