//! MemDaily quality harness (Chinese memories): does `cmp_context` put the evidence of a question
//! into the pack, compared with FTS5's built-in `trigram` tokenizer ranked by BM25?
//!
//! ```text
//! cargo run --release --example memdaily -- [--data DIR] [--files N|all] [--questions N|all]
//!     [--budgets 300,500,1000] [--profiles generic,claude,gpt,cursor] [--embedder DIR] [--smoke]
//!     [--explain N]
//! ```
//!
//! With `--embedder`, every message's `embedding` is `cmp_embed(content, DIR)` and every pack passes
//! the `embedder` option (BENCHMARKS.md, "With an embedding model"); the baseline is unchanged.
//!
//! Each file of `DIR` (default `../shared/data/memdaily-dev/`, MemDaily from nuster1128/MemSim) is a
//! list of trajectories; a file's trajectories are pooled into one fresh in-memory store, one
//! `episodic` memory per message, dated by the message's `time` ("2024年04月01日 周一 08:39", no zone:
//! UTC). A question's `target_step_id`s (message ids of its own trajectory) are its evidence; `now` is
//! the file's last message time. Evidence recall = the share of a question's evidence in the pack,
//! averaged over questions; a message folded into a packed item (cited in its `why.folded_refs`)
//! counts as packed.
//!
//! Baseline: a plain FTS5 table with `tokenize = 'trigram'` over the same messages, queried with every
//! distinct three-character window of the task's alphanumeric runs (OR), rows taken in BM25 order
//! (200 read) while they fit, skipping a row that does not fit and going on, each row costing
//! `cmp_tokens(content, model) + 12`. Two baseline columns: at the same budget, and filled to the
//! content tokens of cmp's own pack (Σ `cmp_tokens(content, model) + 12` over its items), which keeps
//! the comparison fair whatever the envelope around the items costs.
//!
//! What the model reads, in real tokens: cmp's markdown pack at the budget (its `budget.used` is the
//! rendered output's count) against the baseline's ranking rendered as a plain markdown list
//! (`- [ref] content` per line), filled while the list's o200k_base count fits the budget; and cmp's
//! own ranking (the `cmp_search` order) rendered as the same plain list, which tells what cmp's
//! ranking gains from what its markdown pack's header, rules and headings cost. The markdown pack's
//! lead over the plain list is also given for each file on its own (each file is one kind of
//! question: its spread is where a file nobody here has seen may land).
//!
//! Also measured: how `cmp_tokens` (the estimate the packer uses) compares with real o200k_base counts
//! (tiktoken-rs) over every message. The data (no licence published; research use) is read from
//! `../shared/data/`; it is never copied here.

use rusqlite::{params, Connection};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::Instant;

const DEFAULT_DATA: &str = "../shared/data/memdaily-dev";
const ITEM_OVERHEAD: i64 = 12;
/// Rows the baseline reads (cmp's full-text retriever reads as many).
const BASELINE_LIMIT: i64 = 200;
/// Questions per file in `--smoke`.
const SMOKE_QUESTIONS: usize = 40;

type Res<T> = Result<T, String>;

#[derive(Debug, Clone)]
struct Args {
    data: String,
    files: Option<usize>,
    questions: Option<usize>,
    budgets: Vec<i64>,
    profiles: Vec<String>,
    explain: usize,
    smoke: bool,
    embedder: Option<String>,
}

const USAGE: &str = "usage: memdaily [--data DIR] [--files N|all] [--questions N|all] [--budgets 300,500,1000] \
[--profiles generic,claude,gpt,cursor] [--embedder DIR] [--smoke] [--explain N]";

fn parse_args() -> Res<Args> {
    let mut a = Args {
        data: DEFAULT_DATA.into(),
        files: None,
        questions: None,
        budgets: vec![300, 500, 1000],
        profiles: ["generic", "claude", "gpt", "cursor"].map(String::from).to_vec(),
        explain: 0,
        smoke: false,
        embedder: None,
    };
    let count = |v: &str, name: &str| -> Res<Option<usize>> {
        if v == "all" {
            return Ok(None);
        }
        v.parse::<usize>().map(Some).map_err(|_| format!("{name} must be a number or `all`, got {v:?}\n{USAGE}"))
    };
    let mut it = std::env::args().skip(1);
    let (mut files_given, mut questions_given) = (false, false);
    while let Some(k) = it.next() {
        let mut val = || it.next().ok_or(format!("{k} needs a value\n{USAGE}"));
        match k.as_str() {
            "--data" => a.data = val()?,
            "--files" => {
                a.files = count(&val()?, "--files")?;
                files_given = true;
            }
            "--questions" => {
                a.questions = count(&val()?, "--questions")?;
                questions_given = true;
            }
            "--budgets" => {
                a.budgets = val()?
                    .split(',')
                    .map(|b| b.trim().parse::<i64>().map_err(|_| format!("--budgets: not a number: {b:?}")))
                    .collect::<Res<_>>()?
            }
            "--profiles" => a.profiles = val()?.split(',').map(|p| p.trim().to_string()).collect(),
            "--explain" => a.explain = val()?.parse().map_err(|_| format!("--explain must be a number\n{USAGE}"))?,
            "--smoke" => a.smoke = true,
            "--embedder" => a.embedder = Some(val()?),
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    if a.smoke {
        if !files_given {
            a.files = Some(1);
        }
        if !questions_given {
            a.questions = Some(SMOKE_QUESTIONS);
        }
    }
    if a.budgets.is_empty() || a.profiles.is_empty() || a.profiles.iter().any(String::is_empty) {
        return Err(format!("--budgets and --profiles must not be empty\n{USAGE}"));
    }
    Ok(a)
}

// ------------------------------------------------------------------------------------------ data

struct Message {
    id: String,
    content: String,
    at: String,
}

struct Question {
    text: String,
    evidence: Vec<usize>,
}

struct File {
    name: String,
    messages: Vec<Message>,
    questions: Vec<Question>,
    now: String,
}

/// "2024年04月01日 周一 08:39" → "2024-04-01T08:39:00Z" (the data carries no zone: UTC).
fn parse_time(s: &str) -> Option<String> {
    let (y, rest) = s.split_once('年')?;
    let (mo, rest) = rest.split_once('月')?;
    let (d, rest) = rest.split_once('日')?;
    let hm = rest.split_whitespace().last()?;
    let (h, mi) = hm.split_once(':')?;
    let n = |x: &str| x.trim().parse::<u32>().ok();
    let iso = format!("{:04}-{:02}-{:02}T{:02}:{:02}:00Z", n(y)?, n(mo)?, n(d)?, n(h)?, n(mi)?);
    cmp::time::parse(&iso).map(|_| iso)
}

fn load(dir: &str, limit: Option<usize>, questions: Option<usize>) -> Res<Vec<File>> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(|e| {
            format!("cannot read MemDaily data at {dir}: {e} (pass --data DIR; see ../shared/data/README.md)")
        })?
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    names.truncate(limit.unwrap_or(names.len()));
    let mut out = Vec::new();
    for name in names {
        let path = format!("{dir}/{name}");
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
        let root: Value = serde_json::from_str(&text).map_err(|e| format!("{path}: not valid JSON: {e}"))?;
        let trajectories = root.as_array().ok_or(format!("{path}: expected a list of trajectories"))?;
        let stem = name.trim_end_matches(".json").to_string();
        let mut f = File { name: stem.clone(), messages: Vec::new(), questions: Vec::new(), now: String::new() };
        for (ti, t) in trajectories.iter().enumerate() {
            let tid = t["tid"].as_i64().unwrap_or(ti as i64);
            let mut by_mid: HashMap<i64, usize> = HashMap::new();
            for m in t["message_list"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
                let mid = m["mid"].as_i64().ok_or(format!("{path}: trajectory {tid}: a message without mid"))?;
                let content = m["message"].as_str().unwrap_or("").trim().to_string();
                let raw = m["time"].as_str().unwrap_or("");
                let at = parse_time(raw).ok_or(format!("{path}: trajectory {tid}: cannot parse time {raw:?}"))?;
                if at > f.now {
                    f.now = at.clone();
                }
                by_mid.insert(mid, f.messages.len());
                let id = format!("mem_{:012x}", cmp::text::fnv1a(format!("{stem}/{tid}/{mid}").as_bytes()) >> 16);
                f.messages.push(Message { id, content, at });
            }
            for q in t["question_list"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
                let text = q["question"].as_str().unwrap_or("").trim().to_string();
                let mut evidence: Vec<usize> = q["target_step_id"]
                    .as_array()
                    .map(Vec::as_slice)
                    .unwrap_or(&[])
                    .iter()
                    .filter_map(|v| v.as_i64().and_then(|m| by_mid.get(&m).copied()))
                    .collect();
                evidence.sort_unstable();
                evidence.dedup();
                if !text.is_empty() && !evidence.is_empty() {
                    f.questions.push(Question { text, evidence });
                }
            }
        }
        if let Some(n) = questions {
            f.questions.truncate(n);
        }
        out.push(f);
    }
    if out.is_empty() {
        return Err(format!("no .json files in {dir}"));
    }
    Ok(out)
}

// ----------------------------------------------------------------------------------------- store

struct Store {
    conn: Connection,
    by_id: HashMap<String, usize>,
    /// cmp_tokens(content, model) + 12, per (message, profile).
    cost: Vec<Vec<i64>>,
}

fn build_store(f: &File, profiles: &[String], embedder: Option<&str>) -> Res<Store> {
    let sql = |e: rusqlite::Error| format!("{}: {e}", f.name);
    let conn = Connection::open_in_memory().map_err(sql)?;
    cmp::register(&conn).map_err(sql)?;
    conn.query_row("SELECT cmp_init()", [], |_| Ok(())).map_err(sql)?;
    // A fixed cursor key: the pack cursor's tag (and so the rendered token count) is then the same
    // in every run, and the output of the harness is reproducible to the token.
    conn.execute("UPDATE cmp_meta SET value = 'harness' WHERE key = 'secret'", []).map_err(sql)?;
    conn.execute_batch("CREATE VIRTUAL TABLE base_fts USING fts5(content, tokenize = 'trigram'); BEGIN")
        .map_err(sql)?;
    let mut cost = Vec::with_capacity(f.messages.len());
    {
        let mut ins = conn
            .prepare(
                "INSERT INTO cmp_memories(id, content, kind, occurred_at, captured_at, source_url)
                 VALUES (?1, ?2, 'episodic', ?3, ?3, ?4)",
            )
            .map_err(sql)?;
        let mut base = conn.prepare("INSERT INTO base_fts(rowid, content) VALUES (?1, ?2)").map_err(sql)?;
        let mut tokens = conn.prepare("SELECT cmp_tokens(?1, ?2)").map_err(sql)?;
        for (i, m) in f.messages.iter().enumerate() {
            ins.execute(params![m.id, m.content, m.at, format!("memdaily://{}/{}", f.name, m.id)]).map_err(sql)?;
            base.execute(params![i as i64, m.content]).map_err(sql)?;
            let mut row = Vec::with_capacity(profiles.len());
            for p in profiles {
                row.push(tokens.query_row(params![m.content, p], |r| r.get::<_, i64>(0)).map_err(sql)? + ITEM_OVERHEAD);
            }
            cost.push(row);
        }
    }
    if let Some(dir) = embedder {
        conn.execute("UPDATE cmp_memories SET embedding = cmp_embed(content, ?1)", [dir]).map_err(sql)?;
    }
    conn.execute_batch("COMMIT").map_err(sql)?;
    let by_id = f.messages.iter().enumerate().map(|(i, m)| (m.id.clone(), i)).collect();
    Ok(Store { conn, by_id, cost })
}

/// The baseline's query: every distinct three-character window of the task's alphanumeric runs,
/// quoted (the trigram tokenizer cannot match anything shorter).
fn trigram_query(task: &str) -> Option<String> {
    let mut seen: Vec<String> = Vec::new();
    for run in task.split(|c: char| !c.is_alphanumeric()).filter(|r| !r.is_empty()) {
        let chars: Vec<char> = run.chars().flat_map(char::to_lowercase).collect();
        for w in chars.windows(3) {
            let t: String = w.iter().collect();
            if !seen.contains(&t) {
                seen.push(t);
            }
        }
    }
    if seen.is_empty() {
        return None;
    }
    Some(seen.iter().map(|t| format!("\"{t}\"")).collect::<Vec<_>>().join(" OR "))
}

fn baseline_ranking(store: &Store, task: &str) -> Res<Vec<usize>> {
    let Some(q) = trigram_query(task) else { return Ok(Vec::new()) };
    let mut st = store
        .conn
        .prepare_cached("SELECT rowid FROM base_fts WHERE base_fts MATCH ?1 ORDER BY bm25(base_fts), rowid LIMIT ?2")
        .map_err(|e| format!("baseline: {e}"))?;
    let rows =
        st.query_map(params![q, BASELINE_LIMIT], |r| r.get::<_, i64>(0)).map_err(|e| format!("baseline: {e}"))?;
    rows.map(|r| r.map(|x| x as usize).map_err(|e| format!("baseline: {e}"))).collect()
}

/// cmp's own ranking of a task: the `cmp_search` order at the file's clock.
fn search_ranking(store: &Store, task: &str, now: &str) -> Res<Vec<usize>> {
    let opts = json!({"now": now}).to_string();
    let mut st =
        store.conn.prepare_cached("SELECT ref FROM cmp_search(?1, ?2)").map_err(|e| format!("cmp_search: {e}"))?;
    let rows = st.query_map(params![task, opts], |r| r.get::<_, String>(0)).map_err(|e| format!("cmp_search: {e}"))?;
    let mut out = Vec::new();
    for r in rows {
        let r = r.map_err(|e| format!("cmp_search: {e}"))?;
        out.push(*store.by_id.get(&r).ok_or(format!("cmp_search returned unknown ref {r}"))?);
    }
    Ok(out)
}

/// Greedy fill: rows in ranking order, a row that does not fit is skipped and the fill goes on.
fn fill(ranking: &[usize], cost: impl Fn(usize) -> i64, budget: i64) -> Vec<usize> {
    let (mut used, mut out) = (0, Vec::new());
    for &i in ranking {
        let c = cost(i);
        if used + c <= budget {
            used += c;
            out.push(i);
        }
    }
    out
}

/// One `cmp_context` call of the harness: a question, a profile and budget, the file's clock, the
/// embedder when given.
struct Call<'a> {
    task: &'a str,
    model: &'a str,
    budget: i64,
    now: &'a str,
    embedder: Option<&'a str>,
}

/// The output of `c` in `format`.
fn context(store: &Store, c: &Call<'_>, format: &str) -> Res<String> {
    let Call { task, model, budget, now, embedder } = *c;
    let mut opts = json!({"now": now, "format": format});
    if let Some(dir) = embedder {
        opts["embedder"] = json!(dir);
    }
    store
        .conn
        .prepare_cached("SELECT cmp_context(?1, ?2, ?3, NULL, ?4)")
        .and_then(|mut st| st.query_row(params![task, model, budget, opts.to_string()], |r| r.get(0)))
        .map_err(|e| format!("cmp_context({task:?}, {model}, {budget}, {format}): {e}"))
}

/// cmp's pack for a task: the packed messages (items, and the restatements folded into them, which
/// the items cite in `why.folded_refs`) and Σ(cmp_tokens(content) + 12) over its items (the content as
/// packed, which may be shortened).
fn cmp_pack(store: &Store, c: &Call<'_>) -> Res<(Vec<usize>, i64, Value)> {
    let model = c.model;
    let text = context(store, c, "json")?;
    let v: Value = serde_json::from_str(&text).map_err(|e| format!("cmp_context: not JSON: {e}"))?;
    let mut packed = Vec::new();
    let mut content_cost = 0;
    let mut tokens = store.conn.prepare_cached("SELECT cmp_tokens(?1, ?2)").map_err(|e| e.to_string())?;
    for it in v["items"].as_array().ok_or("cmp_context: items is not an array")? {
        let content = it["content"].as_str().unwrap_or("");
        content_cost += tokens.query_row(params![content, model], |r| r.get::<_, i64>(0)).map_err(|e| e.to_string())?
            + ITEM_OVERHEAD;
        if let Some(&i) = it["ref"].as_str().and_then(|r| store.by_id.get(r)) {
            packed.push(i);
        }
        // A restatement folded into this item is cited by it (MemDaily repeats messages across
        // trajectories word for word).
        for f in it["why"]["folded_refs"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
            if let Some(&i) = f.as_str().and_then(|r| store.by_id.get(r)) {
                packed.push(i);
            }
        }
    }
    Ok((packed, content_cost, v))
}

/// The messages of cmp's markdown pack for a task (its item lines: `[ref] content`, `[ref · tag] …`).
/// Also returns those shown in full (`[ref] content`, no `· head` / `· summary` / `· truncated` tag).
fn markdown_pack(store: &Store, c: &Call<'_>) -> Res<(Vec<usize>, Vec<usize>)> {
    let text = context(store, c, "markdown")?;
    let (mut all, mut full) = (Vec::new(), Vec::new());
    for l in text.lines() {
        let Some(i) = l.strip_prefix('[').and_then(|x| x.split([' ', ']']).next()).and_then(|r| store.by_id.get(r))
        else {
            continue;
        };
        all.push(*i);
        if l.split_once(']').is_some_and(|(head, _)| !head.contains(" · ")) {
            full.push(*i);
        }
    }
    Ok((all, full))
}

/// The baseline as a user would paste it: `- [ref] content` lines in ranking order, each taken while
/// the list's o200k_base count fits `budget` (a line that does not fit is skipped).
fn plain_list(f: &File, ranking: &[usize], budget: i64, bpe: &tiktoken_rs::CoreBPE) -> Vec<usize> {
    let line = |i: usize| format!("- [{}] {}\n", f.messages[i].id, f.messages[i].content);
    fill(ranking, |i| bpe.encode_ordinary(&line(i)).len() as i64, budget)
}

fn recall(evidence: &[usize], pack: &[usize]) -> f64 {
    evidence.iter().filter(|e| pack.contains(e)).count() as f64 / evidence.len() as f64
}

// ---------------------------------------------------------------------------------------- report

#[derive(Default, Clone, Copy)]
struct Cell {
    n: usize,
    cmp: f64,
    base: f64,
    base_equal: f64,
    items: usize,
    content: i64,
    markdown: f64,
    markdown_full: f64,
    list: f64,
    own_list: f64,
}

/// chars/4, cmp_tokens and real o200k_base counts over every message.
#[derive(Default)]
struct TokenStats {
    messages: usize,
    chars: usize,
    chars4: usize,
    estimate: Vec<(String, i64)>,
    o200k: usize,
}

/// Hits of the rankings counted per file.
const TOP: [usize; 2] = [10, 20];

/// One file's questions: the evidence in the first [`TOP`] hits of `cmp_search` and of the trigram
/// query (summed recall), and the markdown pack's recall less the plain trigram list's, summed, per
/// (profile, budget) in the order of the arguments.
#[derive(Default)]
struct FileStat {
    name: String,
    messages: usize,
    questions: usize,
    cmp: [f64; 2],
    trigram: [f64; 2],
    markdown_lead: Vec<Vec<f64>>,
}

impl FileStat {
    fn add(&mut self, evidence: &[usize], cmp: &[usize], trigram: &[usize]) {
        self.questions += 1;
        for (k, &n) in TOP.iter().enumerate() {
            self.cmp[k] += recall(evidence, &cmp[..n.min(cmp.len())]);
            self.trigram[k] += recall(evidence, &trigram[..n.min(trigram.len())]);
        }
    }

    fn report(files: &[FileStat], s: &mut String) {
        let _ =
            writeln!(s, "\n## Evidence in the first 10 / 20 hits, by file (cmp_search order, trigram BM25 order)\n");
        let _ = writeln!(
            s,
            "| file | questions | cmp_search 10 | trigram 10 | cmp_search 20 | trigram 20 |\n|---|---|---|---|---|---|"
        );
        for f in files {
            let p = |x: f64| 100.0 * x / f.questions.max(1) as f64;
            let _ = writeln!(
                s,
                "| {} | {} | {:.1} | {:.1} | {:.1} | {:.1} |",
                f.name,
                f.questions,
                p(f.cmp[0]),
                p(f.trigram[0]),
                p(f.cmp[1]),
                p(f.trigram[1])
            );
        }
    }

    /// Each file's lead on its own: how far the overall figure moves from one file to the next.
    fn report_leads(files: &[FileStat], a: &Args, s: &mut String) {
        let _ = writeln!(s, "\n## Markdown pack − plain trigram list, by file (turn recall points)\n");
        let budgets: String = a.budgets.iter().map(|b| format!(" {b} |")).collect();
        let _ = writeln!(s, "| profile | file |{budgets}\n|---|---|{}", "---|".repeat(a.budgets.len()));
        for (pi, p) in a.profiles.iter().enumerate() {
            for f in files {
                let leads: String = f.markdown_lead[pi]
                    .iter()
                    .map(|x| format!(" {:+.1} |", 100.0 * x / f.questions.max(1) as f64))
                    .collect();
                let _ = writeln!(s, "| {p} | {} |{leads}", f.name);
            }
        }
    }
}

/// Wall time of each question's two rankings, in seconds (after a store's first question, the
/// statements are prepared).
#[derive(Default)]
struct Times {
    /// The trigram baseline's FTS5 query.
    baseline: Vec<f64>,
    /// `cmp_search` (every retriever and the fusion).
    search: Vec<f64>,
}

impl Times {
    fn report(&mut self, s: &mut String) {
        let median = |v: &mut Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied().unwrap_or(0.0) * 1000.0
        };
        let (b, c) = (median(&mut self.baseline), median(&mut self.search));
        let _ = writeln!(
            s,
            "\nPer question (median of {}): trigram FTS5 query {b:.3} ms, cmp_search {c:.3} ms ({:.1}x).",
            self.search.len(),
            c / b.max(1e-9)
        );
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("memdaily: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Res<()> {
    let args = parse_args()?;
    let started = Instant::now();
    let files = load(&args.data, args.files, args.questions)?;
    let bpe = tiktoken_rs::o200k_base().map_err(|e| format!("o200k_base: {e}"))?;
    let nb = args.budgets.len();
    let mut cells = vec![vec![Cell::default(); nb]; args.profiles.len()];
    let mut ts = TokenStats { estimate: args.profiles.iter().map(|p| (p.clone(), 0)).collect(), ..Default::default() };
    let mut explain_left = args.explain;
    let mut per_file: Vec<FileStat> = Vec::new();
    let mut times = Times::default();
    for f in &files {
        let t0 = Instant::now();
        let store = build_store(f, &args.profiles, args.embedder.as_deref())?;
        for (i, m) in f.messages.iter().enumerate() {
            let chars = m.content.chars().count();
            ts.messages += 1;
            ts.chars += chars;
            ts.chars4 += chars.div_ceil(4).max(1);
            ts.o200k += bpe.encode_ordinary(&m.content).len();
            for (pi, e) in ts.estimate.iter_mut().enumerate() {
                e.1 += store.cost[i][pi] - ITEM_OVERHEAD;
            }
        }
        let mut stat = FileStat {
            name: f.name.clone(),
            messages: f.messages.len(),
            markdown_lead: vec![vec![0.0; nb]; args.profiles.len()],
            ..Default::default()
        };
        for q in &f.questions {
            let t = Instant::now();
            let base_rank = baseline_ranking(&store, &q.text)?;
            times.baseline.push(t.elapsed().as_secs_f64());
            let t = Instant::now();
            let own_rank = search_ranking(&store, &q.text, &f.now)?;
            times.search.push(t.elapsed().as_secs_f64());
            stat.add(&q.evidence, &own_rank, &base_rank);
            for (pi, p) in args.profiles.iter().enumerate() {
                let cost = |i: usize| store.cost[i][pi];
                for (bi, &budget) in args.budgets.iter().enumerate() {
                    let call =
                        Call { task: &q.text, model: p, budget, now: &f.now, embedder: args.embedder.as_deref() };
                    let (pack, content, env) = cmp_pack(&store, &call)?;
                    let base = fill(&base_rank, cost, budget);
                    let base_equal = fill(&base_rank, cost, content);
                    let (md, md_full) = markdown_pack(&store, &call)?;
                    let list = plain_list(f, &base_rank, budget, &bpe);
                    let own_list = plain_list(f, &own_rank, budget, &bpe);
                    let c = &mut cells[pi][bi];
                    c.n += 1;
                    c.cmp += recall(&q.evidence, &pack);
                    c.base += recall(&q.evidence, &base);
                    c.base_equal += recall(&q.evidence, &base_equal);
                    c.markdown += recall(&q.evidence, &md);
                    c.markdown_full += recall(&q.evidence, &md_full);
                    c.list += recall(&q.evidence, &list);
                    c.own_list += recall(&q.evidence, &own_list);
                    stat.markdown_lead[pi][bi] += recall(&q.evidence, &md) - recall(&q.evidence, &list);
                    c.items += pack.len();
                    c.content += content;
                    if explain_left > 0 && recall(&q.evidence, &pack) < recall(&q.evidence, &base) {
                        explain_left -= 1;
                        let mut s = format!("\n--- {} {:?} ({p}, {budget})\n", f.name, q.text);
                        for &e in &q.evidence {
                            let _ = writeln!(
                                s,
                                "  evidence (baseline rank {}, in cmp pack {}): {}",
                                base_rank.iter().position(|&x| x == e).map_or("-".into(), |r| (r + 1).to_string()),
                                pack.contains(&e),
                                f.messages[e].content
                            );
                        }
                        for it in env["items"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
                            let _ = writeln!(
                                s,
                                "    rel {} {} {}",
                                it["relevance"],
                                it["why"]["matched_terms"],
                                it["content"].as_str().unwrap_or("")
                            );
                        }
                        eprint!("{s}");
                    }
                }
            }
        }
        per_file.push(stat);
        eprintln!(
            "memdaily: {} done ({} messages, {} questions) in {:.1}s",
            f.name,
            f.messages.len(),
            f.questions.len(),
            t0.elapsed().as_secs_f64()
        );
    }

    let pct = |x: f64, n: usize| if n == 0 { f64::NAN } else { 100.0 * x / n as f64 };
    let mut s = String::new();
    let _ = writeln!(s, "# MemDaily evidence recall: cmp_context vs FTS5 trigram BM25\n");
    let _ = writeln!(
        s,
        "{} file(s), {} messages, {} questions ({}).\n",
        files.len(),
        per_file.iter().map(|f| f.messages).sum::<usize>(),
        per_file.iter().map(|f| f.questions).sum::<usize>(),
        per_file.iter().map(|f| f.name.as_str()).collect::<Vec<_>>().join(", ")
    );
    let _ = writeln!(
        s,
        "| profile | budget | cmp_context | trigram BM25 | Δ | trigram at cmp's content tokens | Δ | cmp items | cmp content tokens |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|");
    for (pi, p) in args.profiles.iter().enumerate() {
        for (bi, b) in args.budgets.iter().enumerate() {
            let c = cells[pi][bi];
            let (a, bb, be) = (pct(c.cmp, c.n), pct(c.base, c.n), pct(c.base_equal, c.n));
            let _ = writeln!(
                s,
                "| {p} | {b} | {a:.1} | {bb:.1} | {:+.1} | {be:.1} | {:+.1} | {:.1} | {:.0} |",
                a - bb,
                a - be,
                c.items as f64 / c.n.max(1) as f64,
                c.content as f64 / c.n.max(1) as f64
            );
        }
    }
    let _ = writeln!(s, "\n## What the model reads, at the budget in real tokens (o200k_base)\n");
    let _ = writeln!(
        s,
        "| profile | budget | cmp markdown | plain trigram list | Δ | plain own-ranking list | cmp markdown, shown in full |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|");
    for (pi, p) in args.profiles.iter().enumerate() {
        for (bi, b) in args.budgets.iter().enumerate() {
            let c = cells[pi][bi];
            let (m, l, o) = (pct(c.markdown, c.n), pct(c.list, c.n), pct(c.own_list, c.n));
            let full = pct(c.markdown_full, c.n);
            let _ = writeln!(s, "| {p} | {b} | {m:.1} | {l:.1} | {:+.1} | {o:.1} | {full:.1} |", m - l);
        }
    }
    let _ = writeln!(s, "\n## Token estimates on these messages\n");
    let _ = writeln!(s, "| count | tokens | per message | vs o200k_base |\n|---|---|---|---|");
    let row = |s: &mut String, name: &str, t: usize| {
        let _ = writeln!(
            s,
            "| {name} | {t} | {:.2} | {:.2}x |",
            t as f64 / ts.messages.max(1) as f64,
            t as f64 / ts.o200k.max(1) as f64
        );
    };
    row(&mut s, "o200k_base (tiktoken-rs)", ts.o200k);
    row(&mut s, "ceil(chars / 4)", ts.chars4);
    for (p, t) in &ts.estimate {
        row(&mut s, &format!("cmp_tokens(content, '{p}')"), *t as usize);
    }
    let _ = writeln!(
        s,
        "\n{} characters in {} messages: {:.2} characters per o200k token.",
        ts.chars,
        ts.messages,
        ts.chars as f64 / ts.o200k.max(1) as f64
    );
    FileStat::report(&per_file, &mut s);
    FileStat::report_leads(&per_file, &args, &mut s);
    times.report(&mut s);
    let _ = writeln!(s, "\nRun time {:.1}s.", started.elapsed().as_secs_f64());
    print!("{s}");
    if args.smoke && cells.iter().flatten().all(|c| c.n == 0) {
        return Err("smoke: no questions ran".into());
    }
    Ok(())
}
