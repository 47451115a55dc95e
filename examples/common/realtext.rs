//! A real-text benchmark corpus: every LoCoMo turn, every REALTALK (dev) message and every MSC
//! persona fact from `../shared/data/`, cycled to any size with a numbered suffix (` #2`, ` #3`, …)
//! on the second and later passes. The data is read in place, never copied.
//!
//! - LoCoMo and REALTALK turns are `episodic` memories `Speaker: text`, the speaker as entity;
//! - persona facts are `preference` memories when they say what someone likes, else `semantic`, the
//!   speaker ("Speaker 1"/"Speaker 2" of their dialogue) not named;
//! - time grows with the row index over two years (rows are appended as life happens), so the
//!   turns of one conversation stay next to each other;
//! - every 200th row is redacted; one scope; every `embed_every`-th row gets a user embedding.
//!
//! Tasks are the LoCoMo questions, in file order.

use super::corpus::{f32_blob, iso, unit_vector, Row, SPAN_DAYS, START};
use serde_json::{json, Value};

/// Bumped whenever the rows built from the same data change.
pub const REALTEXT_VERSION: u32 = 1;
/// Every this-many-th row is redacted.
pub const REDACT_EVERY: usize = 200;

/// One source sentence: text, speaker (entity), kind.
type Source = (String, Option<String>, &'static str);

fn read_json(path: &str) -> Result<Value, String> {
    let s = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {path}: {e} (the real-text corpus reads ../shared/data/; see its README)"))?;
    serde_json::from_str(&s).map_err(|e| format!("{path}: {e}"))
}

fn sessions(conv: &serde_json::Map<String, Value>) -> Vec<&Vec<Value>> {
    let mut keys: Vec<(u32, &Vec<Value>)> = conv
        .iter()
        .filter_map(|(k, v)| {
            let n = k.strip_prefix("session_")?.parse::<u32>().ok()?;
            Some((n, v.as_array()?))
        })
        .collect();
    keys.sort_by_key(|k| k.0);
    keys.into_iter().map(|k| k.1).collect()
}

fn preference(fact: &str) -> bool {
    let l = fact.to_lowercase();
    ["like", "love", "enjoy", "prefer", "favorite", "favourite", "hate"].iter().any(|w| l.contains(w))
}

/// Every source sentence, in a fixed order (LoCoMo, then REALTALK, then persona facts).
fn sources(data: &str) -> Result<Vec<Source>, String> {
    let mut out: Vec<Source> = Vec::new();
    let locomo = read_json(&format!("{data}/locomo10.json"))?;
    for s in locomo.as_array().ok_or("locomo10.json: not a list")? {
        let Some(conv) = s.get("conversation").and_then(Value::as_object) else { continue };
        for turns in sessions(conv) {
            for t in turns {
                let (Some(sp), Some(text)) = (t["speaker"].as_str(), t["text"].as_str()) else { continue };
                out.push((format!("{sp}: {text}"), Some(sp.to_string()), "episodic"));
            }
        }
    }
    let mut chats: Vec<String> = std::fs::read_dir(format!("{data}/realtalk-dev"))
        .map_err(|e| format!("cannot list {data}/realtalk-dev: {e}"))?
        .filter_map(|e| e.ok().map(|e| e.path().display().to_string()))
        .filter(|p| p.ends_with(".json"))
        .collect();
    chats.sort();
    for path in chats {
        let chat = read_json(&path)?;
        let Some(conv) = chat.as_object() else { continue };
        for turns in sessions(conv) {
            for t in turns {
                let (Some(sp), Some(text)) = (t["speaker"].as_str(), t["clean_text"].as_str()) else { continue };
                if text.trim().is_empty() {
                    continue;
                }
                out.push((format!("{sp}: {text}"), Some(sp.to_string()), "episodic"));
            }
        }
    }
    let msc = read_json(&format!("{data}/msc_personas_all.json"))?;
    for split in ["train", "valid", "test"] {
        for dialogue in msc[split].as_array().map(Vec::as_slice).unwrap_or(&[]) {
            for who in ["Speaker 1", "Speaker 2"] {
                for f in dialogue[who].as_array().map(Vec::as_slice).unwrap_or(&[]) {
                    if let Some(f) = f.as_str() {
                        out.push((f.to_string(), None, if preference(f) { "preference" } else { "semantic" }));
                    }
                }
            }
        }
    }
    if out.is_empty() {
        return Err(format!("no sentences found under {data}"));
    }
    Ok(out)
}

/// `n` rows of real text (see the module comment). Output depends only on the data and arguments.
pub fn generate(data: &str, seed: u64, n: usize, embed_every: usize) -> Result<Vec<Row>, String> {
    let src = sources(data)?;
    let mut rows = Vec::with_capacity(n);
    for i in 0..n {
        let (text, speaker, kind) = &src[i % src.len()];
        let pass = i / src.len();
        let content = if pass == 0 { text.clone() } else { format!("{text} #{}", pass + 1) };
        let t = START + (i as i64 * SPAN_DAYS * 86_400) / n.max(1) as i64;
        rows.push(Row {
            id: format!("mem_{i:012x}"),
            content,
            summary: None,
            kind,
            occurred_at: Some(iso(t)),
            captured_at: iso(t),
            source_url: None,
            confidence: None,
            trust: 0.5,
            entities: json!(speaker.iter().collect::<Vec<_>>()).to_string(),
            superseded_by: None,
            superseded_at: None,
            conflict: false,
            redacted: i % REDACT_EVERY == REDACT_EVERY - 1,
            scope: "default",
            embedding: (embed_every > 0 && i % embed_every == 0).then(|| f32_blob(&unit_vector(seed, i as u64))),
        });
    }
    Ok(rows)
}

/// The first `n` LoCoMo questions (cycled when `n` exceeds them).
pub fn tasks(data: &str, n: usize) -> Result<Vec<String>, String> {
    let locomo = read_json(&format!("{data}/locomo10.json"))?;
    let mut qs: Vec<String> = Vec::new();
    for s in locomo.as_array().ok_or("locomo10.json: not a list")? {
        for q in s["qa"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
            if let Some(t) = q["question"].as_str() {
                qs.push(t.to_string());
            }
        }
    }
    if qs.is_empty() {
        return Err("locomo10.json holds no questions".into());
    }
    Ok((0..n).map(|i| qs[i % qs.len()].clone()).collect())
}
