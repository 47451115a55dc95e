//! Token counts on real text (LoCoMo turns, realtalk-dev messages, memdaily-dev messages): o200k_base
//! (what the estimate of the non-gpt profiles counts with) against cl100k_base and chars/4, and the
//! speed of counting, first pass and cached.
//!
//! ```text
//! cargo run --release --example tokencal -- [--data DIR]      # o200k against cl100k and chars/4
//! cargo run --release --example tokencal -- --envelope        # what each part of a pack costs
//! cargo run --release --example tokencal -- --verify          # cmp's exact counts = tiktoken's
//! ```
use cmp::tokens::Counter;
use serde_json::Value;
use std::time::Instant;

fn texts(dir: &str) -> Vec<(&'static str, Vec<String>)> {
    let mut out = Vec::new();
    let read = |p: String| -> Value {
        serde_json::from_str(&std::fs::read_to_string(&p).unwrap_or_default()).unwrap_or(Value::Null)
    };
    let mut locomo = Vec::new();
    if let Value::Array(samples) = read(format!("{dir}/locomo10.json")) {
        for s in samples {
            if let Some(conv) = s["conversation"].as_object() {
                for (k, v) in conv {
                    if k.starts_with("session_") && !k.ends_with("date_time") {
                        for t in v.as_array().into_iter().flatten() {
                            locomo.push(format!(
                                "{}: {}",
                                t["speaker"].as_str().unwrap_or(""),
                                t["text"].as_str().unwrap_or("")
                            ));
                        }
                    }
                }
            }
        }
    }
    out.push(("locomo", locomo));
    let mut rt = Vec::new();
    let mut md = Vec::new();
    for (sub, list) in [("realtalk-dev", &mut rt), ("memdaily-dev", &mut md)] {
        let mut files: Vec<_> =
            std::fs::read_dir(format!("{dir}/{sub}")).into_iter().flatten().flatten().map(|e| e.path()).collect();
        files.sort();
        for f in files {
            let v = read(f.display().to_string());
            if sub == "realtalk-dev" {
                for (k, s) in v.as_object().into_iter().flatten() {
                    if k.starts_with("session_") {
                        for m in s.as_array().into_iter().flatten() {
                            list.push(format!(
                                "{}: {}",
                                m["speaker"].as_str().unwrap_or(""),
                                m["clean_text"].as_str().unwrap_or("")
                            ));
                        }
                    }
                }
            } else {
                for tr in v.as_array().into_iter().flatten() {
                    for m in tr["message_list"].as_array().into_iter().flatten() {
                        list.push(m["message"].as_str().unwrap_or("").to_string());
                    }
                }
            }
        }
    }
    out.push(("realtalk", rt));
    out.push(("memdaily", md));
    out
}

/// What packs cost in o200k tokens: legends, an empty pack, a session's second turn, and the share of
/// framing in packs of real chat messages (realtalk-dev, first chat) at several budgets.
fn envelope(dir: &str) {
    let conn = rusqlite::Connection::open_in_memory().expect("memory db");
    cmp::register(&conn).expect("register");
    conn.query_row("SELECT cmp_init()", [], |_| Ok(())).expect("init");
    conn.execute_batch(include_str!("../sql/seed.sql")).expect("seed");
    let call = |task: &str, model: &str, budget: i64, sid: Option<&str>, opts: &str| -> String {
        conn.query_row(
            "SELECT cmp_context(?1, ?2, ?3, ?4, ?5)",
            rusqlite::params![task, model, budget, sid, opts],
            |r| r.get(0),
        )
        .expect("cmp_context")
    };
    let now = r#""now":"2026-06-01T00:00:00Z""#;
    let o = |extra: &str| format!("{{{now}{extra}}}");
    let t = |s: &str| Counter::O200k.count(s);
    let legend = |s: &str| -> usize {
        let v: Value = serde_json::from_str(s).unwrap_or(Value::Null);
        t(&v["legend"].to_string())
    };
    let task = "When is the Atlas launch?";
    println!("| what (seed store, gpt-4o, o200k) | tokens |\n|---|---|");
    println!("| compact legend | {} |", legend(&call(task, "gpt-4o", 2000, None, &o(""))));
    println!(
        "| full legend (`legend: \"full\"`) | {} |",
        legend(&call(task, "gpt-4o", 2000, None, &o(r#","legend":"full""#)))
    );
    println!(
        "| empty SMP pack (no memory in scope) | {} |",
        t(&call(task, "gpt-4o", 2000, None, &o(r#","scope":"nobody""#)))
    );
    println!(
        "| empty markdown pack | {} |",
        t(&call(task, "gpt-4o", 2000, None, &o(r#","scope":"nobody","format":"markdown""#)))
    );
    let s1 = call(task, "gpt-4o", 2000, Some("s"), &o(""));
    let s2 = call(task, "gpt-4o", 2000, Some("s"), &o(""));
    println!("| SMP at 2000, session turn 1 / turn 2 (legend held) | {} / {} |", t(&s1), t(&s2));
    println!(
        "| SMP at 2000 without / with `audit: true` (items) | {} / {} |",
        serde_json::from_str::<Value>(&call(task, "gpt-4o", 2000, None, &o("")))
            .map(|v| v["items"].as_array().map_or(0, Vec::len))
            .unwrap_or(0),
        serde_json::from_str::<Value>(&call(task, "gpt-4o", 2000, None, &o(r#","audit":true"#)))
            .map(|v| v["items"].as_array().map_or(0, Vec::len))
            .unwrap_or(0)
    );
    // Real chat: framing share = 1 - Σ o200k(item content) / o200k(output).
    let chat = texts(dir).into_iter().find(|(n, _)| *n == "realtalk").map(|(_, v)| v).unwrap_or_default();
    let conn2 = rusqlite::Connection::open_in_memory().expect("memory db");
    cmp::register(&conn2).expect("register");
    conn2.query_row("SELECT cmp_init()", [], |_| Ok(())).expect("init");
    for (i, m) in chat.iter().take(700).enumerate() {
        conn2
            .execute(
                "INSERT INTO cmp_memories(content, kind, occurred_at, captured_at) VALUES (?1, 'episodic', ?2, ?2)",
                rusqlite::params![m, format!("2024-01-01T{:02}:{:02}:00Z", i / 60 % 24, i % 60)],
            )
            .expect("insert");
    }
    println!("\n| realtalk-dev chat 1, task \"what did they cook\" | budget | items | content tokens | output tokens | framing share |\n|---|---|---|---|---|---|");
    for fmt in ["smp", "markdown"] {
        for budget in [1000i64, 2000, 4000] {
            let opts = format!(r#"{{"now":"2024-02-01T00:00:00Z","format":"{fmt}"}}"#);
            let out: String = conn2
                .query_row(
                    "SELECT cmp_context('what did they cook', 'gpt-4o', ?1, NULL, ?2)",
                    rusqlite::params![budget, opts],
                    |r| r.get(0),
                )
                .expect("pack");
            let items: Vec<String> = conn2
                .prepare("SELECT content FROM cmp_items('what did they cook', 'gpt-4o', ?1, ?2)")
                .expect("items")
                .query_map(rusqlite::params![budget, r#"{"now":"2024-02-01T00:00:00Z"}"#], |r| r.get(0))
                .expect("q")
                .map_while(Result::ok)
                .collect();
            let (n, content) = if fmt == "smp" {
                (items.len(), items.iter().map(|c| t(c)).sum::<usize>())
            } else {
                let lines: Vec<&str> = out.lines().filter(|l| l.starts_with("[mem_")).collect();
                (lines.len(), lines.iter().map(|l| t(l.split_once("] ").map_or("", |x| x.1))).sum())
            };
            let total = t(&out);
            println!(
                "| {fmt} | {budget} | {n} | {content} | {total} | {:.0} % |",
                100.0 * (1.0 - content as f64 / total.max(1) as f64)
            );
        }
    }
}

/// cmp's exact counts (pieces looked up) against tiktoken-rs's own encoder on every text of the
/// corpora, alone and joined by newlines in chunks of 40; exits non-zero on any difference.
fn verify(dir: &str) {
    let (mut checked, mut wrong) = (0usize, 0usize);
    for (name, list) in texts(dir) {
        let chunks: Vec<String> = list.chunks(40).map(|c| c.join("\n")).collect();
        for text in list.iter().chain(&chunks) {
            for (counter, bpe) in [
                (Counter::O200k, tiktoken_rs::o200k_base_singleton()),
                (Counter::Cl100k, tiktoken_rs::cl100k_base_singleton()),
            ] {
                let (got, want) = (counter.count(text), bpe.encode_ordinary(text).len());
                checked += 1;
                if got != want {
                    wrong += 1;
                    eprintln!("{name} {counter:?}: {got} vs {want}: {:?}", text.chars().take(80).collect::<String>());
                }
            }
        }
    }
    println!("exact counts checked: {checked}, different from tiktoken-rs: {wrong}");
    if wrong > 0 || checked == 0 {
        std::process::exit(1);
    }
}

fn main() {
    let mut dir = "../shared/data".to_string();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--data" {
            dir = args.next().unwrap_or(dir);
        } else if a == "--verify" {
            verify(&dir);
            return;
        } else if a == "--envelope" {
            envelope(&dir);
            return;
        } else if a == "--check" {
            // Is the o200k count of standard input the sum over its lines (each with its newline)?
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut std::io::stdin(), &mut text);
            let lines: Vec<&str> = text.split('\n').collect();
            for i in 1..lines.len() {
                let (a, b) = (lines[..i].join("\n") + "\n", lines[i..].join("\n"));
                let (w, s) =
                    (Counter::O200k.count(&format!("{a}{b}")), Counter::O200k.count(&a) + Counter::O200k.count(&b));
                if w != s {
                    println!(
                        "split before line {i}: whole {w} vs parts {s}: {:?} | {:?}",
                        &lines[i - 1],
                        lines[i].chars().take(60).collect::<String>()
                    );
                }
            }
            return;
        } else if a == "--lines" {
            // Counts each line of standard input (o200k, cl100k): to see where an output's tokens go.
            for line in std::io::stdin().lines().map_while(Result::ok) {
                println!(
                    "{:5} {:5}  {}",
                    Counter::O200k.count(&line),
                    Counter::Cl100k.count(&line),
                    line.chars().take(100).collect::<String>()
                );
            }
            return;
        }
    }
    // The estimate is o200k_base's count: what the old estimate and the other tables say of the same text.
    println!(
        "| corpus | texts | o200k tokens | cl100k / o200k | chars/4 / o200k | exact counting, first pass | again |"
    );
    println!("|---|---|---|---|---|---|---|");
    let _ = (Counter::O200k.count("load the tables"), Counter::Cl100k.count("load the tables"));
    for (name, list) in texts(&dir) {
        let t0 = Instant::now();
        let sx: usize = list.iter().map(|t| Counter::O200k.count(t)).sum();
        let first = t0.elapsed().as_secs_f64();
        let t0 = Instant::now();
        let again: usize = list.iter().map(|t| Counter::O200k.count(t)).sum();
        let cached = t0.elapsed().as_secs_f64();
        assert_eq!(again, sx);
        let cl: usize = list.iter().map(|t| Counter::Cl100k.count(t)).sum();
        let chars: usize = list.iter().map(|t| t.chars().count().div_ceil(4)).sum();
        println!(
            "| {name} | {} | {sx} | {:.3} | {:.3} | {:.0} k tokens/s | {:.0} k tokens/s |",
            list.len(),
            cl as f64 / sx.max(1) as f64,
            chars as f64 / sx.max(1) as f64,
            sx as f64 / first / 1000.0,
            sx as f64 / cached / 1000.0,
        );
    }
}
