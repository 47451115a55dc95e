//! `cargo run --release --example demo`: seeds an in-memory database with `sql/seed.sql` (a team
//! shipping "Atlas") and prints what `cmp_search` retrieves for three tasks, with the provenance of
//! each row: its relevance and the retrievers that found it.

use rusqlite::Connection;
use std::error::Error;

/// The seed memories, shared with the shell demo.
const SEED: &str = include_str!("../sql/seed.sql");
/// The clock the demo reads at: output is the same on every run.
const NOW: &str = "2026-06-01T00:00:00Z";
/// Rows printed per task.
const ROWS: usize = 8;
/// Content column width, in characters.
const CONTENT_CHARS: usize = 64;

const TASKS: [&str; 3] = [
    "When is the Atlas public launch, and who signs off?",
    "What did Lee say about billing?",
    "What happened this week?",
];

struct Row {
    r#ref: String,
    relevance: Option<f64>,
    retrievers: String,
    content: String,
}

fn search(conn: &Connection, task: &str) -> Result<Vec<Row>, Box<dyn Error>> {
    let options = serde_json::json!({ "now": NOW }).to_string();
    let mut st = conn.prepare("SELECT ref, relevance, why, content FROM cmp_search(?1, ?2)")?;
    let rows = st.query_map([task, options.as_str()], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, Option<f64>>(1)?, r.get::<_, String>(2)?, r.get::<_, String>(3)?))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (r#ref, relevance, why, content) = row?;
        let why: serde_json::Value = serde_json::from_str(&why)?;
        let retrievers = why["retrievers"]
            .as_array()
            .map(|a| a.iter().filter_map(|x| x.as_str()).collect::<Vec<_>>().join("+"))
            .unwrap_or_default();
        out.push(Row { r#ref, relevance, retrievers, content });
    }
    Ok(out)
}

fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max - 1).collect();
        t.push('…');
        t
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let conn = Connection::open_in_memory()?;
    cmp::register(&conn)?;
    let version: i64 = conn.query_row("SELECT cmp_init()", [], |r| r.get(0))?;
    conn.execute_batch(SEED)?;
    let (memories, scopes): (i64, i64) =
        conn.query_row("SELECT count(*), count(DISTINCT scope) FROM cmp_memories", [], |r| Ok((r.get(0)?, r.get(1)?)))?;
    let cmp_version: String = conn.query_row("SELECT cmp_version()", [], |r| r.get(0))?;
    println!("cmp {cmp_version} (schema {version}): {memories} memories in {scopes} scopes, read at now = {NOW}");
    println!("relevance: fused match strength in [0, 1]; '-' = recency only (no match score)");

    let hidden = ["mem_000000000001", "mem_000000000027", "mem_000000000028"];
    for task in TASKS {
        let rows = search(&conn, task)?;
        println!("\nTask: {task}  ({} candidates)", rows.len());
        println!("  {:>2}  {:<16}  {:>5}  {:<25}  content", "#", "ref", "rel", "retrievers");
        for (i, r) in rows.iter().take(ROWS).enumerate() {
            let rel = r.relevance.map_or("-".to_string(), |x| format!("{x:.3}"));
            println!(
                "  {:>2}  {:<16}  {:>5}  {:<25}  {}",
                i + 1,
                r.r#ref,
                rel,
                r.retrievers,
                shorten(&r.content, CONTENT_CHARS)
            );
        }
        if rows.len() > ROWS {
            println!("  … {} more", rows.len() - ROWS);
        }
        if let Some(r) = rows.iter().find(|r| hidden.contains(&r.r#ref.as_str())) {
            return Err(format!("{} must never be returned here", r.r#ref).into());
        }
    }
    println!(
        "\nNever returned above: the superseded decision (mem_000000000001), the redacted row \
         (mem_000000000027)\nand the row of scope 'personal' (mem_000000000028)."
    );
    Ok(())
}
