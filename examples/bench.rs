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
//! - the floor: the raw FTS5 BM25 top-200 query retrieval starts from (the SQL of
//!   `src/retrieve/fts.rs` over `ELIGIBLE`, same parameters, rows materialised the same way);
//! - `SELECT count(*) FROM cmp_search(?, ?)`;
//! - `SELECT cmp_context(?, model, NULL, NULL, ?)` for models NULL, claude, gpt, cursor;
//! - a session turn: the same call with a session id;
//! - vector retrieval over 384-dimensional user embeddings (`cmp_search('', {query_embedding})`)
//!   against a brute-force cosine loop in Rust over the same blobs read with SELECT.
//!
//! Also the bulk insert rate into `cmp_memories` (with cmp's triggers) against the same rows into a
//! plain FTS5 table, each in one transaction on a fresh file database, and peak RSS.

#[path = "common/corpus.rs"]
mod corpus;

use rusqlite::{named_params, params, Connection, OpenFlags};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

const TOKENIZER: &str = "porter unicode61 remove_diacritics 2";
const SCOPE: &str = "default";
const SESSION: &str = "bench-session";
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
}

const USAGE: &str = "usage: bench [--n 100000] [--db PATH] [--tasks 200] [--seed 42] [--embed-every 10] \
[--rounds 1] [--warmup 20] [--insert-rows N] [--json OUT]";

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
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
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

fn remove_db(path: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(p));
    }
}

fn meta_key(a: &Args) -> String {
    format!("n={} seed={} embed_every={} generator={}", a.n, a.seed, a.embed_every, corpus::GENERATOR_VERSION)
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
            return Ok((conn, None));
        }
        drop(conn);
        eprintln!("bench: {} holds another corpus ({key:?}); regenerating", path.display());
        remove_db(path);
    }
    let t = Instant::now();
    let rows = corpus::generate(a.seed, a.n, a.embed_every);
    let gen_s = t.elapsed().as_secs_f64();
    let conn = open_file_db(path)?;
    cmp::register(&conn).map_err(sql_err("cmp::register"))?;
    conn.query_row("SELECT cmp_init()", [], |_| Ok(())).map_err(sql_err("cmp_init"))?;
    let t = Instant::now();
    corpus::insert(&conn, &rows).map_err(sql_err("insert corpus"))?;
    let ins_s = t.elapsed().as_secs_f64();
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS bench_corpus_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
         PRAGMA optimize; PRAGMA wal_checkpoint(TRUNCATE);",
    )
    .map_err(sql_err("meta"))?;
    conn.execute("INSERT OR REPLACE INTO bench_corpus_meta(key, value) VALUES ('corpus', ?1)", [meta_key(a)])
        .map_err(sql_err("meta"))?;
    Ok((conn, Some((gen_s, ins_s))))
}

/// Bulk insert rates (rows/s): cmp_memories with cmp's triggers vs a plain FTS5 table, same rows,
/// one transaction each, fresh file databases next to the corpus.
fn insert_rates(a: &Args, db: &Path) -> Res<(usize, f64, f64, f64)> {
    let n = a.insert_rows.unwrap_or(a.n.min(100_000));
    let rows = corpus::generate(a.seed ^ 0x1_0000, n, a.embed_every);
    let cmp_path = db.with_extension("insert-cmp.db");
    let fts_path = db.with_extension("insert-fts.db");
    remove_db(&cmp_path);
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

    let c = open_file_db(&cmp_path)?;
    cmp::register(&c).map_err(sql_err("cmp::register"))?;
    c.query_row("SELECT cmp_init()", [], |_| Ok(())).map_err(sql_err("cmp_init"))?;
    let t = Instant::now();
    corpus::insert(&c, &rows).map_err(sql_err("cmp insert"))?;
    let cmp_rate = n as f64 / t.elapsed().as_secs_f64();
    drop(c);
    remove_db(&cmp_path);

    // The bulk path: the same rows through a staging table and one INSERT … SELECT.
    let c = open_file_db(&cmp_path)?;
    cmp::register(&c).map_err(sql_err("cmp::register"))?;
    c.query_row("SELECT cmp_init()", [], |_| Ok(())).map_err(sql_err("cmp_init"))?;
    let t = Instant::now();
    corpus::insert_staged(&c, &rows).map_err(sql_err("cmp staged insert"))?;
    let staged_rate = n as f64 / t.elapsed().as_secs_f64();
    drop(c);
    remove_db(&cmp_path);
    remove_db(&fts_path);
    Ok((n, cmp_rate, staged_rate, fts_rate))
}

// -------------------------------------------------------------------------------- measurements

/// The BM25 floor: the query retrieval starts from (src/retrieve/fts.rs `sql(ELIGIBLE)`), run with
/// the same parameters and rows materialised by the same reader.
fn floor_sql() -> String {
    format!(
        "SELECT {cols}, bm25(cmp_memories_fts) AS score
         FROM cmp_memories_fts JOIN cmp_memories AS m ON m.rid = cmp_memories_fts.rowid
         WHERE cmp_memories_fts MATCH :q AND {eligible}
         ORDER BY score, m.rid LIMIT :n",
        cols = cmp::store::MEMORY_COLS,
        eligible = cmp::retrieve::ELIGIBLE
    )
}

fn vector_floor_sql() -> String {
    format!(
        "SELECT m.rid, m.embedding FROM cmp_memories AS m
         WHERE m.embedding IS NOT NULL AND {} AND {}",
        cmp::retrieve::ELIGIBLE,
        cmp::retrieve::VISIBLE
    )
}

struct Bench<'a> {
    conn: &'a Connection,
    now_opts: String,
    horizon_jd: f64,
    has_context: bool,
}

impl Bench<'_> {
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
    Floor,
    Search,
    Context(usize),
    Session,
    VectorFloor,
    VectorSearch,
}

impl Step {
    fn name(self) -> String {
        match self {
            Step::Floor => "FTS5 BM25 top-200 (floor)".into(),
            Step::Search => "cmp_search count(*)".into(),
            Step::Context(i) => format!("cmp_context model {}", MODELS[i].unwrap_or("NULL")),
            Step::Session => "cmp_context session turn (model NULL)".into(),
            Step::VectorFloor => "brute-force cosine, Rust (vector floor)".into(),
            Step::VectorSearch => "cmp_search query_embedding (task '')".into(),
        }
    }
    fn floor(self) -> Option<Step> {
        match self {
            Step::Floor | Step::VectorFloor => None,
            Step::VectorSearch => Some(Step::VectorFloor),
            _ => Some(Step::Floor),
        }
    }
}

fn run_step(b: &Bench<'_>, s: Step, task: &str, vec_opts: &str, qv: &[f32]) -> Res<()> {
    match s {
        Step::Floor => b.floor(task).map(drop),
        Step::Search => b.search(task, &b.now_opts).map(drop),
        Step::Context(i) => b.context(task, MODELS[i], None).map(drop),
        Step::Session => b.context(task, None, Some(SESSION)).map(drop),
        Step::VectorFloor => b.vector_floor(qv).map(drop),
        Step::VectorSearch => b.search("", vec_opts).map(drop),
    }
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
    let db = a.db.clone().unwrap_or_else(|| std::env::temp_dir().join(format!("cmp-bench-{}-{}.db", a.n, a.seed)));
    let mach = machine();
    eprintln!("bench: corpus {} rows (seed {}) at {}", a.n, a.seed, db.display());

    let (conn, built) = corpus_db(&a, &db)?;
    if let Some((g, i)) = built {
        eprintln!("bench: generated in {g:.1}s, inserted in {i:.1}s ({:.0} rows/s)", a.n as f64 / i);
    } else {
        eprintln!("bench: reusing {}", db.display());
    }
    let (insert_n, cmp_rate, staged_rate, fts_rate) = insert_rates(&a, &db)?;
    eprintln!(
        "bench: insert {insert_n} rows: cmp {cmp_rate:.0} rows/s (row by row), {staged_rate:.0} rows/s (staged), \
         plain FTS5 {fts_rate:.0} rows/s"
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
    // A reused corpus may hold the session of an earlier run: start it at turn 1 again.
    if has_context {
        conn.query_row("SELECT cmp_session_reset(?1)", [SESSION], |_| Ok(())).map_err(sql_err("cmp_session_reset"))?;
    }

    let now = corpus::bench_now();
    let horizon_jd: f64 = conn.query_row("SELECT julianday(?1)", [&now], |r| r.get(0)).map_err(sql_err("julianday"))?;
    let b = Bench { conn: &conn, now_opts: json!({"now": now}).to_string(), horizon_jd, has_context };
    let tasks = corpus::tasks(a.seed, a.tasks);
    let qvecs: Vec<Vec<f32>> = (0..tasks.len()).map(|i| corpus::unit_vector(a.seed ^ 0xface, i as u64)).collect();
    let vec_opts: Vec<String> = qvecs.iter().map(|v| json!({"now": now, "query_embedding": v}).to_string()).collect();

    let mut steps = vec![Step::Floor, Step::Search];
    if b.has_context {
        steps.extend((0..MODELS.len()).map(Step::Context));
        steps.push(Step::Session);
    }
    steps.extend([Step::VectorFloor, Step::VectorSearch]);

    let rss_reset = reset_peak_rss();
    // Warm-up: page cache, prepared statements, the entity gazetteer.
    let t = Instant::now();
    for (i, task) in tasks.iter().enumerate().take(a.warmup) {
        for &s in &steps {
            run_step(&b, s, task, &vec_opts[i], &qvecs[i])?;
        }
    }
    eprintln!("bench: warm-up {} tasks in {:.1}s", a.warmup.min(tasks.len()), t.elapsed().as_secs_f64());

    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); steps.len()];
    let t = Instant::now();
    for round in 0..a.rounds {
        for (i, task) in tasks.iter().enumerate() {
            // Rotate the order per task so no step always runs first (cache) or last.
            let k = steps.len();
            for j in 0..k {
                let si = (i + round + j) % k;
                let t0 = Instant::now();
                run_step(&b, steps[si], task, &vec_opts[i], &qvecs[i])?;
                times[si].push(t0.elapsed());
            }
        }
    }
    eprintln!("bench: timed {} rounds × {} tasks in {:.1}s", a.rounds, tasks.len(), t.elapsed().as_secs_f64());
    let peak_query_kb = status_kb("VmHWM:");

    for t in &mut times {
        t.sort();
    }
    let stat = |s: Step| -> (f64, f64, f64) {
        let i = steps.iter().position(|x| *x == s).unwrap_or(0);
        let mean = times[i].iter().map(Duration::as_secs_f64).sum::<f64>() * 1000.0 / times[i].len().max(1) as f64;
        (percentile(&times[i], 0.50), percentile(&times[i], 0.95), mean)
    };

    let mut md = String::new();
    let _ = writeln!(md, "# cmp bench: {} rows, {} tasks × {} round(s)\n", a.n, tasks.len(), a.rounds);
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
        "| measure | p50 ms | p95 ms | mean ms | floor | floor p50 ms | floor p95 ms | × floor p50 | × floor p95 |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|");
    let mut rows_json = Vec::new();
    for &s in &steps {
        let (p50, p95, mean) = stat(s);
        match s.floor() {
            None => {
                let _ = writeln!(md, "| {} | {p50:.3} | {p95:.3} | {mean:.3} | — | | | | |", s.name());
                rows_json.push(json!({"measure": s.name(), "p50_ms": p50, "p95_ms": p95, "mean_ms": mean}));
            }
            Some(f) => {
                let (f50, f95, _) = stat(f);
                let _ = writeln!(
                    md,
                    "| {} | {p50:.3} | {p95:.3} | {mean:.3} | {} | {f50:.3} | {f95:.3} | {:.1} | {:.1} |",
                    s.name(),
                    f.name(),
                    p50 / f50,
                    p95 / f95
                );
                rows_json.push(json!({
                    "measure": s.name(), "p50_ms": p50, "p95_ms": p95, "mean_ms": mean, "floor": f.name(),
                    "floor_p50_ms": f50, "floor_p95_ms": f95, "ratio_p50": p50 / f50, "ratio_p95": p95 / f95,
                }));
            }
        }
    }
    let _ = writeln!(
        md,
        "\n| bulk insert ({insert_n} rows, one transaction, fresh file db) | rows/s |\n|---|---|\n\
         | cmp_memories with cmp's triggers, one INSERT per row | {cmp_rate:.0} |\n\
         | cmp_memories with cmp's triggers, staged + one INSERT … SELECT | {staged_rate:.0} |\n\
         | plain FTS5 table (floor), one INSERT per row | {fts_rate:.0} |\n\
         | cmp row by row / floor | {:.2} |\n| cmp staged / floor | {:.2} |",
        cmp_rate / fts_rate,
        staged_rate / fts_rate
    );
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
            "n": a.n, "seed": a.seed, "tasks": tasks.len(), "rounds": a.rounds,
            "rows": counts.0, "embedded_rows": counts.1, "entities": counts.2, "embed_dims": corpus::EMBED_DIMS,
            "notes": notes,
            "latency": rows_json,
            "insert": {"rows": insert_n, "cmp_rows_per_s": cmp_rate, "cmp_staged_rows_per_s": staged_rate, "fts5_rows_per_s": fts_rate},
            "peak_rss_kb": {"build": peak_build_kb, "queries": peak_query_kb, "reset": rss_reset},
        });
        std::fs::write(out, serde_json::to_string_pretty(&j).unwrap_or_default())
            .map_err(|e| format!("--json {out}: {e}"))?;
        eprintln!("bench: wrote {out}");
    }
    Ok(())
}
