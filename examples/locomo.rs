//! LoCoMo quality harness: does `cmp_context` put the evidence of a question into the pack, compared
//! with plain FTS5 BM25 cut at the same budget with the same token estimate?
//!
//! ```text
//! cargo run --release --example locomo -- [--data PATH] [--conversations N|all] [--questions N|all]
//!     [--budgets 500,1000,2000,4000] [--profiles generic,claude,gpt,cursor]
//!     [--system context|search] [--economy] [--smoke] [--json OUT] [--explain N]
//! ```
//!
//! Each LoCoMo conversation becomes a fresh in-memory store: one `episodic` memory per dialog turn,
//! `"Speaker: text"` (plus `[shares a photo of …]` when the turn carries an image caption), dated by
//! its session's `session_N_date_time` plus the turn index in seconds, `entities = [speaker]`,
//! `source_url = locomo://<sample_id>/<dia_id>` and a deterministic id derived from the dia_id, so
//! pack refs map back to dialog ids. Every question is a task; categories 1-4 make the overall
//! figures, category 5 (adversarial) is reported on its own. `now` = one day after the last turn.
//!
//! The baseline is a plain FTS5 table with cmp's tokenizer, queried with the same safe OR-query cmp
//! builds from the task, rows taken in BM25 order while Σ(tokens(content, model) + 12) fits the budget
//! (stopping at the first row that does not fit). The budget both sides get is the one cmp allots:
//! the asked budget clamped to [300, profile.pack_token_budget].
//!
//! `--system search` ranks with `cmp_search` (the fused retrieval candidates) cut at the budget the
//! same way as the baseline; it works without `cmp_context`. `--economy` replays each conversation's
//! questions as one session (`send: delta`) and compares the tokens sent with a stateless integration.
//! The data (CC BY-NC 4.0) is read from `../shared/data/locomo10.json`; it is never copied here.

use rusqlite::{params, Connection};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::Instant;

const DEFAULT_DATA: &str = "../shared/data/locomo10.json";
const ITEM_OVERHEAD: usize = 12;
const TOKENIZER: &str = "porter unicode61 remove_diacritics 2";
const ECONOMY_MODEL: &str = "claude";
const ECONOMY_BUDGET: i64 = 2000;
/// Questions per conversation in `--smoke` (the first ones, in file order).
const SMOKE_QUESTIONS: usize = 60;
const CATEGORY_NAMES: [&str; 5] = ["multi-hop", "temporal", "open-domain", "single-hop", "adversarial"];

type Res<T> = Result<T, String>;

// ------------------------------------------------------------------------------------------ args

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum System {
    Context,
    Search,
}

impl System {
    fn name(self) -> &'static str {
        match self {
            System::Context => "cmp_context",
            System::Search => "cmp_search",
        }
    }
}

#[derive(Debug, Clone)]
struct Args {
    data: String,
    conversations: Option<usize>,
    questions: Option<usize>,
    budgets: Vec<i64>,
    profiles: Vec<String>,
    system: System,
    economy: bool,
    smoke: bool,
    json: Option<String>,
    explain: usize,
}

const USAGE: &str =
    "usage: locomo [--data PATH] [--conversations N|all] [--questions N|all] [--budgets 500,1000,2000,4000] \
[--profiles generic,claude,gpt,cursor] [--system context|search] [--economy] [--smoke] [--json OUT] [--explain N]";

fn parse_args() -> Res<Args> {
    let mut a = Args {
        data: DEFAULT_DATA.into(),
        conversations: None,
        questions: None,
        budgets: vec![500, 1000, 2000, 4000],
        profiles: ["generic", "claude", "gpt", "cursor"].map(String::from).to_vec(),
        system: System::Context,
        economy: false,
        smoke: false,
        json: None,
        explain: 0,
    };
    let mut budgets_given = false;
    let mut convs_given = false;
    let mut questions_given = false;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value\n{USAGE}"));
        match flag.as_str() {
            "--data" => a.data = value("--data")?,
            "--conversations" => {
                let v = value("--conversations")?;
                convs_given = true;
                a.conversations = if v == "all" {
                    None
                } else {
                    Some(v.parse().map_err(|_| format!("--conversations must be a number or 'all', got {v:?}"))?)
                };
            }
            "--questions" => {
                let v = value("--questions")?;
                questions_given = true;
                a.questions = if v == "all" {
                    None
                } else {
                    Some(v.parse().map_err(|_| format!("--questions must be a number or 'all', got {v:?}"))?)
                };
            }
            "--budgets" => {
                budgets_given = true;
                a.budgets = value("--budgets")?
                    .split(',')
                    .map(|s| s.trim().parse::<i64>().map_err(|_| format!("--budgets: not an integer: {s:?}")))
                    .collect::<Res<_>>()?;
            }
            "--profiles" => {
                a.profiles =
                    value("--profiles")?.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect()
            }
            "--system" => {
                a.system = match value("--system")?.as_str() {
                    "context" | "cmp_context" => System::Context,
                    "search" | "cmp_search" => System::Search,
                    other => return Err(format!("--system must be context or search, got {other:?}")),
                }
            }
            "--economy" => a.economy = true,
            "--smoke" => a.smoke = true,
            "--json" => a.json = Some(value("--json")?),
            "--explain" => {
                let v = value("--explain")?;
                a.explain = v.parse().map_err(|_| format!("--explain must be a number, got {v:?}"))?;
            }
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    if a.smoke {
        if !convs_given {
            a.conversations = Some(1);
        }
        if !budgets_given {
            a.budgets = vec![1000];
        }
        if !questions_given {
            a.questions = Some(SMOKE_QUESTIONS);
        }
    }
    if a.budgets.is_empty() || a.profiles.is_empty() {
        return Err("--budgets and --profiles must not be empty".into());
    }
    a.budgets.sort_unstable();
    a.budgets.dedup();
    Ok(a)
}

// ------------------------------------------------------------------------------------------ data

/// ISO-8601 (UTC, whole seconds) of Unix seconds: the extension's own formatter.
fn iso(epoch: i64) -> String {
    cmp::time::format(epoch as f64)
}

/// Parses LoCoMo's `"1:56 pm on 8 May, 2023"` into Unix seconds (the data carries no zone: UTC).
fn parse_session_date(s: &str) -> Option<i64> {
    let (time, date) = s.split_once(" on ")?;
    let mut tp = time.split_whitespace();
    let (hm, ampm) = (tp.next()?, tp.next()?.to_ascii_lowercase());
    let (h, mi) = hm.split_once(':')?;
    let (mut h, mi): (i64, i64) = (h.parse().ok()?, mi.parse().ok()?);
    if !(1..=12).contains(&h) || !(0..60).contains(&mi) {
        return None;
    }
    match ampm.as_str() {
        "am" if h == 12 => h = 0,
        "am" => {}
        "pm" if h != 12 => h += 12,
        "pm" => {}
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
    let m = MONTHS.iter().position(|n| *n == month || (month.len() >= 3 && n.starts_with(&month)))? as i64 + 1;
    if !(1..=31).contains(&day) {
        return None;
    }
    // The extension's own parser validates the date and does the calendar arithmetic.
    let midnight = cmp::time::parse(&format!("{year:04}-{m:02}-{day:02}"))? as i64;
    Some(midnight + h * 3600 + mi * 60)
}

/// `"D30:05"` → `(30, 5)`; None for anything that is not `D<session>:<turn>`.
fn parse_dia(s: &str) -> Option<(u32, u32)> {
    let rest = s.trim().strip_prefix('D')?;
    let (a, b) = rest.split_once(':')?;
    let digits = |x: &str| !x.is_empty() && x.bytes().all(|c| c.is_ascii_digit());
    if !digits(a) || !digits(b) {
        return None;
    }
    Some((a.parse().ok()?, b.parse().ok()?))
}

fn dia_key(s: u32, t: u32) -> String {
    format!("D{s}:{t}")
}

/// A deterministic memory id for a turn: `mem_` + 12 hex of FNV-1a(sample_id/dia_id). A hash, not an
/// encoding of the numbers, so id order (a tie-breaker in packing) carries no session order.
fn turn_id(sample: &str, dia: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in sample.bytes().chain([b'/']).chain(dia.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("mem_{:012x}", h >> 16)
}

#[derive(Debug, Clone)]
struct Turn {
    dia: String,
    session: u32,
    id: String,
    content: String,
    occurred_at: String,
    speaker: String,
    source_url: String,
}

#[derive(Debug, Clone)]
struct Question {
    text: String,
    category: u8,
    /// Normalised evidence dia ids that exist in the conversation, deduplicated.
    evidence: Vec<String>,
}

#[derive(Debug, Default, Clone, Copy)]
struct EvidenceStats {
    ids: usize,
    malformed: usize,
    unknown_turn: usize,
    padded: usize,
    multi: usize,
    questions_without_evidence: usize,
    bad_category: usize,
}

#[derive(Debug, Clone)]
struct Conversation {
    sample_id: String,
    turns: Vec<Turn>,
    now: String,
    questions: Vec<Question>,
}

fn load(path: &str, limit: Option<usize>, stats: &mut EvidenceStats) -> Res<Vec<Conversation>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!("cannot read LoCoMo data at {path}: {e} (pass --data PATH; see ../shared/data/README.md)")
    })?;
    let root: Value = serde_json::from_str(&text).map_err(|e| format!("{path}: not valid JSON: {e}"))?;
    let samples = root.as_array().ok_or(format!("{path}: expected a JSON array of conversations"))?;
    let take = limit.unwrap_or(samples.len()).min(samples.len());
    let mut out = Vec::with_capacity(take);
    for s in &samples[..take] {
        out.push(load_one(s, stats)?);
    }
    Ok(out)
}

fn load_one(s: &Value, stats: &mut EvidenceStats) -> Res<Conversation> {
    let sample_id = s["sample_id"].as_str().ok_or("a conversation has no sample_id")?.to_string();
    let conv = s["conversation"].as_object().ok_or(format!("{sample_id}: no conversation object"))?;
    let mut sessions: Vec<(u32, &Vec<Value>)> = conv
        .iter()
        .filter_map(|(k, v)| {
            let n = k.strip_prefix("session_")?.parse::<u32>().ok()?;
            Some((n, v.as_array()?))
        })
        .collect();
    sessions.sort_by_key(|s| s.0);
    let mut turns = Vec::new();
    let mut last = i64::MIN;
    for (n, list) in sessions {
        let key = format!("session_{n}_date_time");
        let date = conv.get(&key).and_then(Value::as_str).ok_or(format!("{sample_id}: {key} missing"))?;
        let base = parse_session_date(date).ok_or(format!("{sample_id}: cannot parse {key} = {date:?}"))?;
        for (i, t) in list.iter().enumerate() {
            let speaker = t["speaker"].as_str().unwrap_or("").trim().to_string();
            let raw_dia = t["dia_id"].as_str().unwrap_or("");
            let Some((ds, dt)) = parse_dia(raw_dia) else {
                return Err(format!("{sample_id}: turn with malformed dia_id {raw_dia:?}"));
            };
            let dia = dia_key(ds, dt);
            let mut content = format!("{speaker}: {}", t["text"].as_str().unwrap_or("").trim());
            if let Some(cap) = t["blip_caption"].as_str() {
                let cap = cap.trim();
                let cap = ["a photo of ", "a photography of ", "a picture of "]
                    .iter()
                    .find_map(|p| cap.strip_prefix(p))
                    .unwrap_or(cap);
                if !cap.is_empty() {
                    let _ = write!(content, " [shares a photo of {cap}]");
                }
            }
            let at = base + i as i64;
            last = last.max(at);
            turns.push(Turn {
                id: turn_id(&sample_id, &dia),
                source_url: format!("locomo://{sample_id}/{dia}"),
                dia,
                session: ds,
                content,
                occurred_at: iso(at),
                speaker,
            });
        }
    }
    if turns.is_empty() {
        return Err(format!("{sample_id}: no dialog turns"));
    }
    let mut ids = HashSet::new();
    for t in &turns {
        if !ids.insert(t.id.clone()) {
            return Err(format!("{sample_id}: id collision at {}", t.dia));
        }
    }
    let known: HashSet<&str> = turns.iter().map(|t| t.dia.as_str()).collect();
    let mut questions = Vec::new();
    for q in s["qa"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
        let text = match &q["question"] {
            Value::String(t) => t.clone(),
            _ => continue,
        };
        let Some(category) = q["category"].as_u64().filter(|c| (1..=5).contains(c)).map(|c| c as u8) else {
            stats.bad_category += 1;
            continue;
        };
        let mut evidence: Vec<String> = Vec::new();
        for e in q["evidence"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
            let Some(e) = e.as_str() else {
                stats.malformed += 1;
                continue;
            };
            let parts: Vec<&str> =
                e.split(|c: char| c == ';' || c == ',' || c.is_whitespace()).filter(|p| !p.is_empty()).collect();
            if parts.len() > 1 {
                stats.multi += 1;
            }
            for p in parts {
                stats.ids += 1;
                let Some((ds, dt)) = parse_dia(p) else {
                    stats.malformed += 1;
                    continue;
                };
                let k = dia_key(ds, dt);
                if k != p {
                    stats.padded += 1;
                }
                if !known.contains(k.as_str()) {
                    stats.unknown_turn += 1;
                    continue;
                }
                if !evidence.contains(&k) {
                    evidence.push(k);
                }
            }
        }
        if evidence.is_empty() {
            stats.questions_without_evidence += 1;
            continue;
        }
        questions.push(Question { text, category, evidence });
    }
    Ok(Conversation { sample_id, turns, now: iso(last + 86_400), questions })
}

// ----------------------------------------------------------------------------------------- store

struct Store {
    conn: Connection,
    by_id: HashMap<String, usize>,
}

fn build_store(c: &Conversation) -> Res<Store> {
    let sql = |e: rusqlite::Error| format!("{}: {e}", c.sample_id);
    let conn = Connection::open_in_memory().map_err(sql)?;
    cmp::register(&conn).map_err(sql)?;
    conn.query_row("SELECT cmp_init()", [], |_| Ok(())).map_err(sql)?;
    conn.execute_batch(&format!("CREATE VIRTUAL TABLE base_fts USING fts5(content, tokenize = '{TOKENIZER}');"))
        .map_err(sql)?;
    conn.execute_batch("BEGIN").map_err(sql)?;
    {
        let mut ins = conn
            .prepare(
                "INSERT INTO cmp_memories(id, content, kind, occurred_at, captured_at, source_url, entities)
                 VALUES (?1, ?2, 'episodic', ?3, ?3, ?4, ?5)",
            )
            .map_err(sql)?;
        let mut base = conn.prepare("INSERT INTO base_fts(rowid, content) VALUES (?1, ?2)").map_err(sql)?;
        for (i, t) in c.turns.iter().enumerate() {
            let entities = if t.speaker.is_empty() { "[]".to_string() } else { json!([t.speaker]).to_string() };
            ins.execute(params![t.id, t.content, t.occurred_at, t.source_url, entities]).map_err(sql)?;
            base.execute(params![i as i64, t.content]).map_err(sql)?;
        }
    }
    conn.execute_batch("COMMIT").map_err(sql)?;
    let by_id = c.turns.iter().enumerate().map(|(i, t)| (t.id.clone(), i)).collect();
    Ok(Store { conn, by_id })
}

/// What the SQL surface says about a profile: its name, chars per token and budget ceiling.
#[derive(Debug, Clone)]
struct Profile {
    asked: String,
    name: String,
    chars_per_token: f64,
    max_budget: i64,
}

impl Profile {
    fn tokens(&self, text: &str) -> usize {
        ((text.chars().count() as f64 / self.chars_per_token).ceil() as usize).max(1)
    }
    fn cost(&self, text: &str) -> usize {
        self.tokens(text) + ITEM_OVERHEAD
    }
    /// The budget cmp allots for an asked budget (SPEC: clamped to [300, pack_token_budget]).
    fn allotted(&self, ask: i64) -> i64 {
        ask.clamp(300, self.max_budget)
    }
}

fn resolve_profile(conn: &Connection, model: &str) -> Res<Profile> {
    let j: String = conn
        .query_row("SELECT cmp_profile(?1)", [model], |r| r.get(0))
        .map_err(|e| format!("cmp_profile({model:?}): {e}"))?;
    let v: Value = serde_json::from_str(&j).map_err(|e| format!("cmp_profile JSON: {e}"))?;
    let p = Profile {
        asked: model.into(),
        name: v["name"].as_str().unwrap_or(model).into(),
        chars_per_token: v["chars_per_token"].as_f64().ok_or("cmp_profile: no chars_per_token")?,
        max_budget: v["pack_token_budget"].as_i64().ok_or("cmp_profile: no pack_token_budget")?,
    };
    // The baselines' content estimate, ceil(chars / chars_per_token) + 12 per row, is the harness's
    // own selection measure; cmp budgets the rendered output with the model's counter (cmp_tokens),
    // which the envelope checks compare budget.used with.
    Ok(p)
}

// ---------------------------------------------------------------------------------------- systems

/// One pack: the turns it holds (indices into the conversation) and the tokens it uses.
#[derive(Debug, Clone, Default)]
struct Pack {
    turns: Vec<usize>,
    used: usize,
}

/// The baseline ranking: plain FTS5 BM25 over the same safe OR-query cmp builds from the task.
fn baseline_ranking(store: &Store, task: &str) -> Res<Vec<(usize, String)>> {
    let words = cmp::text::query_terms(task, cmp::retrieve::MAX_TERMS);
    let Some(expr) = cmp::retrieve::fts::match_expr(&words) else {
        return Ok(Vec::new());
    };
    let mut st = store
        .conn
        .prepare_cached(
            "SELECT rowid, content FROM base_fts WHERE base_fts MATCH ?1
             ORDER BY bm25(base_fts), rowid LIMIT ?2",
        )
        .map_err(|e| format!("baseline: {e}"))?;
    let rows = st
        .query_map(params![expr, cmp::retrieve::FTS_LIMIT as i64], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
        })
        .map_err(|e| format!("baseline: {e}"))?;
    let mut out = Vec::new();
    for row in rows {
        let (rowid, content) = row.map_err(|e| format!("baseline: {e}"))?;
        out.push((rowid as usize, content));
    }
    Ok(out)
}

/// The `cmp_search` ranking of a task (turn indices, best first). It depends on neither the model
/// nor the budget, so it is computed once per question.
fn search_ranking(store: &Store, task: &str, now_opts: &str) -> Res<Vec<(usize, String)>> {
    let mut st = store
        .conn
        .prepare_cached("SELECT ref, content FROM cmp_search(?1, ?2)")
        .map_err(|e| format!("cmp_search: {e}"))?;
    let rows = st
        .query_map(params![task, now_opts], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .map_err(|e| format!("cmp_search: {e}"))?;
    let mut out = Vec::new();
    for row in rows {
        let (r, content) = row.map_err(|e| format!("cmp_search: {e}"))?;
        let i = *store.by_id.get(&r).ok_or(format!("cmp_search returned unknown ref {r}"))?;
        out.push((i, content));
    }
    Ok(out)
}

/// A ranking cut at the budget: rows in order while Σ(tokens + 12) fits, stopping at the first row
/// that does not.
fn cut(ranking: &[(usize, String)], p: &Profile, budget: i64) -> Pack {
    let mut pack = Pack::default();
    for (i, content) in ranking {
        let cost = p.cost(content);
        if (pack.used + cost) as i64 > budget {
            break;
        }
        pack.used += cost;
        pack.turns.push(*i);
    }
    pack
}

/// One packed item as `--explain` prints it.
#[derive(Debug, Clone)]
struct ItemDetail {
    r#ref: String,
    layer: String,
    relevance: Option<f64>,
    compressed: Option<String>,
    content: String,
}

/// A parsed `cmp_context` envelope, with the checks every envelope must pass.
#[derive(Debug, Clone, Default)]
struct Envelope {
    refs: Vec<String>,
    /// Σ(tokens(item content) + 12) over items, recomputed here (the selection's content cost).
    cost: usize,
    /// `cmp_tokens` of the whole output for the same model, recomputed here (must equal `used`).
    counted: usize,
    used: usize,
    tokens: i64,
    new_refs: Vec<String>,
    evicted: Vec<String>,
    superseded: Vec<String>,
    layers: Vec<String>,
    /// Items whose content was shortened (`why.compressed`).
    compressed: usize,
    /// Per item, for `--explain`.
    detail: Vec<ItemDetail>,
}

fn call_context(
    conn: &Connection,
    task: &str,
    model: &str,
    budget: i64,
    session: Option<&str>,
    opts: &str,
    p: &Profile,
) -> Result<Envelope, rusqlite::Error> {
    let text: String = conn
        .prepare_cached("SELECT cmp_context(?1, ?2, ?3, ?4, ?5)")?
        .query_row(params![task, model, budget, session, opts], |r| r.get(0))?;
    let bad = |m: String| rusqlite::Error::ModuleError(format!("cmp_context envelope: {m}"));
    let v: Value = serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
    let counted: i64 =
        conn.prepare_cached("SELECT cmp_tokens(?1, ?2)")?.query_row(params![text, model], |r| r.get(0))?;
    let mut env = Envelope {
        counted: counted as usize,
        used: v["budget"]["used"].as_u64().ok_or_else(|| bad("budget.used missing".into()))? as usize,
        tokens: v["budget"]["tokens"].as_i64().ok_or_else(|| bad("budget.tokens missing".into()))?,
        ..Default::default()
    };
    for it in v["items"].as_array().ok_or_else(|| bad("items is not an array".into()))? {
        let r = it["ref"].as_str().ok_or_else(|| bad("item without ref".into()))?;
        env.refs.push(r.to_string());
        env.cost += p.cost(it["content"].as_str().unwrap_or(""));
        env.layers.push(it["layer"].as_str().unwrap_or("?").to_string());
        let compressed = it["why"]["compressed"].as_str().map(String::from);
        env.compressed += usize::from(compressed.is_some());
        env.detail.push(ItemDetail {
            r#ref: r.to_string(),
            layer: it["layer"].as_str().unwrap_or("?").to_string(),
            relevance: it["relevance"].as_f64(),
            compressed,
            content: it["content"].as_str().unwrap_or("").to_string(),
        });
    }
    if let Some(wm) = v["working_memory"].as_object() {
        for n in wm.get("new").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]) {
            if let Some(r) = n["ref"].as_str() {
                env.new_refs.push(r.into());
            }
        }
        for e in wm.get("evicted").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]) {
            if let Some(r) = e.as_str() {
                env.evicted.push(r.into());
            }
        }
        for s in wm.get("superseded").and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]) {
            if let Some(r) = s["ref"].as_str() {
                env.superseded.push(r.into());
            }
        }
    }
    Ok(env)
}

fn is_missing_function(e: &rusqlite::Error, name: &str) -> bool {
    e.to_string().contains(&format!("no such function: {name}"))
}

/// A diagnosis of one question where the cmp pack holds less evidence than the baseline: the
/// evidence turns with their baseline rank, then the pack (to stderr with `--explain N`).
fn explain(
    conv: &Conversation,
    q: &Question,
    p: &Profile,
    budget: i64,
    env: &Envelope,
    base_rank: &[(usize, String)],
    store: &Store,
) -> String {
    let short = |t: &str| -> String {
        let c: String = t.chars().take(110).collect();
        if c.len() < t.len() {
            format!("{c}…")
        } else {
            c
        }
    };
    let opts = json!({"now": conv.now}).to_string();
    let search: Vec<(String, String, String)> = store
        .conn
        .prepare_cached("SELECT ref, coalesce(printf('%.3f', relevance), 'null'), why FROM cmp_search(?1, ?2)")
        .and_then(|mut st| st.query_map(params![q.text, opts], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?.collect())
        .unwrap_or_default();
    let mut s =
        format!("\n--- {} [cat {}] {:?} (profile {}, budget {budget})\n", conv.sample_id, q.category, q.text, p.name);
    for e in &q.evidence {
        let Some(ti) = conv.turns.iter().position(|t| &t.dia == e) else { continue };
        let brank = base_rank.iter().position(|(i, _)| *i == ti);
        let in_pack = env.refs.iter().any(|r| store.by_id.get(r) == Some(&ti));
        let fused = search.iter().position(|row| row.0 == conv.turns[ti].id);
        let _ = writeln!(
            s,
            "  evidence {e} (baseline rank {}, cmp_search rank {} of {}{}, in cmp pack: {in_pack}): {}",
            brank.map_or("-".into(), |r| (r + 1).to_string()),
            fused.map_or("-".into(), |r| (r + 1).to_string()),
            search.len(),
            fused.map(|r| format!(" rel {} why {}", search[r].1, search[r].2)).unwrap_or_default(),
            short(&conv.turns[ti].content)
        );
    }
    let _ = writeln!(s, "  cmp pack: {} items, used {}/{}", env.refs.len(), env.used, env.tokens);
    for d in &env.detail {
        let dia = store.by_id.get(&d.r#ref).map_or("?", |&i| conv.turns[i].dia.as_str());
        let _ = writeln!(
            s,
            "    {dia:>7} {:<8} rel {} {}{}",
            d.layer,
            d.relevance.map_or("null".into(), |x| format!("{x:.3}")),
            d.compressed.as_deref().map(|c| format!("[{c}] ")).unwrap_or_default(),
            short(&d.content)
        );
    }
    s
}

// ---------------------------------------------------------------------------------------- metrics

#[derive(Debug, Default, Clone, Copy)]
struct Acc {
    n: usize,
    turn_recall: f64,
    session_recall: f64,
    tokens: f64,
    items: f64,
}

impl Acc {
    fn add(&mut self, q: &Question, conv: &Conversation, pack: &Pack) {
        let (t, s) = recall(q, conv, &pack.turns);
        self.n += 1;
        self.turn_recall += t;
        self.session_recall += s;
        self.tokens += pack.used as f64;
        self.items += pack.turns.len() as f64;
    }
    fn merge(&mut self, o: &Acc) {
        self.n += o.n;
        self.turn_recall += o.turn_recall;
        self.session_recall += o.session_recall;
        self.tokens += o.tokens;
        self.items += o.items;
    }
    fn mean(&self, x: f64) -> f64 {
        if self.n == 0 {
            f64::NAN
        } else {
            x / self.n as f64
        }
    }
    fn json(&self) -> Value {
        json!({
            "questions": self.n,
            "turn_recall": round4(self.mean(self.turn_recall)),
            "session_recall": round4(self.mean(self.session_recall)),
            "mean_tokens": round4(self.mean(self.tokens)),
            "mean_items": round4(self.mean(self.items)),
        })
    }
}

fn round4(x: f64) -> Value {
    if x.is_finite() {
        json!((x * 10_000.0).round() / 10_000.0)
    } else {
        Value::Null
    }
}

/// (turn-level recall, session-level recall) of one pack for one question.
fn recall(q: &Question, conv: &Conversation, pack: &[usize]) -> (f64, f64) {
    let dias: HashSet<&str> = pack.iter().map(|&i| conv.turns[i].dia.as_str()).collect();
    let sessions: HashSet<u32> = pack.iter().map(|&i| conv.turns[i].session).collect();
    let hit = q.evidence.iter().filter(|e| dias.contains(e.as_str())).count();
    let ev_sessions: BTreeSet<u32> = q.evidence.iter().filter_map(|e| parse_dia(e).map(|d| d.0)).collect();
    let shit = ev_sessions.iter().filter(|s| sessions.contains(s)).count();
    (
        hit as f64 / q.evidence.len() as f64,
        if ev_sessions.is_empty() { 0.0 } else { shit as f64 / ev_sessions.len() as f64 },
    )
}

/// Accumulators of one (profile, budget) cell: [system, baseline] × category 1..=5.
#[derive(Debug, Default, Clone)]
struct Cell {
    sys: [Acc; 5],
    base: [Acc; 5],
}

impl Cell {
    fn overall(accs: &[Acc; 5]) -> Acc {
        let mut a = Acc::default();
        for x in &accs[..4] {
            a.merge(x);
        }
        a
    }
}

#[derive(Debug, Default)]
struct Checks {
    /// Envelopes where budget.used > budget.tokens.
    over_budget: usize,
    /// Envelopes where budget.used differs from cmp_tokens(output, model) recomputed here.
    used_mismatch: usize,
    /// Envelopes whose budget.tokens differs from the clamp the harness expects.
    tokens_mismatch: usize,
    /// (profile, question, smaller budget, larger budget) where a ref packed at the smaller budget is
    /// missing at the larger one (reference §4 budget monotonicity).
    monotonicity: usize,
    monotonicity_examples: Vec<String>,
    /// Items packed, and how many of them were shortened by the compression ladder.
    items: usize,
    compressed: usize,
    /// Refs that do not belong to the conversation.
    unknown_refs: usize,
    /// Items per layer, over every envelope.
    layers: BTreeMap<String, usize>,
    envelopes: usize,
}

// -------------------------------------------------------------------------------------- economy

#[derive(Debug, Default)]
struct Economy {
    calls: usize,
    stateless_tokens: usize,
    stateless_content_tokens: usize,
    delta_tokens: usize,
    delta_content_tokens: usize,
    delta_items_not_new: usize,
    recall_questions: usize,
    stateless_recall: f64,
    union_recall: f64,
    mirror_recall: f64,
    per_conversation: Vec<Value>,
}

fn run_economy(conv: &Conversation, store: &Store, p: &Profile, eco: &mut Economy) -> Res<()> {
    let now_opts = json!({"now": conv.now}).to_string();
    let delta_opts = json!({"now": conv.now, "send": "delta"}).to_string();
    let (mut union, mut mirror): (HashSet<String>, HashSet<String>) = Default::default();
    let (mut st_tok, mut dl_tok) = (0usize, 0usize);
    let budget = p.allotted(ECONOMY_BUDGET);
    for q in &conv.questions {
        let stateless = call_context(&store.conn, &q.text, ECONOMY_MODEL, budget, None, &now_opts, p)
            .map_err(|e| format!("{} economy stateless: {e}", conv.sample_id))?;
        let delta = call_context(&store.conn, &q.text, ECONOMY_MODEL, budget, Some(&conv.sample_id), &delta_opts, p)
            .map_err(|e| format!("{} economy delta: {e}", conv.sample_id))?;
        eco.calls += 1;
        st_tok += stateless.cost;
        dl_tok += delta.cost;
        eco.stateless_content_tokens += stateless.cost - ITEM_OVERHEAD * stateless.refs.len();
        eco.delta_content_tokens += delta.cost - ITEM_OVERHEAD * delta.refs.len();
        let new: HashSet<&String> = delta.new_refs.iter().collect();
        eco.delta_items_not_new += delta.refs.iter().filter(|r| !new.contains(r)).count();
        for r in &delta.refs {
            union.insert(r.clone());
        }
        for r in delta.evicted.iter().chain(&delta.superseded) {
            mirror.remove(r);
        }
        for r in &delta.refs {
            mirror.insert(r.clone());
        }
        if q.category <= 4 {
            let to_idx = |set: &HashSet<String>| -> Vec<usize> {
                set.iter().filter_map(|r| store.by_id.get(r).copied()).collect()
            };
            let st_idx: Vec<usize> = stateless.refs.iter().filter_map(|r| store.by_id.get(r).copied()).collect();
            eco.recall_questions += 1;
            eco.stateless_recall += recall(q, conv, &st_idx).0;
            eco.union_recall += recall(q, conv, &to_idx(&union)).0;
            eco.mirror_recall += recall(q, conv, &to_idx(&mirror)).0;
        }
    }
    eco.stateless_tokens += st_tok;
    eco.delta_tokens += dl_tok;
    eco.per_conversation.push(json!({
        "sample_id": conv.sample_id,
        "questions": conv.questions.len(),
        "stateless_tokens": st_tok,
        "delta_tokens": dl_tok,
        "distinct_refs_delivered": union.len(),
    }));
    Ok(())
}

// ------------------------------------------------------------------------------------------- main

fn fmt3(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.3}")
    } else {
        "n/a".into()
    }
}

fn fmt_delta(x: f64) -> String {
    if x.is_finite() {
        format!("{x:+.3}")
    } else {
        "n/a".into()
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("locomo: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Res<()> {
    let args = parse_args()?;
    let started = Instant::now();
    let mut ev = EvidenceStats::default();
    let mut convs = load(&args.data, args.conversations, &mut ev)?;
    if let Some(n) = args.questions {
        for c in &mut convs {
            c.questions.truncate(n);
        }
    }
    if convs.is_empty() {
        return Err("no conversations to run".into());
    }

    // Probe the SQL surface once: profiles, and whether cmp_context exists in this build.
    let probe = Connection::open_in_memory().map_err(|e| e.to_string())?;
    cmp::register(&probe).map_err(|e| format!("cmp::register: {e}"))?;
    probe.query_row("SELECT cmp_init()", [], |_| Ok(())).map_err(|e| format!("cmp_init: {e}"))?;
    let profiles: Vec<Profile> = args.profiles.iter().map(|m| resolve_profile(&probe, m)).collect::<Res<_>>()?;
    let context_missing = match probe.prepare("SELECT cmp_context('probe')") {
        Ok(_) => None,
        Err(e) if is_missing_function(&e, "cmp_context") => Some(e.to_string()),
        Err(e) => return Err(format!("probing cmp_context: {e}")),
    };
    drop(probe);
    let mut notes: Vec<String> = Vec::new();
    let mut system = args.system;
    if let (System::Context, Some(err)) = (system, &context_missing) {
        let n = format!(
            "cmp_context is not available in this build ({err}); the cmp column falls back to \
             --system search (cmp_search ranking cut at the budget)"
        );
        eprintln!("locomo: NOTE: {n}");
        notes.push(n);
        system = System::Search;
    }
    let economy = args.economy && context_missing.is_none();
    if args.economy && !economy {
        let n = "--economy skipped: it needs cmp_context (sessions, send=delta)".to_string();
        eprintln!("locomo: NOTE: {n}");
        notes.push(n);
    }

    let n_questions: usize = convs.iter().map(|c| c.questions.len()).sum();
    eprintln!(
        "locomo: {} conversation(s), {} turns, {} questions; system {}, profiles {}, budgets {:?}",
        convs.len(),
        convs.iter().map(|c| c.turns.len()).sum::<usize>(),
        n_questions,
        system.name(),
        args.profiles.join(","),
        args.budgets
    );

    // cells[profile][budget]
    let mut cells = vec![vec![Cell::default(); args.budgets.len()]; profiles.len()];
    let mut checks = Checks::default();
    let mut eco = Economy::default();
    let mut explain_left = args.explain;
    let eco_profile = if economy {
        let probe = Connection::open_in_memory().map_err(|e| e.to_string())?;
        cmp::register(&probe).map_err(|e| e.to_string())?;
        Some(resolve_profile(&probe, ECONOMY_MODEL)?)
    } else {
        None
    };

    for conv in &convs {
        let t0 = Instant::now();
        let store = build_store(conv)?;
        let now_opts = json!({"now": conv.now}).to_string();
        let questions = &conv.questions;
        let mut rankings = Vec::with_capacity(questions.len());
        for q in questions {
            let base = baseline_ranking(&store, &q.text)?;
            let search = match system {
                System::Search => search_ranking(&store, &q.text, &now_opts)?,
                System::Context => Vec::new(),
            };
            rankings.push((base, search));
        }
        for (pi, p) in profiles.iter().enumerate() {
            for (q, (base_rank, search_rank)) in questions.iter().zip(&rankings) {
                let ci = usize::from(q.category - 1);
                let mut prev: Option<(i64, Vec<String>)> = None;
                for (bi, &ask) in args.budgets.iter().enumerate() {
                    let budget = p.allotted(ask);
                    let base = cut(base_rank, p, budget);
                    let pack = match system {
                        System::Search => cut(search_rank, p, budget),
                        System::Context => {
                            let env =
                                call_context(&store.conn, &q.text, &p.asked, ask, None, &now_opts, p).map_err(|e| {
                                    format!("{} cmp_context({:?}, {}, {ask}): {e}", conv.sample_id, q.text, p.asked)
                                })?;
                            checks.envelopes += 1;
                            if env.used as i64 > env.tokens {
                                checks.over_budget += 1;
                            }
                            if env.used != env.counted {
                                checks.used_mismatch += 1;
                            }
                            if env.tokens != budget {
                                checks.tokens_mismatch += 1;
                            }
                            for l in &env.layers {
                                *checks.layers.entry(l.clone()).or_default() += 1;
                            }
                            if let Some((pb, prefs)) = &prev {
                                let now: HashSet<&String> = env.refs.iter().collect();
                                if let Some(lost) = prefs.iter().find(|r| !now.contains(r)) {
                                    checks.monotonicity += 1;
                                    if checks.monotonicity_examples.len() < 5 {
                                        checks.monotonicity_examples.push(format!(
                                            "{} {} {:?}: {lost} packed at {pb} but not at {budget}",
                                            conv.sample_id, p.asked, q.text
                                        ));
                                    }
                                }
                            }
                            let mut turns = Vec::with_capacity(env.refs.len());
                            for r in &env.refs {
                                match store.by_id.get(r) {
                                    Some(&i) => turns.push(i),
                                    None => checks.unknown_refs += 1,
                                }
                            }
                            checks.items += env.refs.len();
                            checks.compressed += env.compressed;
                            let pack = Pack { turns, used: env.used };
                            if explain_left > 0 && q.category <= 4 {
                                let (sys_r, base_r) = (recall(q, conv, &pack.turns).0, recall(q, conv, &base.turns).0);
                                if sys_r < base_r {
                                    explain_left -= 1;
                                    eprint!("{}", explain(conv, q, p, budget, &env, base_rank, &store));
                                }
                            }
                            prev = Some((budget, env.refs));
                            pack
                        }
                    };
                    let cell = &mut cells[pi][bi];
                    cell.sys[ci].add(q, conv, &pack);
                    cell.base[ci].add(q, conv, &base);
                }
            }
        }
        if let Some(p) = &eco_profile {
            run_economy(conv, &store, p, &mut eco)?;
        }
        eprintln!(
            "locomo: {} done ({} turns, {} questions) in {:.1}s",
            conv.sample_id,
            conv.turns.len(),
            conv.questions.len(),
            t0.elapsed().as_secs_f64()
        );
    }

    let report = render(&args, system, &profiles, &cells, &ev, &checks, &notes, n_questions);
    print!("{report}");
    if economy {
        print!("{}", render_economy(&eco));
    }
    println!("\n_{} s wall, command: `{}`_", started.elapsed().as_secs(), command_line());

    if let Some(out) = &args.json {
        let j = to_json(&args, system, &profiles, &cells, &ev, &checks, &notes, &eco, economy, &convs);
        std::fs::write(out, serde_json::to_string_pretty(&j).unwrap_or_default())
            .map_err(|e| format!("--json {out}: {e}"))?;
        eprintln!("locomo: wrote {out}");
    }

    let violations = checks.over_budget + checks.used_mismatch + checks.unknown_refs;
    if violations > 0 {
        return Err(format!(
            "{violations} envelope invariant violation(s): over_budget {}, used_mismatch {}, unknown_refs {}",
            checks.over_budget, checks.used_mismatch, checks.unknown_refs
        ));
    }
    if args.smoke && n_questions == 0 {
        return Err("smoke: no questions ran".into());
    }
    Ok(())
}

fn command_line() -> String {
    let rest: Vec<String> = std::env::args().skip(1).collect();
    format!("cargo run --release --example locomo -- {}", rest.join(" ")).trim_end().to_string()
}

#[allow(clippy::too_many_arguments)]
fn render(
    args: &Args,
    system: System,
    profiles: &[Profile],
    cells: &[Vec<Cell>],
    ev: &EvidenceStats,
    checks: &Checks,
    notes: &[String],
    n_questions: usize,
) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# LoCoMo evidence recall: {} vs FTS5 BM25 baseline\n", system.name());
    for n in notes {
        let _ = writeln!(s, "> NOTE: {n}\n");
    }
    let _ = writeln!(
        s,
        "{n_questions} questions with resolvable evidence. Evidence ids: {} read, {} zero-padded (normalised), \
         {} strings holding several ids (split), {} malformed (skipped), {} naming no turn (skipped); \
         {} question(s) left without evidence, {} with an unknown category (skipped).\n",
        ev.ids, ev.padded, ev.multi, ev.malformed, ev.unknown_turn, ev.questions_without_evidence, ev.bad_category
    );
    let _ = writeln!(
        s,
        "Overall = categories 1-4. Recall = share of evidence turns in the pack (turn) or of evidence \
         sessions with a turn in the pack (session), averaged over questions. `budget` is asked → allotted \
         (clamped to the profile's ceiling; both systems get the allotted budget).\n"
    );
    let _ = writeln!(
        s,
        "| profile | budget | cmp turn | base turn | Δ turn | cmp session | base session | Δ session | cmp tokens | base tokens | cmp items | base items |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (pi, p) in profiles.iter().enumerate() {
        for (bi, &ask) in args.budgets.iter().enumerate() {
            let c = &cells[pi][bi];
            let (a, b) = (Cell::overall(&c.sys), Cell::overall(&c.base));
            let (at, bt) = (a.mean(a.turn_recall), b.mean(b.turn_recall));
            let (ass, bs) = (a.mean(a.session_recall), b.mean(b.session_recall));
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {:.0} | {:.0} | {:.1} | {:.1} |",
                p.name,
                budget_label(ask, p.allotted(ask)),
                fmt3(at),
                fmt3(bt),
                fmt_delta(at - bt),
                fmt3(ass),
                fmt3(bs),
                fmt_delta(ass - bs),
                a.mean(a.tokens),
                b.mean(b.tokens),
                a.mean(a.items),
                b.mean(b.items)
            );
        }
    }
    let _ = writeln!(s, "\n## Turn recall per category (cmp / baseline / Δ)\n");
    let mut head = "| profile | budget |".to_string();
    let mut rule = "|---|---|".to_string();
    for (i, name) in CATEGORY_NAMES.iter().enumerate() {
        let n: usize = cells.first().and_then(|r| r.first()).map_or(0, |c| c.sys[i].n);
        let _ = write!(head, " {} {name} (n={n}) |", i + 1);
        rule.push_str("---|");
    }
    let _ = writeln!(s, "{head}\n{rule}");
    for (pi, p) in profiles.iter().enumerate() {
        for (bi, &ask) in args.budgets.iter().enumerate() {
            let c = &cells[pi][bi];
            let mut row = format!("| {} | {} |", p.name, budget_label(ask, p.allotted(ask)));
            for i in 0..5 {
                let (a, b) = (&c.sys[i], &c.base[i]);
                let (at, bt) = (a.mean(a.turn_recall), b.mean(b.turn_recall));
                let _ = write!(row, " {} / {} / {} |", fmt3(at), fmt3(bt), fmt_delta(at - bt));
            }
            let _ = writeln!(s, "{row}");
        }
    }
    let _ = writeln!(s, "\n## Session recall per category (cmp / baseline)\n\n{head}\n{rule}");
    for (pi, p) in profiles.iter().enumerate() {
        for (bi, &ask) in args.budgets.iter().enumerate() {
            let c = &cells[pi][bi];
            let mut row = format!("| {} | {} |", p.name, budget_label(ask, p.allotted(ask)));
            for i in 0..5 {
                let (a, b) = (&c.sys[i], &c.base[i]);
                let _ = write!(row, " {} / {} |", fmt3(a.mean(a.session_recall)), fmt3(b.mean(b.session_recall)));
            }
            let _ = writeln!(s, "{row}");
        }
    }
    if system == System::Context {
        let _ = writeln!(
            s,
            "\n## Envelope checks ({} envelopes, {} items, {} of them compressed by the ladder)\n\n- used > tokens: {}\n- used ≠ Σ(cmp_tokens(content)+12): {}\n\
             - budget.tokens ≠ clamp(asked): {}\n- refs outside the conversation: {}\n\
             - budget monotonicity violations (a ref packed at a budget, missing at a larger one): {}\n\
             - items per layer: {}",
            checks.envelopes,
            checks.items,
            checks.compressed,
            checks.over_budget,
            checks.used_mismatch,
            checks.tokens_mismatch,
            checks.unknown_refs,
            checks.monotonicity,
            checks.layers.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ")
        );
        for e in &checks.monotonicity_examples {
            let _ = writeln!(s, "  - e.g. {e}");
        }
    }
    s
}

fn budget_label(ask: i64, allotted: i64) -> String {
    if ask == allotted {
        ask.to_string()
    } else {
        format!("{ask}→{allotted}")
    }
}

fn render_economy(e: &Economy) -> String {
    let saving =
        if e.stateless_tokens > 0 { 1.0 - e.delta_tokens as f64 / e.stateless_tokens as f64 } else { f64::NAN };
    let n = e.recall_questions.max(1) as f64;
    format!(
        "\n## Token economy (model {ECONOMY_MODEL}, budget {ECONOMY_BUDGET}, one session per conversation, questions in order)\n\n\
         | | stateless (send all, no session) | session (send=delta) |\n|---|---|---|\n\
         | calls | {c} | {c} |\n\
         | tokens sent Σ(tokens(content)+12) | {st} | {dt} |\n\
         | content tokens only | {sc} | {dc} |\n\n\
         Saving: {:.1}% of item tokens ({:.2}× fewer). Items in a delta pack that were not in working_memory.new: {}.\n\n\
         Turn recall (categories 1-4, n={}): stateless pack {:.3}; everything the session has delivered so far {:.3}; \
         the consumer's mirror of the working set (delivered − evicted − superseded) {:.3}.\n",
        saving * 100.0,
        if e.delta_tokens > 0 {
            e.stateless_tokens as f64 / e.delta_tokens as f64
        } else {
            f64::INFINITY
        },
        e.delta_items_not_new,
        e.recall_questions,
        e.stateless_recall / n,
        e.union_recall / n,
        e.mirror_recall / n,
        c = e.calls,
        st = e.stateless_tokens,
        dt = e.delta_tokens,
        sc = e.stateless_content_tokens,
        dc = e.delta_content_tokens,
    )
}

#[allow(clippy::too_many_arguments)]
fn to_json(
    args: &Args,
    system: System,
    profiles: &[Profile],
    cells: &[Vec<Cell>],
    ev: &EvidenceStats,
    checks: &Checks,
    notes: &[String],
    eco: &Economy,
    economy: bool,
    convs: &[Conversation],
) -> Value {
    let mut rows = Vec::new();
    for (pi, p) in profiles.iter().enumerate() {
        for (bi, &ask) in args.budgets.iter().enumerate() {
            let c = &cells[pi][bi];
            let cats = |accs: &[Acc; 5]| -> Value {
                let mut m = serde_json::Map::new();
                for (i, a) in accs.iter().enumerate() {
                    m.insert((i + 1).to_string(), a.json());
                }
                Value::Object(m)
            };
            rows.push(json!({
                "profile": p.name,
                "budget_asked": ask,
                "budget": p.allotted(ask),
                "system": {"overall": Cell::overall(&c.sys).json(), "categories": cats(&c.sys)},
                "baseline": {"overall": Cell::overall(&c.base).json(), "categories": cats(&c.base)},
            }));
        }
    }
    let n = eco.recall_questions.max(1) as f64;
    json!({
        "harness": "locomo",
        "command": command_line(),
        "system": system.name(),
        "notes": notes,
        "conversations": convs.iter().map(|c| c.sample_id.clone()).collect::<Vec<_>>(),
        "evidence": {
            "ids": ev.ids, "zero_padded": ev.padded, "multi_id_strings": ev.multi,
            "malformed_skipped": ev.malformed, "unknown_turn_skipped": ev.unknown_turn,
            "questions_without_evidence": ev.questions_without_evidence,
        },
        "results": rows,
        "checks": {
            "envelopes": checks.envelopes, "items": checks.items, "compressed_items": checks.compressed, "over_budget": checks.over_budget,
            "used_mismatch": checks.used_mismatch, "tokens_mismatch": checks.tokens_mismatch,
            "unknown_refs": checks.unknown_refs, "monotonicity_violations": checks.monotonicity,
            "layers": checks.layers,
        },
        "economy": if economy { json!({
            "model": ECONOMY_MODEL, "budget": ECONOMY_BUDGET, "calls": eco.calls,
            "stateless_tokens": eco.stateless_tokens, "delta_tokens": eco.delta_tokens,
            "stateless_content_tokens": eco.stateless_content_tokens,
            "delta_content_tokens": eco.delta_content_tokens,
            "saving": round4(1.0 - eco.delta_tokens as f64 / eco.stateless_tokens.max(1) as f64),
            "delta_items_not_in_new": eco.delta_items_not_new,
            "turn_recall": {"stateless": round4(eco.stateless_recall / n),
                            "session_union": round4(eco.union_recall / n),
                            "session_mirror": round4(eco.mirror_recall / n)},
            "per_conversation": eco.per_conversation,
        }) } else { Value::Null },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(parse_session_date("1:56 pm on 8 May, 2023").map(iso).as_deref(), Some("2023-05-08T13:56:00Z"));
        assert_eq!(parse_session_date("12:04 am on 1 January, 2024").map(iso).as_deref(), Some("2024-01-01T00:04:00Z"));
        assert_eq!(
            parse_session_date("12:30 pm on 29 February, 2024").map(iso).as_deref(),
            Some("2024-02-29T12:30:00Z")
        );
        assert_eq!(parse_session_date("yesterday"), None);
    }

    #[test]
    fn dia_ids() {
        assert_eq!(parse_dia("D30:05"), Some((30, 5)));
        assert_eq!(parse_dia("D"), None);
        assert_eq!(parse_dia("D:11:26"), None);
    }
}
