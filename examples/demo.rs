//! `cargo run --release --example demo`: seeds an in-memory database with `sql/seed.sql` (a team
//! shipping "Atlas"), prints what `cmp_search` retrieves for three tasks with the provenance of each
//! row (its relevance and the retrievers that found it), then what `cmp_context` packs for one task
//! for claude, gpt and cursor, and a three-turn session that stops re-sending what the model holds.

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
    packs(&conn)?;
    session(&conn)
}

const PACK_TASK: &str = "Where does the Atlas launch stand: date, pricing, risks and owners?";

fn context(
    conn: &Connection,
    model: &str,
    budget: Option<i64>,
    session: Option<&str>,
    send: &str,
) -> Result<serde_json::Value, Box<dyn Error>> {
    let options = serde_json::json!({ "now": NOW, "send": send }).to_string();
    let text: String = conn.query_row(
        "SELECT cmp_context(?1, ?2, ?3, ?4, ?5)",
        rusqlite::params![PACK_TASK, model, budget, session, options],
        |r| r.get(0),
    )?;
    Ok(serde_json::from_str(&text)?)
}

/// The same task packed for three models: each gets its own budget, the constraint first, restated
/// facts folded, long notes compressed rather than dropped.
fn packs(conn: &Connection) -> Result<(), Box<dyn Error>> {
    println!("\nPack: {PACK_TASK}");
    println!("  {:<7}  {:>6}  {:>5}  {:>6}  {:>6}  {:>10}", "model", "budget", "items", "used", "folded", "compressed");
    let mut counts = Vec::new();
    for model in ["claude", "gpt", "cursor"] {
        let env = context(conn, model, None, None, "all")?;
        let items = env["items"].as_array().map_or(&[][..], |a| a.as_slice());
        let compressed = items.iter().filter(|i| i["why"].get("compressed").is_some()).count();
        println!(
            "  {:<7}  {:>6}  {:>5}  {:>6}  {:>6}  {:>10}",
            model,
            env["budget"]["tokens"].as_i64().unwrap_or(0),
            items.len(),
            env["budget"]["used"].as_i64().unwrap_or(0),
            env["coverage"]["deduped"].as_i64().unwrap_or(0),
            compressed
        );
        if model == "cursor" {
            println!("  cursor's first items:");
            for it in items.iter().take(4) {
                let how = match (it["why"].get("folded_refs"), it["why"].get("compressed")) {
                    (Some(f), _) => format!("folds {}", f[0].as_str().unwrap_or("")),
                    (_, Some(c)) => format!("compressed: {}", c.as_str().unwrap_or("")),
                    _ => String::new(),
                };
                println!(
                    "    {:<11} {}  {:<24} {}",
                    it["layer"].as_str().unwrap_or(""),
                    it["ref"].as_str().unwrap_or(""),
                    how,
                    shorten(it["content"].as_str().unwrap_or(""), 48)
                );
            }
        }
        counts.push((env["budget"]["tokens"].as_i64().unwrap_or(0), items.len()));
    }
    if !(counts[0].0 >= counts[1].0 && counts[1].0 >= counts[2].0 && counts[2].1 < counts[1].1) {
        return Err("expected claude >= gpt >= cursor budgets and fewer items for cursor".into());
    }
    Ok(())
}

/// A session (docs/protocol.md, "Sessions"): a tight turn, a roomy turn, a repeat. With `send: delta`, items carry only what
/// the session has not been given.
fn session(conn: &Connection) -> Result<(), Box<dyn Error>> {
    println!("\nSession chat-42 (claude, send: delta):");
    for (turn, budget) in [(1, 600), (2, 11_000), (3, 11_000)] {
        let env = context(conn, "claude", Some(budget), Some("chat-42"), "delta")?;
        let full = context(conn, "claude", Some(budget), None, "all")?;
        let sent: i64 = env["items"].as_array().map_or(0, |a| {
            a.iter()
                .map(|i| {
                    let c = i["content"].as_str().unwrap_or("");
                    conn.query_row("SELECT cmp_tokens(?1, 'claude') + 12", [c], |r| r.get::<_, i64>(0)).unwrap_or(0)
                })
                .sum()
        });
        let packed = full["items"].as_array().map_or(0, Vec::len);
        let new = env["working_memory"]["new"].as_array().map_or(0, Vec::len);
        let stateless = full["budget"]["used"].as_i64().unwrap_or(0);
        println!(
            "  turn {turn} (budget {budget:>5}): packed {packed:>3}, new {new:>3}, carried {:>3}; tokens sent {sent:>5}, \
             stateless {stateless:>5}, not re-sent {:>5}",
            packed - new,
            stateless - sent
        );
    }
    Ok(())
}
