//! Speed harness: every cmp entry point timed next to the floor it cannot beat.
//!
//! ```text
//! cargo run --release --example bench -- [--n 100000] [--db PATH] [--tasks 200] [--seed 42]
//!     [--embed-every 10] [--rounds 1] [--warmup 20] [--insert-rows N] [--json OUT]
//! ```
//!
//! A deterministic synthetic corpus (`examples/common/corpus.rs`) is written to a file database in WAL
//! mode (reused when the file already holds the same size, seed and generator version). Then, per
//! task, interleaved so drift hits floor and subject alike:
//! - the floor: the same rows in a plain FTS5 table, the same safe OR query, `ORDER BY rank LIMIT
//!   200` (rowid and content read); and that query ordered by `rank, rowid`, which SQLite answers
//!   with a top-200 sorter instead of FTS5's sort of every match (faster on large match sets);
//! - cmp's full-text join query (the SQL of `src/store/memories.rs` over the eligibility rule, same
//!   parameters, rows materialised the same way);
//! - `SELECT count(*) FROM cmp_search(?, ?)`;
//! - `SELECT cmp_context(?, model, NULL, NULL, ?)` for models NULL, claude, gpt, cursor;
//! - a session turn: the same call with a session id (model NULL, or `--session-model`), one session
//!   through all tasks, reset first (nothing is written between two turns unless `--touch-between`
//!   writes before every timed call: a turn then reads the rows of every ref it holds);
//! - vector retrieval over 384-dimensional user embeddings (`cmp_search('', {query_embedding})`)
//!   against a brute-force cosine loop in Rust over the same blobs read with SELECT.
//!
//! `--cold` runs every timed call, floors included, on a connection opened for it (the schema read
//! before the clock starts): what a program that opens the database for each query pays, with no
//! prepared statement, page or kept row length from an earlier call.
//!
//! `--warmup N` first asks N other tasks than the timed ones (on every step), and the digests are
//! computed after the clock stops, so no timed call meets a task its connection was asked before
//! the clock started.
//!
//! `--ask-once` gives every timed step its own connection for the whole run (opened before the
//! clock starts), so no call meets a task its connection was asked before: by default every step of
//! a task runs on one connection, and the steps after the first find the task's rows in the page
//! cache and their lengths kept (`cmp_bm25`), which an application asking each question once does
//! not. The warm-up and the digests run on the main connection.
//!
//! `--per-task TSV` writes each task's milliseconds per timed step (a line per task), to tell the
//! cost every call pays from the cost that grows with the query's matches.
//!
//! Also the bulk insert rate into `cmp_memories` (with cmp's triggers) against the same rows into a
//! plain FTS5 table, each in one transaction on a fresh file database, and peak RSS.

#[path = "common/corpus.rs"]
mod corpus;
#[path = "common/realtext.rs"]
mod realtext;

use rusqlite::{named_params, params, Connection, OpenFlags};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

const TOKENIZER: &str = "porter unicode61 remove_diacritics 2";
const SCOPE: &str = "default";
const SESSION: &str = "bench-session";
/// `--touch-between`: an untimed write before every timed call. It changes no pack, but it is a
/// write, so a session turn cannot know that the refs it holds are unchanged and reads them all.
const TOUCH: &str = "UPDATE cmp_meta SET value = value WHERE key = 'db_id'";
const PHASES_SESSION: &str = "bench-phases";
const MODELS: [Option<&str>; 4] = [None, Some("claude"), Some("gpt"), Some("cursor")];

type Res<T> = Result<T, String>;

fn sql_err(what: &str) -> impl Fn(rusqlite::Error) -> String + '_ {
    move |e| format!("{what}: {e}")
}

#[derive(Debug, Clone)]
struct Args {
    n: usize,
    db: Option<PathBuf>,
    tasks: usize,
    seed: u64,
    embed_every: usize,
    rounds: usize,
    warmup: usize,
    insert_rows: Option<usize>,
    json: Option<String>,
    corpus: String,
    data: String,
    digest: usize,
    steps: Option<Vec<String>>,
    phases: bool,
    session_model: usize,
    session_seed: usize,
    touch: bool,
    cold: bool,
    once: bool,
    per_task: Option<String>,
}

const USAGE: &str = "usage: bench [--corpus real|generated] [--data ../shared/data] [--n 100000] [--db PATH] \
[--tasks 200] [--seed 42] [--embed-every 10] [--rounds 1] [--warmup 20] [--insert-rows N] [--digest N] \
[--steps topn,join,search,generic,claude,gpt,cursor,session,vector] [--session-model generic|claude|gpt|cursor] [--session-seed N] [--phases] \
[--touch-between] [--cold] [--ask-once] [--per-task TSV] [--json OUT]";

fn parse_args() -> Res<Args> {
    let mut a = Args {
        n: 100_000,
        db: None,
        tasks: 200,
        seed: 42,
        embed_every: 10,
        rounds: 1,
        warmup: 20,
        insert_rows: None,
        json: None,
        corpus: "real".into(),
        data: "../shared/data".into(),
        digest: 0,
        steps: None,
        phases: false,
        session_model: 0,
        session_seed: 0,
        touch: false,
        cold: false,
        once: false,
        per_task: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = |name: &str| it.next().ok_or(format!("{name} needs a value\n{USAGE}"));
        let num = |name: &str, v: String| v.parse::<usize>().map_err(|_| format!("{name} must be a number, got {v:?}"));
        match flag.as_str() {
            "--n" => a.n = num("--n", value("--n")?)?,
            "--db" => a.db = Some(PathBuf::from(value("--db")?)),
            "--tasks" => a.tasks = num("--tasks", value("--tasks")?)?,
            "--seed" => a.seed = num("--seed", value("--seed")?)? as u64,
            "--embed-every" => a.embed_every = num("--embed-every", value("--embed-every")?)?,
            "--rounds" => a.rounds = num("--rounds", value("--rounds")?)?.max(1),
            "--warmup" => a.warmup = num("--warmup", value("--warmup")?)?,
            "--insert-rows" => a.insert_rows = Some(num("--insert-rows", value("--insert-rows")?)?),
            "--json" => a.json = Some(value("--json")?),
            "--corpus" => a.corpus = value("--corpus")?,
            "--data" => a.data = value("--data")?,
            "--digest" => a.digest = num("--digest", value("--digest")?)?,
            "--phases" => a.phases = true,
            "--touch-between" => a.touch = true,
            "--cold" => a.cold = true,
            "--ask-once" => a.once = true,
            "--per-task" => a.per_task = Some(value("--per-task")?),
            "--session-seed" => a.session_seed = num("--session-seed", value("--session-seed")?)?,
            "--session-model" => {
                let m = value("--session-model")?;
                a.session_model = MODELS
                    .iter()
                    .position(|x| x.unwrap_or("generic") == m)
                    .ok_or(format!("--session-model must be generic, claude, gpt or cursor, got {m:?}"))?;
            }
            "--steps" => a.steps = Some(value("--steps")?.split(',').map(str::to_string).collect()),
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    if a.corpus != "real" && a.corpus != "generated" {
        return Err(format!("--corpus must be real or generated, got {:?}", a.corpus));
    }
    if a.n == 0 || a.tasks == 0 {
        return Err("--n and --tasks must be positive".into());
    }
    Ok(a)
}

// ------------------------------------------------------------------------------------- machine

fn machine() -> Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let nproc = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0);
    json!({"nproc": nproc, "cpu": cpu, "os": std::env::consts::OS, "arch": std::env::consts::ARCH})
}

fn status_kb(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    s.lines().find(|l| l.starts_with(field))?.split_whitespace().nth(1)?.parse().ok()
}

/// Resets VmHWM to the current RSS (Linux `clear_refs` 5), so a phase's peak can be read alone.
fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn command_line() -> String {
    let rest: Vec<String> = std::env::args().skip(1).collect();
    format!("cargo run --release --example bench -- {}", rest.join(" ")).trim_end().to_string()
}

// -------------------------------------------------------------------------------------- corpus

fn open_file_db(path: &Path) -> Res<Connection> {
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE)
        .map_err(|e| format!("open {}: {e}", path.display()))?;
    // WAL with synchronous=NORMAL: the usual setting for an application database; commits do not
    // fsync, so a session turn measures cmp, not the disk.
    conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;").map_err(sql_err("pragma"))?;
    Ok(conn)
}

/// A connection opened for one timed call (`--cold`): cmp registered and the schema read, nothing
/// else run on it.
fn cold_conn(path: &Path) -> Res<Connection> {
    let conn = open_file_db(path)?;
    cmp::register(&conn).map_err(sql_err("cmp::register"))?;
    conn.query_row("SELECT count(*) FROM sqlite_schema", [], |_| Ok(())).map_err(sql_err("schema"))?;
    Ok(conn)
}

fn remove_db(path: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(p));
    }
}

fn meta_key(a: &Args) -> String {
    let version = if a.corpus == "real" { realtext::REALTEXT_VERSION } else { corpus::GENERATOR_VERSION };
    format!("corpus={} n={} seed={} embed_every={} version={version}", a.corpus, a.n, a.seed, a.embed_every)
}

/// `n` rows of the chosen corpus.
fn rows(a: &Args, seed: u64, n: usize) -> Res<Vec<corpus::Row>> {
    if a.corpus == "real" {
        realtext::generate(&a.data, seed, n, a.embed_every)
    } else {
        Ok(corpus::generate(seed, n, a.embed_every))
    }
}

/// Opens the corpus database, generating it unless the file already holds this exact corpus.
/// Returns the connection and the seconds spent generating and inserting (None when reused).
fn corpus_db(a: &Args, path: &Path) -> Res<(Connection, Option<(f64, f64)>)> {
    if path.exists() {
        let conn = open_file_db(path)?;
        let key: Option<String> =
            conn.query_row("SELECT value FROM bench_corpus_meta WHERE key = 'corpus'", [], |r| r.get(0)).ok();
        if key.as_deref() == Some(meta_key(a).as_str()) {
            cmp::register(&conn).map_err(sql_err("cmp::register"))?;
            conn.query_row("SELECT cmp_init()", [], |_| Ok(())).map_err(sql_err("cmp_init"))?;
            conn.query_row("SELECT cmp_flush()", [], |_| Ok(())).map_err(sql_err("cmp_flush"))?;
            plain_table(&conn)?;
            return Ok((conn, None));
        }
        drop(conn);
        eprintln!("bench: {} holds another corpus ({key:?}); regenerating", path.display());
        remove_db(path);
    }
    let t = Instant::now();
    let rows = rows(a, a.seed, a.n)?;
    let gen_s = t.elapsed().as_secs_f64();
    let conn = open_file_db(path)?;
    cmp::register(&conn).map_err(sql_err("cmp::register"))?;
    conn.query_row("SELECT cmp_init()", [], |_| Ok(())).map_err(sql_err("cmp_init"))?;
    let t = Instant::now();
    corpus::insert(&conn, &rows).map_err(sql_err("insert corpus"))?;
    conn.query_row("SELECT cmp_flush()", [], |_| Ok(())).map_err(sql_err("cmp_flush"))?;
    let ins_s = t.elapsed().as_secs_f64();
    plain_table(&conn)?;
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS bench_corpus_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
         PRAGMA optimize; PRAGMA wal_checkpoint(TRUNCATE);",
    )
    .map_err(sql_err("meta"))?;
    conn.execute("INSERT OR REPLACE INTO bench_corpus_meta(key, value) VALUES ('corpus', ?1)", [meta_key(a)])
        .map_err(sql_err("meta"))?;
    Ok((conn, Some((gen_s, ins_s))))
}

/// The floor's table: every row's content in a plain FTS5 table (same tokenizer), built once.
fn plain_table(conn: &Connection) -> Res<()> {
    conn.execute_batch(&format!(
        "CREATE VIRTUAL TABLE IF NOT EXISTS bench_plain_fts USING fts5(content, tokenize = '{TOKENIZER}');
         INSERT INTO bench_plain_fts(rowid, content)
           SELECT rid, content FROM cmp_memories WHERE NOT EXISTS (SELECT 1 FROM bench_plain_fts);"
    ))
    .map_err(sql_err("plain FTS5 floor table"))
}

/// Bulk insert rates (rows/s), one transaction each, fresh file databases next to the corpus.
#[derive(Debug, Clone, Copy)]
struct InsertRates {
    rows: usize,
    /// cmp_memories, one INSERT per row: the insert alone (rows queued), and with `cmp_flush()` after
    /// it (rows indexed).
    row_by_row: (f64, f64),
    /// The same rows through a staging table and one INSERT … SELECT: alone, and with `cmp_flush()`.
    staged: (f64, f64),
    /// Only the columns an application typically writes (content, kind, entities, captured_at), one
    /// INSERT per row: alone, and with `cmp_flush()`.
    app_columns: (f64, f64),
    /// cmp_memories with its triggers dropped, one INSERT per row: the row table and its indexes
    /// alone, the most any trigger design could reach.
    row_table: f64,
    /// A plain FTS5 table, one INSERT per row (the floor).
    fts: f64,
}

/// Inserts `rows` into a fresh cmp database at `path` with `insert`, then indexes them with
/// `cmp_flush()` (a separate transaction); returns (seconds inserting, seconds flushing).
fn cmp_insert(
    path: &Path,
    rows: &[corpus::Row],
    insert: fn(&Connection, &[corpus::Row]) -> rusqlite::Result<()>,
    triggers: bool,
) -> Res<(f64, f64)> {
    remove_db(path);
    let c = open_file_db(path)?;
    cmp::register(&c).map_err(sql_err("cmp::register"))?;
    c.query_row("SELECT cmp_init()", [], |_| Ok(())).map_err(sql_err("cmp_init"))?;
    if !triggers {
        c.execute_batch("DROP TRIGGER cmp_memories_ai; DROP TRIGGER cmp_memories_ai_id;").map_err(sql_err("drop"))?;
    }
    let t = Instant::now();
    insert(&c, rows).map_err(sql_err("cmp insert"))?;
    let ins = t.elapsed().as_secs_f64();
    let t = Instant::now();
    c.query_row("SELECT cmp_flush()", [], |_| Ok(())).map_err(sql_err("cmp_flush"))?;
    let flush = t.elapsed().as_secs_f64();
    drop(c);
    remove_db(path);
    Ok((ins, flush))
}

/// Bulk insert rates: cmp_memories with cmp's triggers (and its index queue flushed) vs a plain FTS5
/// table, same rows.
fn insert_rates(a: &Args, db: &Path) -> Res<InsertRates> {
    let n = a.insert_rows.unwrap_or(a.n.min(100_000));
    if n == 0 {
        let none = (f64::NAN, f64::NAN);
        return Ok(InsertRates {
            rows: 0,
            row_by_row: none,
            staged: none,
            app_columns: none,
            row_table: f64::NAN,
            fts: f64::NAN,
        });
    }
    let rows = rows(a, a.seed ^ 0x1_0000, n)?;
    let cmp_path = db.with_extension("insert-cmp.db");
    let fts_path = db.with_extension("insert-fts.db");
    remove_db(&fts_path);

    let fts = open_file_db(&fts_path)?;
    fts.execute_batch(&format!("CREATE VIRTUAL TABLE t USING fts5(content, tokenize = '{TOKENIZER}');"))
        .map_err(sql_err("fts table"))?;
    let t = Instant::now();
    {
        let tx = fts.unchecked_transaction().map_err(sql_err("fts insert"))?;
        {
            let mut st = tx.prepare("INSERT INTO t(content) VALUES (?1)").map_err(sql_err("fts insert"))?;
            for r in &rows {
                st.execute([&r.content]).map_err(sql_err("fts insert"))?;
            }
        }
        tx.commit().map_err(sql_err("fts commit"))?;
    }
    let fts_rate = n as f64 / t.elapsed().as_secs_f64();
    drop(fts);
    remove_db(&fts_path);

    let rate = |(ins, flush): (f64, f64)| (n as f64 / ins, n as f64 / (ins + flush));
    let row_by_row = rate(cmp_insert(&cmp_path, &rows, corpus::insert, true)?);
    let staged = rate(cmp_insert(&cmp_path, &rows, corpus::insert_staged, true)?);
    let app_columns = rate(cmp_insert(&cmp_path, &rows, corpus::insert_app_columns, true)?);
    let row_table = rate(cmp_insert(&cmp_path, &rows, corpus::insert, false)?).0;
    Ok(InsertRates { rows: n, row_by_row, staged, app_columns, row_table, fts: fts_rate })
}

// -------------------------------------------------------------------------------- measurements

/// The BM25 floor: the query retrieval starts from (src/store/memories.rs `fts_sql(ELIGIBLE)`), run with
/// the same parameters and rows materialised by the same reader.
fn floor_sql() -> String {
    format!(
        "SELECT {cols}, bm25(cmp_memories_fts) AS score
         FROM cmp_memories_fts JOIN cmp_memories AS m ON m.rid = cmp_memories_fts.rowid
         WHERE cmp_memories_fts MATCH :q AND {eligible}
         ORDER BY score, m.rid LIMIT :n",
        cols = cmp::store::MEMORY_COLS,
        eligible = cmp::store::ELIGIBLE
    )
}

fn vector_floor_sql() -> String {
    format!(
        "SELECT m.rid, m.embedding FROM cmp_memories AS m
         WHERE m.embedding IS NOT NULL AND {} AND {}",
        cmp::store::ELIGIBLE,
        cmp::store::VISIBLE
    )
}

#[derive(Clone)]
struct Bench<'a> {
    conn: &'a Connection,
    now_opts: String,
    horizon_jd: f64,
    has_context: bool,
}

impl Bench<'_> {
    /// The floor: the same rows in a plain FTS5 table (content inside it, no filter, no join), the
    /// same safe OR query, FTS5's own BM25 ranking, top 200 read (rowid and content).
    /// `order` is `ORDER BY rank` (as FTS5's documentation writes it: FTS5 sorts every match) or
    /// `ORDER BY rank, rowid` (SQLite's sorter keeps only the top 200).
    fn plain_floor(&self, task: &str, order: &str) -> Res<usize> {
        let words = cmp::text::query_terms(task, cmp::retrieve::MAX_TERMS);
        let Some(expr) = cmp::retrieve::fts::match_expr(&words) else { return Ok(0) };
        let mut st = self
            .conn
            .prepare_cached(&format!(
                "SELECT rowid, content FROM bench_plain_fts WHERE bench_plain_fts MATCH ?1 {order} LIMIT ?2"
            ))
            .map_err(sql_err("plain floor"))?;
        let mut rows = st.query(params![expr, cmp::retrieve::FTS_LIMIT as i64]).map_err(sql_err("plain floor"))?;
        let mut n = 0;
        while let Some(r) = rows.next().map_err(sql_err("plain floor"))? {
            std::hint::black_box((
                r.get::<_, i64>(0).map_err(sql_err("plain floor"))?,
                r.get::<_, String>(1).map_err(sql_err("plain floor"))?,
            ));
            n += 1;
        }
        Ok(n)
    }

    fn floor(&self, task: &str) -> Res<usize> {
        let words = cmp::text::query_terms(task, cmp::retrieve::MAX_TERMS);
        let Some(expr) = cmp::retrieve::fts::match_expr(&words) else { return Ok(0) };
        let mut st = self.conn.prepare_cached(&floor_sql()).map_err(sql_err("floor"))?;
        let rows = st
            .query_map(
                named_params! {":q": expr, ":scope": SCOPE, ":h": self.horizon_jd, ":n": cmp::retrieve::FTS_LIMIT as i64},
                cmp::store::memory_from_row,
            )
            .map_err(sql_err("floor"))?;
        let mut n = 0;
        for r in rows {
            std::hint::black_box(r.map_err(sql_err("floor"))?);
            n += 1;
        }
        Ok(n)
    }

    fn search(&self, task: &str, opts: &str) -> Res<i64> {
        self.conn
            .prepare_cached("SELECT count(*) FROM cmp_search(?1, ?2)")
            .and_then(|mut st| st.query_row(params![task, opts], |r| r.get(0)))
            .map_err(sql_err("cmp_search"))
    }

    fn context(&self, task: &str, model: Option<&str>, session: Option<&str>) -> Res<usize> {
        self.conn
            .prepare_cached("SELECT cmp_context(?1, ?2, NULL, ?3, ?4)")
            .and_then(|mut st| st.query_row(params![task, model, session, self.now_opts], |r| r.get::<_, String>(0)))
            .map(|s| s.len())
            .map_err(sql_err("cmp_context"))
    }

    /// Brute-force cosine over the same blobs cmp scans, top 200 kept.
    fn vector_floor(&self, q: &[f32]) -> Res<usize> {
        let mut st = self.conn.prepare_cached(&vector_floor_sql()).map_err(sql_err("vector floor"))?;
        let mut rows =
            st.query(named_params! {":scope": SCOPE, ":h": self.horizon_jd}).map_err(sql_err("vector floor"))?;
        let qn = q.iter().map(|x| x * x).sum::<f32>().sqrt();
        let mut hits: Vec<(f32, i64)> = Vec::new();
        while let Some(r) = rows.next().map_err(sql_err("vector floor"))? {
            let rid: i64 = r.get(0).map_err(sql_err("vector floor"))?;
            let rusqlite::types::ValueRef::Blob(b) = r.get_ref(1).map_err(sql_err("vector floor"))? else { continue };
            if b.len() != q.len() * 4 {
                continue;
            }
            let (mut dot, mut nb) = (0f32, 0f32);
            for (c, x) in b.chunks_exact(4).zip(q) {
                let y = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                dot += x * y;
                nb += y * y;
            }
            let cos = if nb > 0.0 && qn > 0.0 { dot / (qn * nb.sqrt()) } else { 0.0 };
            hits.push((cos, rid));
        }
        let k = cmp::retrieve::VECTOR_LIMIT.min(hits.len());
        if k > 0 {
            hits.select_nth_unstable_by(k - 1, |a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            hits.truncate(k);
            hits.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        }
        Ok(std::hint::black_box(hits).len())
    }
}

/// What one timed step runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    PlainFloor,
    /// The floor's query ordered by `rank, rowid`: the same rows, sorted by a top-N sorter.
    TopNFloor,
    Floor,
    Search,
    Context(usize),
    /// A session turn of the profile `MODELS[i]`.
    Session(usize),
    VectorFloor,
    VectorSearch,
}

impl Step {
    fn name(self) -> String {
        match self {
            Step::PlainFloor => "plain FTS5 table, BM25 top-200 (floor)".into(),
            Step::TopNFloor => "the floor's query ordered by rank, rowid (SQLite's top-N sort)".into(),
            Step::Floor => "cmp's FTS5 query: BM25 top-200 joined to cmp_memories, eligible rows".into(),
            Step::Search => "cmp_search count(*)".into(),
            Step::Context(i) => format!("cmp_context model {}", MODELS[i].unwrap_or("NULL")),
            Step::Session(i) => format!("cmp_context session turn (model {})", MODELS[i].unwrap_or("NULL")),
            Step::VectorFloor => "brute-force cosine, Rust (vector floor)".into(),
            Step::VectorSearch => "cmp_search query_embedding (task '')".into(),
        }
    }
    fn floor(self) -> Option<Step> {
        match self {
            Step::PlainFloor | Step::VectorFloor => None,
            Step::VectorSearch => Some(Step::VectorFloor),
            _ => Some(Step::PlainFloor),
        }
    }
}

fn run_step(b: &Bench<'_>, s: Step, task: &str, vec_opts: &str, qv: &[f32]) -> Res<()> {
    match s {
        Step::PlainFloor => b.plain_floor(task, "ORDER BY rank").map(drop),
        Step::TopNFloor => b.plain_floor(task, "ORDER BY rank, rowid").map(drop),
        Step::Floor => b.floor(task).map(drop),
        Step::Search => b.search(task, &b.now_opts).map(drop),
        Step::Context(i) => b.context(task, MODELS[i], None).map(drop),
        Step::Session(i) => b.context(task, MODELS[i], Some(SESSION)).map(drop),
        Step::VectorFloor => b.vector_floor(qv).map(drop),
        Step::VectorSearch => b.search("", vec_opts).map(drop),
    }
}

/// A reused corpus may hold the sessions of an earlier run: they start at turn 1 again (seeded with
/// `seed` refs, see [`seed_session`]).
fn start_sessions(conn: &Connection, seed: usize) -> Res<()> {
    for sid in [SESSION, PHASES_SESSION] {
        conn.query_row("SELECT cmp_session_reset(?1)", [sid], |_| Ok(())).map_err(sql_err("cmp_session_reset"))?;
    }
    if seed > 0 {
        seed_session(conn, seed)?;
    }
    Ok(())
}

/// `--session-seed N`: the session starts holding N refs (memories spread over the corpus), all
/// served at a turn it never reaches, so none goes cold and the known set stays at N (capped at 512;
/// the refs of each pack are then dropped by the cap, so `new` stays empty). Packs on this corpus hold
/// well under 128 items, so the 512-ref cap is never reached by turns alone: this measures a turn's
/// cost at the cap. The state is written as cmp stores it (an internal table, written only here).
fn seed_session(conn: &Connection, n: usize) -> Res<()> {
    let total: i64 = conn.query_row("SELECT count(*) FROM cmp_memories", [], |r| r.get(0)).map_err(sql_err("seed"))?;
    let step = (total / n.max(1) as i64).max(1);
    let ids: Vec<String> = conn
        .prepare(&format!("SELECT id FROM cmp_memories WHERE rid % {step} = 0 ORDER BY rid LIMIT {n}"))
        .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect())
        .map_err(sql_err("seed"))?;
    let known: serde_json::Map<String, Value> = ids.into_iter().map(|id| (id, json!(1_000_000_000))).collect();
    let state = json!({"turn": 0, "cursor": 0, "known": known, "trajectory": [], "centroid": {}}).to_string();
    conn.execute(
        "INSERT INTO cmp_sessions(session_id, scope, turn, cursor, state, updated_at) VALUES (?1, ?2, 0, 0, ?3, '')",
        params![SESSION, SCOPE, state],
    )
    .map_err(sql_err("seed"))?;
    Ok(())
}

/// Where a call's time goes: cmp's own phase counters (`cmp::timing`) over one pass of the tasks,
/// for the generic profile without and with a session, as mean ms per call.
fn phase_table(b: &Bench<'_>, tasks: &[String]) -> Res<String> {
    let mut md = String::from(
        "\n| phase (mean ms per call) | cmp_context generic | claude | gpt | cursor | generic with a session |\n|---|---|---|---|---|---|\n",
    );
    let mut cols: Vec<Vec<(&'static str, f64)>> = Vec::new();
    let runs = [None, Some("claude"), Some("gpt"), Some("cursor")].map(|m| (m, None));
    for (model, session) in runs.into_iter().chain([(None, Some(PHASES_SESSION))]) {
        // The floor runs right before each call, so the two see the same cache.
        let (mut total, mut floor) = (Duration::ZERO, Duration::ZERO);
        cmp::timing::enable(true);
        let _ = cmp::timing::take();
        for task in tasks {
            let t = Instant::now();
            b.plain_floor(task, "ORDER BY rank")?;
            floor += t.elapsed();
            let t = Instant::now();
            b.context(task, model, session)?;
            total += t.elapsed();
        }
        cmp::timing::enable(false);
        let per_call = |d: Duration| d.as_secs_f64() * 1000.0 / tasks.len() as f64;
        let mut v: Vec<(&'static str, f64)> =
            cmp::timing::take().into_iter().map(|(n, d, _)| (n, per_call(d))).collect();
        v.push(("whole call, from the host", per_call(total)));
        v.push(("plain FTS5 floor, run before each call", per_call(floor)));
        cols.push(v);
    }
    let mut names: Vec<&'static str> = Vec::new();
    for c in &cols {
        for (n, _) in c {
            if !names.contains(n) {
                names.push(n);
            }
        }
    }
    for n in names {
        let cell = |c: &Vec<(&'static str, f64)>| {
            c.iter().find(|x| x.0 == n).map_or("—".to_string(), |x| format!("{:.3}", x.1))
        };
        let cells: Vec<String> = cols.iter().map(cell).collect();
        let _ = writeln!(md, "| {n} | {} |", cells.join(" | "));
    }
    Ok(md)
}

/// SHA-256 over every profile's cmp_context output and the cmp_search rows of `tasks`.
fn digest(b: &Bench<'_>, tasks: &[String]) -> Res<String> {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for task in tasks {
        for m in MODELS {
            let out: String = b
                .conn
                .query_row("SELECT cmp_context(?1, ?2, NULL, NULL, ?3)", params![task, m, b.now_opts], |r| r.get(0))
                .map_err(sql_err("digest"))?;
            h.update(out.as_bytes());
        }
        let mut st = b
            .conn
            .prepare_cached("SELECT ref, relevance, why, fused_rank FROM cmp_search(?1, ?2)")
            .map_err(sql_err("digest"))?;
        let mut rows = st.query(params![task, b.now_opts]).map_err(sql_err("digest"))?;
        while let Some(r) = rows.next().map_err(sql_err("digest"))? {
            let row: (String, Option<f64>, String, Option<i64>) = (
                r.get(0).unwrap_or_default(),
                r.get(1).ok().flatten(),
                r.get(2).unwrap_or_default(),
                r.get(3).ok().flatten(),
            );
            h.update(format!("{row:?}\n").as_bytes());
        }
    }
    Ok(cmp::envelope::hex(&h.finalize()))
}

/// The digests of what cmp returns for the first --digest tasks, printed: stateless calls (every
/// profile, and the search rows) and session turns. An optimisation that must not change packs must
/// not change either.
fn digests(b: &Bench<'_>, tasks: &[String]) -> Res<(Option<String>, Option<String>)> {
    if tasks.is_empty() || !b.has_context {
        return Ok((None, None));
    }
    let (plain, sessions) = (digest(b, tasks)?, session_digest(b, tasks)?);
    eprintln!("bench: digest of {} tasks: {plain}", tasks.len());
    eprintln!("bench: session digest of {} tasks: {sessions}", tasks.len());
    Ok((Some(plain), Some(sessions)))
}

/// A digest of what session turns return: for every profile, and for the generic one with
/// `send: "delta"` and with the json format, one session through `tasks` in order (every envelope,
/// then the state `cmp_session` shows). A change to how sessions are read or stored must not move it.
fn session_digest(b: &Bench<'_>, tasks: &[String]) -> Res<String> {
    use sha2::{Digest, Sha256};
    const SID: &str = "bench-digest";
    let now: Value = serde_json::from_str(&b.now_opts).map_err(|e| e.to_string())?;
    let with = |k: &str, v: &str| {
        let mut o = now.clone();
        o[k] = json!(v);
        o.to_string()
    };
    let mut runs: Vec<(Option<&str>, String)> = MODELS.iter().map(|m| (*m, b.now_opts.clone())).collect();
    runs.push((None, with("send", "delta")));
    runs.push((None, with("format", "json")));
    let mut h = Sha256::new();
    for (model, opts) in &runs {
        b.conn.query_row("SELECT cmp_session_reset(?1)", [SID], |_| Ok(())).map_err(sql_err("session digest"))?;
        for task in tasks {
            let out: String = b
                .conn
                .query_row("SELECT cmp_context(?1, ?2, NULL, ?3, ?4)", params![task, model, SID, opts], |r| r.get(0))
                .map_err(sql_err("session digest"))?;
            h.update(out.as_bytes());
        }
        let state: String =
            b.conn.query_row("SELECT cmp_session(?1)", [SID], |r| r.get(0)).map_err(sql_err("session digest"))?;
        h.update(state.as_bytes());
    }
    b.conn.query_row("SELECT cmp_session_reset(?1)", [SID], |_| Ok(())).map_err(sql_err("session digest"))?;
    Ok(cmp::envelope::hex(&h.finalize()))
}

fn percentile(sorted: &[Duration], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i].as_secs_f64() * 1000.0
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Res<()> {
    let a = parse_args()?;
    let started = Instant::now();
    let db =
        a.db.clone()
            .unwrap_or_else(|| std::env::temp_dir().join(format!("cmp-bench-{}-{}-{}.db", a.corpus, a.n, a.seed)));
    let mach = machine();
    eprintln!("bench: {} corpus, {} rows (seed {}) at {}", a.corpus, a.n, a.seed, db.display());

    let (conn, built) = corpus_db(&a, &db)?;
    if let Some((g, i)) = built {
        eprintln!("bench: generated in {g:.1}s, inserted in {i:.1}s ({:.0} rows/s)", a.n as f64 / i);
    } else {
        eprintln!("bench: reusing {}", db.display());
    }
    let ins = insert_rates(&a, &db)?;
    eprintln!(
        "bench: insert {} rows: cmp {:.0} rows/s row by row ({:.0} with cmp_flush), {:.0} staged ({:.0} with \
         cmp_flush), plain FTS5 {:.0}",
        ins.rows, ins.row_by_row.0, ins.row_by_row.1, ins.staged.0, ins.staged.1, ins.fts
    );
    let peak_build_kb = status_kb("VmHWM:");

    let counts: (i64, i64, i64) = conn
        .query_row(
            "SELECT count(*), sum(embedding IS NOT NULL), (SELECT count(*) FROM cmp_entities) FROM cmp_memories",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .map_err(sql_err("counts"))?;
    let sqlite_version: String =
        conn.query_row("SELECT sqlite_version()", [], |r| r.get(0)).map_err(sql_err("sqlite_version"))?;
    let cmp_version: String = conn.query_row("SELECT cmp_version()", [], |r| r.get(0)).unwrap_or_default();
    let has_context = match conn.prepare("SELECT cmp_context('probe')") {
        Ok(_) => true,
        Err(e) if e.to_string().contains("no such function: cmp_context") => false,
        Err(e) => return Err(format!("probing cmp_context: {e}")),
    };
    let mut notes = Vec::new();
    if !has_context {
        notes.push("cmp_context is not available in this build (no such function): its rows are skipped".to_string());
        eprintln!("bench: NOTE: {}", notes[0]);
    }
    if has_context {
        start_sessions(&conn, a.session_seed)?;
    }

    let now = corpus::bench_now();
    let horizon_jd: f64 = conn.query_row("SELECT julianday(?1)", [&now], |r| r.get(0)).map_err(sql_err("julianday"))?;
    let b = Bench { conn: &conn, now_opts: json!({"now": now}).to_string(), horizon_jd, has_context };
    // The warm-up asks other questions than the timed ones: a timed call never meets a task the
    // connection was asked before the clock started.
    let all = a.tasks + a.warmup;
    let mut tasks = if a.corpus == "real" { realtext::tasks(&a.data, all)? } else { corpus::tasks(a.seed, all) };
    let warm = tasks.split_off(a.tasks.min(tasks.len()));
    let qvecs: Vec<Vec<f32>> = (0..tasks.len()).map(|i| corpus::unit_vector(a.seed ^ 0xface, i as u64)).collect();
    let vec_opts: Vec<String> = qvecs.iter().map(|v| json!({"now": now, "query_embedding": v}).to_string()).collect();

    let mut steps = vec![Step::PlainFloor, Step::TopNFloor, Step::Floor, Step::Search];
    if b.has_context {
        steps.extend((0..MODELS.len()).map(Step::Context));
        steps.push(Step::Session(a.session_model));
    }
    steps.extend([Step::VectorFloor, Step::VectorSearch]);
    if let Some(only) = &a.steps {
        // A subset (for profiling): each subject keeps its floor.
        let wanted = |s: &Step| match s {
            Step::PlainFloor | Step::VectorFloor => false,
            Step::TopNFloor => only.iter().any(|o| o == "topn"),
            Step::Floor => only.iter().any(|o| o == "join"),
            Step::Search => only.iter().any(|o| o == "search"),
            Step::Context(i) => only.iter().any(|o| o == MODELS[*i].unwrap_or("generic")),
            Step::Session(_) => only.iter().any(|o| o == "session"),
            Step::VectorSearch => only.iter().any(|o| o == "vector"),
        };
        let keep: Vec<Step> = steps.iter().copied().filter(wanted).collect();
        let floors: Vec<Step> = steps.iter().copied().filter(|s| keep.iter().any(|k| k.floor() == Some(*s))).collect();
        let floor_only = only.iter().any(|o| o == "floor");
        steps.retain(|s| keep.contains(s) || floors.contains(s) || (floor_only && *s == Step::PlainFloor));
    }

    let rss_reset = reset_peak_rss();
    // Warm-up: page cache, prepared statements, the entity gazetteer.
    let t = Instant::now();
    for (i, task) in warm.iter().enumerate() {
        let i = i % tasks.len().max(1);
        for &s in &steps {
            run_step(&b, s, task, &vec_opts[i], &qvecs[i])?;
        }
    }
    eprintln!("bench: warm-up {} other tasks in {:.1}s", warm.len(), t.elapsed().as_secs_f64());

    let own: Vec<Connection> =
        if a.once { steps.iter().map(|_| cold_conn(&db)).collect::<Res<_>>()? } else { Vec::new() };
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); steps.len()];
    let t = Instant::now();
    for round in 0..a.rounds {
        for (i, task) in tasks.iter().enumerate() {
            // Rotate the order per task so no step always runs first (cache) or last.
            let k = steps.len();
            for j in 0..k {
                let si = (i + round + j) % k;
                if a.touch {
                    b.conn.execute(TOUCH, []).map_err(sql_err("--touch-between"))?;
                }
                let fresh = if a.cold { Some(cold_conn(&db)?) } else { None };
                let on = match (&fresh, own.get(si)) {
                    (Some(c), _) | (None, Some(c)) => Bench { conn: c, ..b.clone() },
                    (None, None) => b.clone(),
                };
                let t0 = Instant::now();
                run_step(&on, steps[si], task, &vec_opts[i], &qvecs[i])?;
                times[si].push(t0.elapsed());
            }
        }
    }
    eprintln!("bench: timed {} rounds × {} tasks in {:.1}s", a.rounds, tasks.len(), t.elapsed().as_secs_f64());
    // After the clock: computing them asks the timed tasks again.
    let (digest, session_digest) = digests(&b, &tasks[..a.digest.min(tasks.len())])?;
    if let Some(f) = &a.per_task {
        // One line per task: each timed step's milliseconds (in step order), then the task.
        let mut o = String::new();
        for (i, task) in tasks.iter().enumerate() {
            let row: Vec<String> = times.iter().map(|t| format!("{:.4}", t[i].as_secs_f64() * 1000.0)).collect();
            let _ = writeln!(o, "{}\t{}", row.join("\t"), task.replace('\t', " "));
        }
        std::fs::write(f, o).map_err(|e| format!("--per-task {f}: {e}"))?;
    }
    let peak_query_kb = status_kb("VmHWM:");
    let phases = if a.phases && b.has_context { phase_table(&b, &tasks)? } else { String::new() };

    for t in &mut times {
        t.sort();
    }
    let stat = |s: Step| -> (f64, f64, f64) {
        let i = steps.iter().position(|x| *x == s).unwrap_or(0);
        let mean = times[i].iter().map(Duration::as_secs_f64).sum::<f64>() * 1000.0 / times[i].len().max(1) as f64;
        (percentile(&times[i], 0.50), percentile(&times[i], 0.95), mean)
    };

    let mut md = String::new();
    let _ =
        writeln!(md, "# cmp bench: {} corpus, {} rows, {} tasks × {} round(s)\n", a.corpus, a.n, tasks.len(), a.rounds);
    let _ = writeln!(
        md,
        "Machine: {} × {} ({} {}); SQLite {sqlite_version}; cmp {cmp_version}.  \nCommand: `{}`  \n\
         Corpus: {} rows at {} ({} with a {}-dim embedding, {} entities), WAL, synchronous=NORMAL; `now` = {now}.\n",
        mach["nproc"],
        mach["cpu"].as_str().unwrap_or("?"),
        mach["os"].as_str().unwrap_or("?"),
        mach["arch"].as_str().unwrap_or("?"),
        command_line(),
        counts.0,
        db.display(),
        counts.1,
        corpus::EMBED_DIMS,
        counts.2
    );
    for n in &notes {
        let _ = writeln!(md, "> NOTE: {n}\n");
    }
    let _ = writeln!(
        md,
        "| measure | p50 ms | p95 ms | mean ms | floor | floor p50 ms | floor p95 ms | × floor p50 | × floor p95 | × join query p50 |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|---|");
    let join50 = if steps.contains(&Step::Floor) { stat(Step::Floor).0 } else { f64::NAN };
    let mut rows_json = Vec::new();
    for &s in &steps {
        let (p50, p95, mean) = stat(s);
        match s.floor() {
            None => {
                let _ = writeln!(md, "| {} | {p50:.3} | {p95:.3} | {mean:.3} | — | | | | | |", s.name());
                rows_json.push(json!({"measure": s.name(), "p50_ms": p50, "p95_ms": p95, "mean_ms": mean}));
            }
            Some(f) => {
                let (f50, f95, _) = stat(f);
                let _ = writeln!(
                    md,
                    "| {} | {p50:.3} | {p95:.3} | {mean:.3} | {} | {f50:.3} | {f95:.3} | {:.2} | {:.2} | {} |",
                    s.name(),
                    f.name(),
                    p50 / f50,
                    p95 / f95,
                    if f == Step::PlainFloor { format!("{:.2}", p50 / join50) } else { String::new() }
                );
                rows_json.push(json!({
                    "measure": s.name(), "p50_ms": p50, "p95_ms": p95, "mean_ms": mean, "floor": f.name(),
                    "floor_p50_ms": f50, "floor_p95_ms": f95, "ratio_p50": p50 / f50, "ratio_p95": p95 / f95,
                }));
            }
        }
    }
    if ins.rows > 0 {
        let _ = writeln!(
            md,
            "\n| bulk insert ({} rows, one transaction, fresh file db) | insert, rows/s | × floor | insert + cmp_flush(), rows/s | × floor |\n\
             |---|---|---|---|---|\n\
             | cmp_memories, one INSERT per row | {:.0} | {:.2} | {:.0} | {:.2} |\n\
             | cmp_memories, staged + one INSERT … SELECT | {:.0} | {:.2} | {:.0} | {:.2} |\n\
             | cmp_memories, content, kind, entities and captured_at only, one INSERT per row | {:.0} | {:.2} | {:.0} | {:.2} |\n\
             | cmp_memories without triggers (its row table and indexes alone), one INSERT per row | {:.0} | {:.2} | | |\n\
             | plain FTS5 table (floor), one INSERT per row | {:.0} | 1.00 | | |",
            ins.rows,
            ins.row_by_row.0,
            ins.row_by_row.0 / ins.fts,
            ins.row_by_row.1,
            ins.row_by_row.1 / ins.fts,
            ins.staged.0,
            ins.staged.0 / ins.fts,
            ins.staged.1,
            ins.staged.1 / ins.fts,
            ins.app_columns.0,
            ins.app_columns.0 / ins.fts,
            ins.app_columns.1,
            ins.app_columns.1 / ins.fts,
            ins.row_table,
            ins.row_table / ins.fts,
            ins.fts
        );
    }
    md.push_str(&phases);
    let mb = |kb: Option<u64>| kb.map_or("n/a".to_string(), |k| format!("{:.1} MiB", k as f64 / 1024.0));
    let _ = writeln!(
        md,
        "\nPeak RSS (VmHWM): {} while generating the corpus and measuring inserts; {} during the queries{}.  \nWall: {:.0} s.",
        mb(peak_build_kb),
        mb(peak_query_kb),
        if rss_reset { " (peak reset before the query phase)" } else { " (could not reset the peak: cumulative)" },
        started.elapsed().as_secs_f64()
    );
    print!("{md}");

    if let Some(out) = &a.json {
        let j = json!({
            "harness": "bench",
            "command": command_line(),
            "machine": mach,
            "sqlite_version": sqlite_version,
            "cmp_version": cmp_version,
            "corpus": a.corpus, "digest": digest, "session_digest": session_digest, "n": a.n, "seed": a.seed, "tasks": tasks.len(), "rounds": a.rounds,
            "rows": counts.0, "embedded_rows": counts.1, "entities": counts.2, "embed_dims": corpus::EMBED_DIMS,
            "notes": notes,
            "latency": rows_json,
            "insert": {"rows": ins.rows, "cmp_rows_per_s": ins.row_by_row.0, "cmp_with_flush_rows_per_s": ins.row_by_row.1,
                       "cmp_staged_rows_per_s": ins.staged.0, "cmp_staged_with_flush_rows_per_s": ins.staged.1,
                       "cmp_app_columns_rows_per_s": ins.app_columns.0, "cmp_app_columns_with_flush_rows_per_s": ins.app_columns.1, "row_table_rows_per_s": ins.row_table, "fts5_rows_per_s": ins.fts},
            "peak_rss_kb": {"build": peak_build_kb, "queries": peak_query_kb, "reset": rss_reset},
        });
        std::fs::write(out, serde_json::to_string_pretty(&j).unwrap_or_default())
            .map_err(|e| format!("--json {out}: {e}"))?;
        eprintln!("bench: wrote {out}");
    }
    Ok(())
}
