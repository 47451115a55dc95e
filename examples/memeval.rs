//! Memory evaluation harness: does `cmp_context` put a question's evidence into the pack, compared
//! with what a competent user writes in ten lines (BM25 over FTS5, greedy fill that skips what does
//! not fit and keeps going), on conversations written by language models (LoCoMo) and by people
//! (REALTALK, `realtalk-dev/`)?
//!
//! ```text
//! cargo run --release --example memeval -- [--data DIR] [--datasets locomo,realtalk,locomo-spread]
//!     [--conversations N] [--questions N] [--budgets 500,1000,2000,4000]
//!     [--profiles generic,claude,gpt,cursor] [--embedder MODEL_DIR] [--smoke]
//! ```
//!
//! With `--embedder`, every memory's `embedding` is its message (without the speaker's name)
//! embedded by the sentence-transformers model in MODEL_DIR (e.g. all-MiniLM-L6-v2, by
//! `cmp::embed`), and every call passes the `embedder` option, so cmp embeds the question with the
//! same model; the BM25 baseline is unchanged.
//!
//! Each conversation becomes a fresh in-memory store: one `episodic` memory per message,
//! `"Speaker: text"`, the speaker as its entity, and a deterministic id from the dialog id.
//! Timestamps: REALTALK messages carry their own; LoCoMo gives one date per session, used as given
//! for every turn of the session (`locomo`), or plus the turn index in seconds (`locomo-spread`).
//! `now` = one day after the last message. Categories 1–4 make the overall figures; category 5
//! (adversarial) is reported on its own.
//!
//! Two measures, both on the same calls:
//! - **Selection, at equal content tokens.** cmp's pack (SMP, at budget B) holds C content tokens
//!   in the old estimate, Σ(ceil(chars/4) + 12); the baselines are filled to the same C: BM25 order,
//!   and cmp's own ranking (`cmp_search` order). This isolates which memories were chosen.
//! - **What the model reads, at B real tokens.** Every output is counted with OpenAI's o200k_base.
//!   cmp's SMP and markdown packs against the baseline rendered as a plain markdown list
//!   (`- [ref] content`, one line per memory) filled while the list fits B.
//! - **What the model can read of the evidence.** A turn counts above when the pack holds it at any
//!   rung; a knapsack pack may show only its head sentence ("Melanie: Thanks, Caroline!"). So each
//!   pack is also scored by the evidence it shows in full, and by the answer's words: of the content
//!   words of the dataset's answer that its evidence turns hold, the share the pack's shown text
//!   holds (the plain lists show every line in full).
//! - **What word matching can reach.** The evidence that shares a stemmed search word with the
//!   question, a speaker's name aside (every message of a speaker names them): the turn recall of
//!   a pack holding all of it is the ceiling of a retriever that finds by words; each system's
//!   recall is split into that evidence and the rest (which only context, dates or a sentence
//!   model can find).
//! - **By conversation.** Each conversation's lead on its own (cmp over the BM25 fill at equal
//!   content tokens, and markdown over the plain BM25 list): the spread the overall figures hide,
//!   and so roughly where a conversation nobody here has seen may land.
//!
//! Checks on every envelope: `used <= tokens`; for gpt, `used` equals the o200k count of the output;
//! for the estimated profiles, the estimate against o200k; budget monotonicity (every ref packed at a
//! budget is packed at every larger one). Data is read from `../shared/data/`, never copied here.

use rusqlite::{params, Connection};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::process::ExitCode;
use std::time::Instant;

type Res<T> = Result<T, String>;

const USAGE: &str = "usage: memeval [--data DIR] [--datasets locomo,realtalk,locomo-spread] [--conversations N] \
[--questions N] [--budgets 500,1000,2000,4000] [--profiles generic,claude,gpt,cursor] [--embedder MODEL_DIR] [--smoke]";
/// The old content estimate: ceil(chars / 4) + 12 per item.
const CHARS_PER_TOKEN: f64 = 4.0;
const ITEM_OVERHEAD: usize = 12;
const CATEGORIES: [&str; 5] = ["multi-hop", "temporal", "open-domain", "single-hop", "adversarial"];

#[derive(Debug, Clone)]
struct Args {
    data: String,
    datasets: Vec<String>,
    conversations: Option<usize>,
    questions: Option<usize>,
    budgets: Vec<i64>,
    profiles: Vec<String>,
    embedder: Option<String>,
}

fn list(v: &str) -> Vec<String> {
    v.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()
}

fn parse_args() -> Res<Args> {
    let mut a = Args {
        data: "../shared/data".into(),
        datasets: list("locomo,realtalk"),
        conversations: None,
        questions: None,
        budgets: vec![500, 1000, 2000, 4000],
        profiles: list("generic,claude,gpt,cursor"),
        embedder: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value\n{USAGE}"));
        let num = |v: String| v.parse::<usize>().map_err(|_| format!("not a number: {v:?}"));
        match flag.as_str() {
            "--data" => a.data = value()?,
            "--datasets" => a.datasets = list(&value()?),
            "--conversations" => a.conversations = Some(num(value()?)?),
            "--questions" => a.questions = Some(num(value()?)?),
            "--budgets" => {
                a.budgets = list(&value()?)
                    .iter()
                    .map(|s| s.parse::<i64>().map_err(|_| format!("--budgets: not an integer: {s:?}")))
                    .collect::<Res<_>>()?
            }
            "--profiles" => a.profiles = list(&value()?),
            "--embedder" => a.embedder = Some(value()?),
            "--smoke" => {
                a.conversations = Some(1);
                a.questions = Some(30);
                a.budgets = vec![1000];
            }
            _ => return Err(format!("unknown argument {flag:?}\n{USAGE}")),
        }
    }
    a.budgets.sort_unstable();
    a.budgets.dedup();
    if a.budgets.is_empty() || a.profiles.is_empty() || a.datasets.is_empty() {
        return Err(format!("--budgets, --profiles and --datasets must not be empty\n{USAGE}"));
    }
    Ok(a)
}

// ------------------------------------------------------------------------------------------ data

#[derive(Debug, Clone)]
struct Turn {
    dia: String,
    session: u32,
    id: String,
    content: String,
    occurred_at: String,
    speaker: String,
}

#[derive(Debug, Clone)]
struct Question {
    text: String,
    category: u8,
    evidence: Vec<String>,
    /// The dataset's answer (empty when it gives none).
    answer: String,
}

#[derive(Debug, Clone)]
struct Conversation {
    name: String,
    turns: Vec<Turn>,
    now: String,
    questions: Vec<Question>,
}

/// How many of the first `per` questions of categories 1–4 of each conversation name a day or a month
/// (cmp's dated retriever reads them).
fn dated_questions(convs: &[Conversation], per: usize) -> usize {
    let mut n = 0;
    for c in convs {
        let now = cmp::time::parse(&c.now).unwrap_or(0.0);
        let named = |q: &&Question| !cmp::retrieve::dated::named(&q.text, now).is_empty();
        n += c.questions.iter().take(per).filter(|q| (1..=4).contains(&q.category)).filter(named).count();
    }
    n
}

/// Questions of categories 1–4 among the first `per` of each conversation whose evidence lies in two
/// or more sessions.
fn spread_questions(convs: &[Conversation], per: usize) -> usize {
    let sessions =
        |q: &Question| q.evidence.iter().filter_map(|e| parse_dia(e).map(|d| d.0)).collect::<HashSet<_>>().len();
    let mut n = 0;
    for c in convs {
        n += c.questions.iter().take(per).filter(|q| (1..=4).contains(&q.category) && sessions(q) >= 2).count();
    }
    n
}

/// Evidence ids read, and what could not be resolved.
#[derive(Debug, Default)]
struct Stats {
    ids: usize,
    skipped: usize,
    questions_without_evidence: usize,
}

fn iso(epoch: i64) -> String {
    cmp::time::format(epoch as f64)
}

/// LoCoMo's `"1:56 pm on 8 May, 2023"` in Unix seconds (UTC: the data carries no zone).
fn parse_locomo_date(s: &str) -> Option<i64> {
    let (time, date) = s.split_once(" on ")?;
    let mut tp = time.split_whitespace();
    let (hm, ampm) = (tp.next()?, tp.next()?.to_ascii_lowercase());
    let (h, mi) = hm.split_once(':')?;
    let (mut h, mi): (i64, i64) = (h.parse().ok()?, mi.parse().ok()?);
    match ampm.as_str() {
        "am" if h == 12 => h = 0,
        "pm" if h != 12 => h += 12,
        "am" | "pm" => {}
        _ => return None,
    }
    let date = date.replace(',', " ");
    let mut dp = date.split_whitespace();
    let day: i64 = dp.next()?.parse().ok()?;
    let month = dp.next()?.to_ascii_lowercase();
    let year: i64 = dp.next()?.parse().ok()?;
    const MONTHS: [&str; 12] = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    let m = MONTHS.iter().position(|n| n.starts_with(&month) && month.len() >= 3)? as i64 + 1;
    let midnight = cmp::time::parse(&format!("{year:04}-{m:02}-{day:02}"))? as i64;
    Some(midnight + h * 3600 + mi * 60)
}

/// REALTALK's `"27.12.2023, 16:45:30"` (day.month.year) in Unix seconds.
fn parse_realtalk_date(s: &str) -> Option<i64> {
    let (date, time) = s.split_once(',')?;
    let d: Vec<i64> = date.trim().split('.').map(|x| x.parse().ok()).collect::<Option<_>>()?;
    let t: Vec<i64> = time.trim().split(':').map(|x| x.parse().ok()).collect::<Option<_>>()?;
    if d.len() != 3 || t.len() != 3 {
        return None;
    }
    let midnight = cmp::time::parse(&format!("{:04}-{:02}-{:02}", d[2], d[1], d[0]))? as i64;
    Some(midnight + t[0] * 3600 + t[1] * 60 + t[2])
}

/// `"D30:05"` → `(30, 5)`.
fn parse_dia(s: &str) -> Option<(u32, u32)> {
    let (a, b) = s.trim().strip_prefix('D')?.split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// `mem_` + 12 hex of FNV-1a(conversation/dia_id): deterministic, and carrying no order.
fn turn_id(conv: &str, dia: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in conv.bytes().chain([b'/']).chain(dia.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("mem_{:012x}", h >> 16)
}

/// Questions with their evidence normalised (`D8:6; D9:17` split, `D30:05` → `D30:5`), unknown ids
/// skipped and counted.
fn questions(qa: &Value, known: &HashSet<String>, stats: &mut Stats) -> Vec<Question> {
    let mut out = Vec::new();
    for q in qa.as_array().map(Vec::as_slice).unwrap_or(&[]) {
        let (Some(text), Some(category)) = (q["question"].as_str(), q["category"].as_u64()) else { continue };
        if !(1..=5).contains(&category) {
            continue;
        }
        let mut evidence = Vec::new();
        for e in q["evidence"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
            for part in e.as_str().unwrap_or("").split(|c: char| c == ';' || c == ',' || c.is_whitespace()) {
                if part.is_empty() {
                    continue;
                }
                stats.ids += 1;
                match parse_dia(part).map(|(s, t)| format!("D{s}:{t}")) {
                    Some(k) if known.contains(&k) => {
                        if !evidence.contains(&k) {
                            evidence.push(k)
                        }
                    }
                    _ => stats.skipped += 1,
                }
            }
        }
        if evidence.is_empty() {
            stats.questions_without_evidence += 1;
            continue;
        }
        let answer = match &q["answer"] {
            Value::String(a) => a.clone(),
            Value::Null => String::new(),
            other => other.to_string(),
        };
        out.push(Question { text: text.to_string(), category: category as u8, evidence, answer });
    }
    out
}

fn finish(name: String, turns: Vec<Turn>, qa: &Value, stats: &mut Stats) -> Conversation {
    let last = turns.iter().filter_map(|t| cmp::time::parse(&t.occurred_at)).fold(0.0, f64::max) as i64;
    let known: HashSet<String> = turns.iter().map(|t| t.dia.clone()).collect();
    let questions = questions(qa, &known, stats);
    Conversation { name, turns, now: iso(last + 86_400), questions }
}

fn load_locomo(path: &str, spread: bool, stats: &mut Stats) -> Res<Vec<Conversation>> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let root: Value = serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))?;
    let mut out = Vec::new();
    for s in root.as_array().ok_or(format!("{path}: not an array"))? {
        let name = s["sample_id"].as_str().unwrap_or("?").to_string();
        let conv = s["conversation"].as_object().ok_or(format!("{name}: no conversation"))?;
        let mut sessions: Vec<(u32, &Vec<Value>)> =
            conv.iter().filter_map(|(k, v)| Some((k.strip_prefix("session_")?.parse().ok()?, v.as_array()?))).collect();
        sessions.sort_by_key(|s| s.0);
        let mut turns = Vec::new();
        for (n, msgs) in sessions {
            let date = conv.get(&format!("session_{n}_date_time")).and_then(Value::as_str).unwrap_or("");
            let base = parse_locomo_date(date).ok_or(format!("{name}: session {n} date {date:?}"))?;
            for (i, t) in msgs.iter().enumerate() {
                let Some((ds, dt)) = t["dia_id"].as_str().and_then(parse_dia) else { continue };
                let dia = format!("D{ds}:{dt}");
                let speaker = t["speaker"].as_str().unwrap_or("").trim().to_string();
                let mut content = format!("{speaker}: {}", t["text"].as_str().unwrap_or("").trim());
                if let Some(cap) = t["blip_caption"].as_str().filter(|c| !c.trim().is_empty()) {
                    content.push_str(&format!(" [shares a photo of {}]", cap.trim().trim_start_matches("a photo of ")));
                }
                let at = base + if spread { i as i64 } else { 0 };
                turns.push(Turn { id: turn_id(&name, &dia), dia, session: ds, content, occurred_at: iso(at), speaker });
            }
        }
        out.push(finish(name, turns, &s["qa"], stats));
    }
    Ok(out)
}

fn load_realtalk(dir: &str, stats: &mut Stats) -> Res<Vec<Conversation>> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read {dir}: {e}"))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&f).map_err(|e| e.to_string())?)
            .map_err(|e| format!("{}: {e}", f.display()))?;
        let name = f.file_stem().and_then(|s| s.to_str()).unwrap_or("?").to_string();
        let mut sessions: Vec<(u32, &Vec<Value>)> = v
            .as_object()
            .into_iter()
            .flatten()
            .filter_map(|(k, s)| Some((k.strip_prefix("session_")?.parse().ok()?, s.as_array()?)))
            .collect();
        sessions.sort_by_key(|s| s.0);
        let mut turns = Vec::new();
        for (_, msgs) in sessions {
            for m in msgs {
                let Some((ds, dt)) = m["dia_id"].as_str().and_then(parse_dia) else { continue };
                let Some(at) = m["date_time"].as_str().and_then(parse_realtalk_date) else { continue };
                let speaker = m["speaker"].as_str().unwrap_or("").trim().to_string();
                let dia = format!("D{ds}:{dt}");
                let content = format!("{speaker}: {}", m["clean_text"].as_str().unwrap_or("").trim());
                turns.push(Turn { id: turn_id(&name, &dia), dia, session: ds, content, occurred_at: iso(at), speaker });
            }
        }
        out.push(finish(name, turns, &v["qa"], stats));
    }
    Ok(out)
}

// ----------------------------------------------------------------------------------------- store

struct Store {
    conn: Connection,
    by_id: HashMap<String, usize>,
}

fn build_store(c: &Conversation, embedder: Option<&cmp::embed::Embedder>) -> Res<Store> {
    let sql = |e: rusqlite::Error| format!("{}: {e}", c.name);
    let conn = Connection::open_in_memory().map_err(sql)?;
    cmp::register(&conn).map_err(sql)?;
    conn.query_row("SELECT cmp_init()", [], |_| Ok(())).map_err(sql)?;
    // A fixed cursor key: the pack cursor's tag (and so the rendered token count) is then the same
    // in every run, and the output of the harness is reproducible to the token.
    conn.execute("UPDATE cmp_meta SET value = 'harness' WHERE key = 'secret'", []).map_err(sql)?;
    conn.execute_batch(
        "CREATE VIRTUAL TABLE base_fts USING fts5(content, tokenize = 'porter unicode61 remove_diacritics 2'); BEGIN",
    )
    .map_err(sql)?;
    {
        let mut ins = conn
            .prepare(
                "INSERT INTO cmp_memories(id, content, kind, occurred_at, captured_at, entities)
                 VALUES (?1, ?2, 'episodic', ?3, ?3, ?4)",
            )
            .map_err(sql)?;
        let mut base = conn.prepare("INSERT INTO base_fts(rowid, content) VALUES (?1, ?2)").map_err(sql)?;
        for (i, t) in c.turns.iter().enumerate() {
            let entities = if t.speaker.is_empty() { json!([]) } else { json!([t.speaker]) };
            ins.execute(params![t.id, t.content, t.occurred_at, entities.to_string()]).map_err(sql)?;
            if let Some(e) = embedder {
                // The message as said: the speaker is the memory's entity, and a question that
                // names the wrong speaker (LoCoMo's adversarial ones) must not match by name.
                let said = t.content.strip_prefix(&format!("{}: ", t.speaker)).unwrap_or(&t.content);
                let blob = cmp::embed::to_blob(&e.embed(said));
                conn.execute("UPDATE cmp_memories SET embedding = ?1 WHERE id = ?2", params![blob, t.id])
                    .map_err(sql)?;
            }
            base.execute(params![i as i64, t.content]).map_err(sql)?;
        }
    }
    conn.execute_batch("COMMIT").map_err(sql)?;
    Ok(Store { conn, by_id: c.turns.iter().enumerate().map(|(i, t)| (t.id.clone(), i)).collect() })
}

/// BM25 over a plain FTS5 table, queried with the task's words OR-ed (what a user would write).
fn bm25_ranking(store: &Store, task: &str) -> Res<Vec<usize>> {
    let words = cmp::text::query_terms(task, cmp::retrieve::MAX_TERMS);
    let Some(expr) = cmp::retrieve::fts::match_expr(&words) else { return Ok(Vec::new()) };
    let mut st = store
        .conn
        .prepare_cached("SELECT rowid FROM base_fts WHERE base_fts MATCH ?1 ORDER BY bm25(base_fts), rowid LIMIT 200")
        .map_err(|e| e.to_string())?;
    let rows = st.query_map([expr], |r| r.get::<_, i64>(0)).map_err(|e| e.to_string())?;
    rows.map(|r| r.map(|x| x as usize).map_err(|e| e.to_string())).collect()
}

/// cmp's own ranking: the `cmp_search` order.
fn search_ranking(store: &Store, task: &str, opts: &str) -> Res<Vec<usize>> {
    let mut st = store.conn.prepare_cached("SELECT ref FROM cmp_search(?1, ?2)").map_err(|e| e.to_string())?;
    let rows = st.query_map(params![task, opts], |r| r.get::<_, String>(0)).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for r in rows {
        let r = r.map_err(|e| e.to_string())?;
        out.push(*store.by_id.get(&r).ok_or(format!("cmp_search returned unknown ref {r}"))?);
    }
    Ok(out)
}

fn content_cost(text: &str) -> usize {
    ((text.chars().count() as f64 / CHARS_PER_TOKEN).ceil() as usize).max(1) + ITEM_OVERHEAD
}

/// Stems of the words of every speaker's name in a conversation.
fn speaker_stems(c: &Conversation) -> HashSet<String> {
    let names: BTreeSet<&str> = c.turns.iter().map(|t| t.speaker.as_str()).collect();
    names.iter().flat_map(|n| cmp::text::query_terms(n, 8)).map(|w| cmp::text::stem(&w)).collect()
}

/// The turns that share a stemmed search word with the task, a speaker's name aside: what a
/// retriever that finds by words (and not by a speaker every message of theirs names) can reach.
fn word_reachable(c: &Conversation, task: &str, speakers: &HashSet<String>) -> HashSet<usize> {
    let stem_set = |t: &str, cap| -> HashSet<String> {
        cmp::text::query_terms(t, cap).iter().map(|w| cmp::text::stem(w)).filter(|w| !speakers.contains(w)).collect()
    };
    let task = stem_set(task, cmp::retrieve::MAX_TERMS);
    (0..c.turns.len()).filter(|&i| !stem_set(&c.turns[i].content, usize::MAX).is_disjoint(&task)).collect()
}

/// Greedy fill in ranking order: take what fits, skip what does not, keep going.
fn fill(ranking: &[usize], room: usize, cost: impl Fn(usize) -> usize) -> Vec<usize> {
    let mut used = 0;
    let mut out = Vec::new();
    for &i in ranking {
        let c = cost(i);
        if used + c <= room {
            used += c;
            out.push(i);
        }
    }
    out
}

fn o200k(text: &str) -> usize {
    tiktoken_rs::o200k_base_singleton().encode_ordinary(text).len()
}

/// The plain list a user would paste: `- [ref] content` lines, filled while the list fits `budget`
/// real tokens.
fn plain_list(c: &Conversation, ranking: &[usize], budget: usize) -> Vec<usize> {
    fill(ranking, budget, |i| o200k(&format!("- [{}] {}\n", c.turns[i].id, c.turns[i].content)))
}

struct Pack {
    refs: Vec<usize>,
    /// What the pack shows of each packed turn (parallel to `refs`): a head sentence, a cut or the
    /// whole text.
    shown: Vec<String>,
    content: usize,
    used: usize,
    real: usize,
    counted_by: String,
}

fn call(store: &Store, task: &str, model: &str, budget: i64, opts: &str) -> Res<Pack> {
    let text: String = store
        .conn
        .prepare_cached("SELECT cmp_context(?1, ?2, ?3, NULL, ?4)")
        .and_then(|mut st| st.query_row(params![task, model, budget, opts], |r| r.get(0)))
        .map_err(|e| format!("cmp_context({task:?}, {model}, {budget}): {e}"))?;
    let mut items: Vec<(String, String)> = Vec::new();
    let (used, counted_by) = if text.starts_with('{') {
        let v: Value = serde_json::from_str(&text).map_err(|e| format!("envelope is not JSON: {e}"))?;
        for it in v["items"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
            items.push((it["ref"].as_str().unwrap_or("").into(), it["content"].as_str().unwrap_or("").into()));
        }
        (
            v["budget"]["used"].as_u64().unwrap_or(u64::MAX) as usize,
            v["budget"]["counted_by"].as_str().unwrap_or("").into(),
        )
    } else {
        // markdown: "model X · used/tokens tokens (counter) · ...", items as "[ref · tag] content",
        // a memory's further lines indented by two spaces (headings and day lines are not).
        for l in text.lines() {
            if let Some(r) = l.strip_prefix('[').and_then(|x| x.split([' ', ']']).next()) {
                let shown = l.split_once("] ").map_or("", |x| x.1);
                items.push((r.to_string(), shown.to_string()));
            } else if let (Some(last), Some(more)) = (items.last_mut(), l.strip_prefix("  ")) {
                last.1.push('\n');
                last.1.push_str(more);
            }
        }
        let line = text.lines().nth(1).unwrap_or("");
        let used = line.split(" · ").nth(1).and_then(|s| s.split('/').next()).and_then(|s| s.parse().ok());
        let by = line.split('(').nth(1).and_then(|s| s.split(')').next()).unwrap_or("");
        (used.unwrap_or(usize::MAX), by.to_string())
    };
    if let Ok(path) = std::env::var("MEMEVAL_DUMP") {
        // Every output, for calibrating the token estimate (tokencal --lines).
        use std::io::Write as _;
        if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
            let _ = writeln!(f, "{text}");
        }
    }
    let known: Vec<(usize, String)> =
        items.iter().filter_map(|(r, c)| store.by_id.get(r).map(|&i| (i, c.clone()))).collect();
    let (refs, shown) = known.into_iter().unzip();
    let content = items.iter().map(|(_, c)| content_cost(c)).sum();
    Ok(Pack { refs, shown, content, used, real: o200k(&text), counted_by })
}

// ---------------------------------------------------------------------------------------- metrics

/// The stemmed words of `s` that carry content (stopwords dropped; numbers kept).
fn content_stems(s: &str) -> HashSet<String> {
    cmp::text::words(s).iter().filter(|w| !cmp::text::is_stopword(w)).map(|w| cmp::text::stem(w)).collect()
}

/// The packed turns whose whole text the pack shows (`shown` parallel to `refs`): every content word
/// of the turn is in what is shown of it. A head sentence or a cut of a longer turn is not.
fn shown_in_full(c: &Conversation, refs: &[usize], shown: &[String]) -> Vec<usize> {
    refs.iter()
        .zip(shown)
        .filter(|(&i, s)| content_stems(&c.turns[i].content).is_subset(&content_stems(s)))
        .map(|(&i, _)| i)
        .collect()
}

/// The share of a question's answer words that the pack's shown text holds, over the answer words its
/// evidence turns hold (the words a model could read there); None when the evidence holds none of
/// them (an answer worked out from dates, or worded apart from the messages).
fn answer_shown(c: &Conversation, q: &Question, shown: &[impl AsRef<str>]) -> Option<f64> {
    let answer = content_stems(&q.answer);
    let ev: HashSet<&str> = q.evidence.iter().map(String::as_str).collect();
    let mut findable: HashSet<String> = HashSet::new();
    for t in c.turns.iter().filter(|t| ev.contains(t.dia.as_str())) {
        findable.extend(content_stems(&t.content).intersection(&answer).cloned());
    }
    if findable.is_empty() {
        return None;
    }
    let seen: HashSet<String> = shown.iter().flat_map(|s| content_stems(s.as_ref())).collect();
    Some(findable.intersection(&seen).count() as f64 / findable.len() as f64)
}

/// Recall sums for one system over questions: (turn, session, n).
#[derive(Debug, Default, Clone, Copy)]
struct Acc {
    turn: f64,
    session: f64,
    n: usize,
    tokens: f64,
}

impl Acc {
    fn add(&mut self, c: &Conversation, q: &Question, pack: &[usize], tokens: usize) {
        let dias: HashSet<&str> = pack.iter().map(|&i| c.turns[i].dia.as_str()).collect();
        let sessions: HashSet<u32> = pack.iter().map(|&i| c.turns[i].session).collect();
        let hit = q.evidence.iter().filter(|e| dias.contains(e.as_str())).count();
        let ev_sessions: BTreeSet<u32> = q.evidence.iter().filter_map(|e| parse_dia(e).map(|d| d.0)).collect();
        let shit = ev_sessions.iter().filter(|s| sessions.contains(s)).count();
        self.turn += hit as f64 / q.evidence.len() as f64;
        self.session += shit as f64 / ev_sessions.len().max(1) as f64;
        self.n += 1;
        self.tokens += tokens as f64;
    }
    fn merge(&mut self, o: &Acc) {
        self.turn += o.turn;
        self.session += o.session;
        self.n += o.n;
        self.tokens += o.tokens;
    }
    fn pct(&self) -> f64 {
        100.0 * self.turn / self.n.max(1) as f64
    }
    fn spct(&self) -> f64 {
        100.0 * self.session / self.n.max(1) as f64
    }
    fn mean_tokens(&self) -> f64 {
        self.tokens / self.n.max(1) as f64
    }
}

#[derive(Debug, Default, Clone)]
struct Cell {
    /// system → per category (0..5) accumulators.
    acc: BTreeMap<&'static str, [Acc; 5]>,
    /// system → (sum of [`answer_shown`] shares, questions it counts), categories 1–4.
    answers: BTreeMap<&'static str, (f64, usize)>,
}

impl Cell {
    fn add_answer(&mut self, sys: &'static str, cat: u8, share: Option<f64>) {
        if let (Some(x), true) = (share, (1..=4).contains(&cat)) {
            let e = self.answers.entry(sys).or_default();
            e.0 += x;
            e.1 += 1;
        }
    }
    /// Percentage of answer words shown, and the questions counted.
    fn answer_pct(&self, sys: &str) -> (f64, usize) {
        self.answers.get(sys).map_or((0.0, 0), |&(x, n)| (100.0 * x / n.max(1) as f64, n))
    }
    fn add(&mut self, sys: &'static str, cat: u8, c: &Conversation, q: &Question, pack: &[usize], tokens: usize) {
        self.acc.entry(sys).or_default()[(cat - 1) as usize].add(c, q, pack, tokens);
    }
    fn overall(&self, sys: &str) -> Acc {
        let mut a = Acc::default();
        if let Some(v) = self.acc.get(sys) {
            v[..4].iter().for_each(|x| a.merge(x));
        }
        a
    }
    fn cat(&self, sys: &str, cat: usize) -> Acc {
        self.acc.get(sys).map(|v| v[cat]).unwrap_or_default()
    }
}

#[derive(Debug, Default)]
struct Checks {
    envelopes: usize,
    over_budget: usize,
    gpt_used_mismatch: usize,
    real_over_budget_gpt: usize,
    /// Estimated profiles: smallest estimate/o200k ratio, and how many packs undercount by > 2 %.
    min_ratio: f64,
    undercount_2pct: usize,
    monotonicity: usize,
    own_ranking_losses: usize,
}

// ------------------------------------------------------------------------------------------- main

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("memeval: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Res<()> {
    let a = parse_args()?;
    let started = Instant::now();
    let mut checks = Checks { min_ratio: f64::MAX, ..Default::default() };
    // (dataset, profile, budget) → cell
    let mut cells: BTreeMap<(String, String, i64), Cell> = BTreeMap::new();
    // (dataset, conversation, profile, budget) → cell of the lead measures only
    let mut by_conv: BTreeMap<(String, String, String, i64), Cell> = BTreeMap::new();
    let mut loaded = Vec::new();
    for ds in &a.datasets {
        let mut stats = Stats::default();
        let convs = match ds.as_str() {
            "locomo" => load_locomo(&format!("{}/locomo10.json", a.data), false, &mut stats)?,
            "locomo-spread" => load_locomo(&format!("{}/locomo10.json", a.data), true, &mut stats)?,
            "realtalk" => load_realtalk(&format!("{}/realtalk-dev", a.data), &mut stats)?,
            other => return Err(format!("unknown dataset {other:?} (locomo, locomo-spread, realtalk)")),
        };
        let take = a.conversations.unwrap_or(convs.len()).min(convs.len());
        let nq: usize = convs[..take].iter().map(|c| a.questions.unwrap_or(usize::MAX).min(c.questions.len())).sum();
        let dated = dated_questions(&convs[..take], a.questions.unwrap_or(usize::MAX));
        let spread = spread_questions(&convs[..take], a.questions.unwrap_or(usize::MAX));
        println!(
            "dataset {ds}: {take} conversations, {nq} questions (evidence ids {}: {} unresolvable skipped, {} questions without evidence; {} of categories 1–4 name a day or a month, {} have evidence in two or more sessions)",
            stats.ids, stats.skipped, stats.questions_without_evidence, dated, spread
        );
        loaded.push((ds.clone(), convs.into_iter().take(take).collect::<Vec<_>>()));
    }
    let probe = Connection::open_in_memory().map_err(|e| e.to_string())?;
    cmp::register(&probe).map_err(|e| e.to_string())?;
    let mut max_budget: HashMap<String, i64> = HashMap::new();
    for m in &a.profiles {
        let j: String = probe.query_row("SELECT cmp_profile(?1)", [m], |r| r.get(0)).map_err(|e| e.to_string())?;
        let v: Value = serde_json::from_str(&j).map_err(|e| e.to_string())?;
        max_budget.insert(m.clone(), v["pack_token_budget"].as_i64().unwrap_or(i64::MAX));
    }
    let embedder = match &a.embedder {
        Some(dir) => {
            let e = cmp::embed::Embedder::shared(std::path::Path::new(dir)).map_err(|e| format!("--embedder: {e}"))?;
            println!("embedder: the model in {dir} ({} dimensions) embeds every message and question", e.dims());
            Some(e)
        }
        None => None,
    };
    for (ds, convs) in &loaded {
        for c in convs {
            let store = build_store(c, embedder.as_deref())?;
            let speakers = speaker_stems(c);
            for q in c.questions.iter().take(a.questions.unwrap_or(usize::MAX)) {
                let mut opts = json!({"now": c.now});
                if let Some(dir) = &a.embedder {
                    opts["embedder"] = json!(dir);
                }
                let mut md_opts = opts.clone();
                md_opts["format"] = json!("markdown");
                let (opts, md_opts) = (opts.to_string(), md_opts.to_string());
                let bm25 = bm25_ranking(&store, &q.text)?;
                let search = search_ranking(&store, &q.text, &opts)?;
                let reachable = word_reachable(c, &q.text, &speakers);
                let by_words = |v: &[usize]| v.iter().copied().filter(|i| reachable.contains(i)).collect::<Vec<_>>();
                for model in &a.profiles {
                    let mut prev: Option<HashSet<usize>> = None;
                    for &b in &a.budgets {
                        let smp = call(&store, &q.text, model, b, &opts)?;
                        let md = call(&store, &q.text, model, b, &md_opts)?;
                        let allotted = b.clamp(300, max_budget[model]) as usize;
                        for p in [&smp, &md] {
                            checks.envelopes += 1;
                            checks.over_budget += usize::from(p.used > allotted);
                            if p.counted_by == "o200k_base" {
                                checks.gpt_used_mismatch += usize::from(p.used != p.real);
                                checks.real_over_budget_gpt += usize::from(p.real > allotted);
                            } else if p.counted_by == "estimate" {
                                let r = p.used as f64 / p.real.max(1) as f64;
                                checks.min_ratio = checks.min_ratio.min(r);
                                checks.undercount_2pct += usize::from(r < 0.98);
                            }
                        }
                        let now: HashSet<usize> = smp.refs.iter().copied().collect();
                        if let Some(prev) = &prev {
                            checks.monotonicity += usize::from(!prev.is_subset(&now));
                        }
                        prev = Some(now);
                        let cell = cells.entry((ds.clone(), model.clone(), b)).or_default();
                        let cost = |i: usize| content_cost(&c.turns[i].content);
                        let base_c = fill(&bm25, smp.content, cost);
                        let own_c = fill(&search, smp.content, cost);
                        cell.add("cmp", q.category, c, q, &smp.refs, smp.content);
                        cell.add("bm25@C", q.category, c, q, &base_c, smp.content);
                        cell.add("search@C", q.category, c, q, &own_c, smp.content);
                        cell.add("cmp smp", q.category, c, q, &smp.refs, smp.real);
                        cell.add("cmp md", q.category, c, q, &md.refs, md.real);
                        cell.add("word ceiling", q.category, c, q, &reachable.iter().copied().collect::<Vec<_>>(), 0);
                        cell.add("cmp by words", q.category, c, q, &by_words(&smp.refs), 0);
                        cell.add("bm25@C by words", q.category, c, q, &by_words(&base_c), 0);
                        let (bm25_list, own_list) =
                            (plain_list(c, &bm25, b as usize), plain_list(c, &search, b as usize));
                        cell.add("bm25 list", q.category, c, q, &bm25_list, b as usize);
                        let conv = by_conv.entry((ds.clone(), c.name.clone(), model.clone(), b)).or_default();
                        conv.add("cmp", q.category, c, q, &smp.refs, smp.content);
                        conv.add("bm25@C", q.category, c, q, &base_c, smp.content);
                        conv.add("cmp md", q.category, c, q, &md.refs, md.real);
                        conv.add("bm25 list", q.category, c, q, &bm25_list, b as usize);
                        cell.add("search list", q.category, c, q, &own_list, b as usize);
                        cell.add("cmp smp full", q.category, c, q, &shown_in_full(c, &smp.refs, &smp.shown), 0);
                        cell.add("cmp md full", q.category, c, q, &shown_in_full(c, &md.refs, &md.shown), 0);
                        let texts = |v: &[usize]| v.iter().map(|&i| c.turns[i].content.as_str()).collect::<Vec<_>>();
                        cell.add_answer("cmp smp", q.category, answer_shown(c, q, &smp.shown));
                        cell.add_answer("cmp md", q.category, answer_shown(c, q, &md.shown));
                        cell.add_answer("bm25 list", q.category, answer_shown(c, q, &texts(&bm25_list)));
                        cell.add_answer("search list", q.category, answer_shown(c, q, &texts(&own_list)));
                        let hits = |v: &[usize]| {
                            let s: HashSet<&str> = v.iter().map(|&i| c.turns[i].dia.as_str()).collect();
                            q.evidence.iter().filter(|e| s.contains(e.as_str())).count()
                        };
                        checks.own_ranking_losses += usize::from(hits(&smp.refs) < hits(&own_c));
                    }
                }
            }
            eprintln!("  {ds}/{}: done ({:.0} s)", c.name, started.elapsed().as_secs_f64());
        }
    }
    report(&a, &cells, &checks);
    report_by_conversation(&a, &loaded, &by_conv);
    println!("\n{} envelopes in {:.0} s", checks.envelopes, started.elapsed().as_secs_f64());
    let failed = checks.over_budget + checks.gpt_used_mismatch + checks.real_over_budget_gpt + checks.monotonicity;
    if failed > 0 {
        return Err(format!("{failed} envelope checks failed"));
    }
    Ok(())
}

/// The leads of every conversation on its own: how far a figure of the tables above can move from
/// one conversation to the next, which is what a conversation nobody here has seen may show.
fn report_by_conversation(
    a: &Args,
    loaded: &[(String, Vec<Conversation>)],
    by_conv: &BTreeMap<(String, String, String, i64), Cell>,
) {
    for (ds, convs) in loaded {
        println!("\n### {ds}: by conversation (categories 1–4; cmp − BM25 fill at equal content tokens / markdown − plain BM25 list)\n");
        let mut head = "| profile | conversation | questions |".to_string();
        for b in &a.budgets {
            head.push_str(&format!(" {b} |"));
        }
        println!("{head}\n|{}", "---|".repeat(3 + a.budgets.len()));
        for p in &a.profiles {
            for c in convs {
                let cells: Vec<Option<&Cell>> =
                    a.budgets.iter().map(|&b| by_conv.get(&(ds.clone(), c.name.clone(), p.clone(), b))).collect();
                let n = cells.iter().flatten().map(|cell| cell.overall("cmp").n).next().unwrap_or(0);
                let mut row = format!("| {p} | {} | {n} |", c.name);
                for cell in cells {
                    let Some(cell) = cell else {
                        row.push_str(" — |");
                        continue;
                    };
                    let lead = |x: &str, y: &str| cell.overall(x).pct() - cell.overall(y).pct();
                    row.push_str(&format!(" {:+.1} / {:+.1} |", lead("cmp", "bm25@C"), lead("cmp md", "bm25 list")));
                }
                println!("{row}");
            }
        }
    }
}

/// `row` of each (profile, budget) cell of dataset `ds` that ran, in the order of the arguments.
fn rows(a: &Args, cells: &BTreeMap<(String, String, i64), Cell>, ds: &str, mut row: impl FnMut(&str, i64, &Cell)) {
    for p in &a.profiles {
        for &b in &a.budgets {
            if let Some(cell) = cells.get(&(ds.to_string(), p.clone(), b)) {
                row(p, b, cell);
            }
        }
    }
}

fn report(a: &Args, cells: &BTreeMap<(String, String, i64), Cell>, checks: &Checks) {
    for ds in &a.datasets {
        println!("\n### {ds}: selection at equal content tokens (categories 1–4, turn recall %)\n");
        println!("| profile | budget | content C | cmp | BM25 fill to C | own ranking fill to C | cmp − BM25 | cmp − own | cmp session | BM25 session |");
        println!("|---|---|---|---|---|---|---|---|---|---|");
        rows(a, cells, ds, |p, b, cell| {
            let (s, base, own) = (cell.overall("cmp"), cell.overall("bm25@C"), cell.overall("search@C"));
            println!(
                "| {p} | {b} | {:.0} | {:.1} | {:.1} | {:.1} | {:+.1} | {:+.1} | {:.1} | {:.1} |",
                s.mean_tokens(),
                s.pct(),
                base.pct(),
                own.pct(),
                s.pct() - base.pct(),
                s.pct() - own.pct(),
                s.spct(),
                base.spct()
            );
        });
        println!("\n### {ds}: what the model reads, at the budget in real tokens (o200k_base; turn recall %)\n");
        println!("| profile | budget | cmp SMP | cmp markdown | plain BM25 list | plain own-ranking list | markdown − list | SMP − list | SMP tokens | markdown tokens |");
        println!("|---|---|---|---|---|---|---|---|---|---|");
        rows(a, cells, ds, |p, b, cell| {
            let (smp, md, list, own) = (
                cell.overall("cmp smp"),
                cell.overall("cmp md"),
                cell.overall("bm25 list"),
                cell.overall("search list"),
            );
            println!(
                "| {p} | {b} | {:.1} | {:.1} | {:.1} | {:.1} | {:+.1} | {:+.1} | {:.0} | {:.0} |",
                smp.pct(),
                md.pct(),
                list.pct(),
                own.pct(),
                md.pct() - list.pct(),
                smp.pct() - list.pct(),
                smp.mean_tokens(),
                md.mean_tokens()
            );
        });
        println!("\n### {ds}: what the model can read of the evidence (o200k_base, at the budget; categories 1–4)\n");
        println!("Turn recall counts a turn packed at any rung; \"in full\" only a turn whose whole text is shown");
        println!("(a plain list shows every line in full). Answer words: of the answer's content words that its");
        println!("evidence turns hold, the share the pack's shown text holds (questions where the evidence holds none skipped).\n");
        println!("| profile | budget | SMP: turns / in full | markdown: turns / in full | plain BM25 list | answer words: SMP | markdown | plain BM25 list | plain own-ranking list | questions |");
        println!("|---|---|---|---|---|---|---|---|---|---|");
        rows(a, cells, ds, |p, b, cell| {
            let pct = |s: &str| cell.overall(s).pct();
            let ans = |s: &str| cell.answer_pct(s).0;
            println!(
                "| {p} | {b} | {:.1} / {:.1} | {:.1} / {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {} |",
                pct("cmp smp"),
                pct("cmp smp full"),
                pct("cmp md"),
                pct("cmp md full"),
                pct("bm25 list"),
                ans("cmp smp"),
                ans("cmp md"),
                ans("bm25 list"),
                ans("search list"),
                cell.answer_pct("bm25 list").1
            );
        });
        println!("\n### {ds}: what word matching can reach (equal content tokens; categories 1–4, turn recall %)\n");
        println!("Evidence that shares a search word with the question, a speaker's name aside (the ceiling of a");
        println!("retriever that finds by words), and each system's recall split into such evidence and the rest.\n");
        println!("| profile | budget | word ceiling | cmp: by words / other | BM25 fill: by words / other | cmp − BM25 by words | cmp − BM25 other |");
        println!("|---|---|---|---|---|---|---|");
        rows(a, cells, ds, |p, b, cell| {
            let (ceil, s, sw, base, bw) = (
                cell.overall("word ceiling").pct(),
                cell.overall("cmp").pct(),
                cell.overall("cmp by words").pct(),
                cell.overall("bm25@C").pct(),
                cell.overall("bm25@C by words").pct(),
            );
            println!(
                "| {p} | {b} | {ceil:.1} | {sw:.1} / {:.1} | {bw:.1} / {:.1} | {:+.1} | {:+.1} |",
                s - sw,
                base - bw,
                sw - bw,
                (s - sw) - (base - bw)
            );
        });
        println!("\n### {ds}: per category (equal content tokens; cmp / BM25 fill, turn recall %)\n");
        let mut head = "| profile | budget |".to_string();
        for c in CATEGORIES {
            head.push_str(&format!(" {c} |"));
        }
        println!("{head}\n|---|---|---|---|---|---|---|");
        rows(a, cells, ds, |p, b, cell| {
            let mut row = format!("| {p} | {b} |");
            for k in 0..5 {
                let (s, base) = (cell.cat("cmp", k), cell.cat("bm25@C", k));
                row.push_str(&format!(" {:.1} / {:.1} (n={}) |", s.pct(), base.pct(), s.n));
            }
            println!("{row}");
        });
    }
    println!("\n### checks\n");
    println!("- envelopes: {}", checks.envelopes);
    println!("- used > token_budget: {}", checks.over_budget);
    println!(
        "- gpt: used ≠ o200k count of the output: {}; output over budget in o200k: {}",
        checks.gpt_used_mismatch, checks.real_over_budget_gpt
    );
    println!(
        "- estimated profiles: smallest estimate / o200k = {:.3}; packs undercounting o200k by more than 2 %: {}",
        if checks.min_ratio == f64::MAX { f64::NAN } else { checks.min_ratio },
        checks.undercount_2pct
    );
    println!("- budget monotonicity violations (SMP refs): {}", checks.monotonicity);
    println!(
        "- packs holding fewer evidence turns than cmp's own ranking filled to the same content: {}",
        checks.own_ranking_losses
    );
}
