//! cmp from Rust: register the functions on a rusqlite connection, write four memories with plain SQL,
//! and print the context pack cmp builds for a task, then the refs it cites.
//!
//! `cargo run --example quickstart`
//!
//! (The example links the crate and calls `cmp::register`; no loadable extension is involved. It uses
//! the bundled SQLite of the dev-dependency; an application links rusqlite as it likes.)

use rusqlite::{params, Connection};
use serde_json::{json, Value};
use std::error::Error;

const TASK: &str = "Draft the Atlas launch announcement for Dana";
/// A fixed clock makes the output the same on every run; leave `now` out to use the real one.
const NOW: &str = "2026-06-01T00:00:00Z";

const MEMORIES: [(&str, &str, &str, &str); 4] = [
    ("mem_000000000001", "decision", "The Atlas launch is on June 12.", r#"["Atlas"]"#),
    ("mem_000000000002", "semantic", "Dana signs off on every Atlas announcement.", r#"["Atlas","Dana"]"#),
    ("mem_000000000003", "negative", "Never email customers on weekends.", "[]"),
    ("mem_000000000004", "preference", "Dana prefers one-page briefs with the risks first.", r#"["Dana"]"#),
];

fn main() -> Result<(), Box<dyn Error>> {
    let conn = Connection::open_in_memory()?; // or a file: Connection::open("memories.db")
    cmp::register(&conn)?;
    let version: i64 = conn.query_row("SELECT cmp_init()", [], |r| r.get(0))?; // creates or upgrades the schema
    println!("schema version {version}");

    // Memories are plain rows; triggers keep the full-text index and the entity graph in step.
    let mut insert = conn.prepare(
        "INSERT INTO cmp_memories(id, kind, content, entities, captured_at) VALUES (?1, ?2, ?3, ?4, '2026-05-01T09:00:00Z')",
    )?;
    for (id, kind, content, entities) in MEMORIES {
        insert.execute(params![id, kind, content, entities])?;
    }

    let context = |options: Value| -> rusqlite::Result<String> {
        conn.query_row("SELECT cmp_context(?1, 'claude', NULL, NULL, ?2)", params![TASK, options.to_string()], |r| {
            r.get(0)
        })
    };

    // The pack as Markdown, ready to paste into a prompt...
    println!("{}", context(json!({"now": NOW, "format": "markdown"}))?);

    // ...and as the SMP envelope (the default format), whose items carry refs and provenance.
    let pack: Value = serde_json::from_str(&context(json!({ "now": NOW }))?)?;
    println!(
        "cited refs ({}/{} tokens, {}):",
        pack["budget"]["used"],
        pack["budget"]["tokens"],
        pack["coverage"]["status"].as_str().unwrap_or("?")
    );
    for item in pack["items"].as_array().into_iter().flatten() {
        let relevance = item["relevance"].as_f64().map_or("-".to_string(), |r| format!("{r:.3}"));
        println!(
            "  {}  {:<11}  relevance {:<5}  {}",
            item["ref"].as_str().unwrap_or("?"),
            item["layer"].as_str().unwrap_or("?"),
            relevance,
            item["content"].as_str().unwrap_or("")
        );
    }
    Ok(())
}
