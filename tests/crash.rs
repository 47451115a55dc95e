//! Crash safety: processes killed with SIGKILL in the middle of bulk inserts and session turns leave
//! an intact database, every acknowledged write in it, and sessions whose next delta is still
//! consistent with what the client was told.
//!
//! The parent test spawns worker processes (this test binary again, with `CMP_CRASH_*` variables
//! selecting `crash_worker`) on one WAL database. Each worker loops: a bulk insert of [`BATCH`] rows in
//! one transaction (which also supersedes a row of its previous batch), then two session turns on its
//! own session (`cmp_context(task, 'claude', 2000, sid, {"now": NOW})`, half of them inside
//! `BEGIN IMMEDIATE … COMMIT`, half in autocommit). After each commit it prints and flushes one line:
//! `BATCH …` or `DELTA <working_memory>`: a printed line is what the client was acknowledged. The
//! parent kills the workers at varied moments (`Child::kill` is SIGKILL on Unix), then checks:
//! - `PRAGMA integrity_check` is ok and FTS5's own integrity-check passes;
//! - every acknowledged batch is present whole (with its supersede); the one in flight is all or none;
//! - per session, the acknowledged deltas have consecutive cursors and replay soundly onto the client's
//!   mirror (nothing new twice, nothing evicted that was not held); the session's cursor is either the
//!   last acknowledged one (then mirror = known set) or one more (the in-flight turn committed but its
//!   delta never reached the client);
//! - either way the next turn (run by the parent) is valid against the stored known set: every `new`
//!   ref was not known, every evicted or superseded ref was, and the known set afterwards is exactly
//!   the old one minus those plus the new ones. The client then resynchronises from `cmp_session`.
//!
//! Unix only (SIGKILL semantics); elsewhere `Child::kill` is TerminateProcess, which is as abrupt.

mod common;

use common::NOW;
use rusqlite::{params, Connection, ErrorCode};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Kill rounds.
const ROUNDS: u32 = 5;
/// Worker processes per round (each with its own session, kept across rounds).
const WORKERS: u32 = 2;
/// Rows per bulk insert transaction.
const BATCH: u32 = 25;
/// A worker stops by itself after this long, should the parent die before killing it.
const WORKER_LIFETIME: Duration = Duration::from_secs(40);
const TASKS: &[&str] = &["atlas launch", "pricing review", "marketing site docs", "weekend email rule", "hiring plan"];
const TOPICS: &[&str] = &["atlas launch", "pricing review", "marketing site", "docs", "weekend email", "hiring plan"];

fn session_id(worker: u32) -> String {
    format!("sess-{worker}")
}

/// `mem_` + 12 hex: round, worker, batch, row.
fn mem_id(round: u32, worker: u32, batch: u32, row: u32) -> String {
    format!("mem_{round:02x}{worker:02x}{batch:04x}{row:04x}")
}

fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _) if matches!(f.code, ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked))
}

fn opts() -> String {
    json!({ "now": NOW }).to_string()
}

// ---------------------------------------------------------------------------------------------
// The worker process.

/// Inserts batch `k` (and supersedes the first row of batch `k - 1` by its first row), in one
/// transaction; retries when the database is busy.
fn insert_batch(conn: &Connection, round: u32, worker: u32, k: u32) {
    loop {
        let r = (|| -> rusqlite::Result<()> {
            conn.execute_batch("BEGIN IMMEDIATE")?;
            let mut st = conn.prepare_cached(
                "INSERT INTO cmp_memories(id, kind, content, entities, captured_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            for j in 0..BATCH {
                let topic = TOPICS[((k + j) as usize) % TOPICS.len()];
                let kind = match j % 9 {
                    0 => "decision",
                    4 => "episodic",
                    _ => "semantic",
                };
                let entities = if j % 3 == 0 { r#"["Atlas"]"# } else { "[]" };
                st.execute(params![
                    mem_id(round, worker, k, j),
                    kind,
                    format!("Round {round} worker {worker} batch {k}: note {j} about the {topic}, detail {j}."),
                    entities,
                    format!("2026-05-{:02}T{:02}:00:00Z", 1 + round * 2 + worker, j % 24),
                ])?;
            }
            if k > 0 {
                conn.execute(
                    "UPDATE cmp_memories SET superseded_by = ?1, superseded_at = '2026-05-31T00:00:00Z' WHERE id = ?2",
                    params![mem_id(round, worker, k, 0), mem_id(round, worker, k - 1, 0)],
                )?;
            }
            conn.execute_batch("COMMIT")
        })();
        match r {
            Ok(()) => return,
            Err(e) => {
                let _ = conn.execute_batch("ROLLBACK");
                assert!(is_busy(&e), "bulk insert failed: {e}");
            }
        }
    }
}

/// One session turn; returns the committed `working_memory`. Retries when the database is busy.
fn turn(conn: &Connection, sid: &str, task: &str, explicit: bool) -> Value {
    loop {
        let r = (|| -> rusqlite::Result<String> {
            if explicit {
                conn.execute_batch("BEGIN IMMEDIATE")?;
            }
            let v = conn
                .query_row("SELECT cmp_context(?1, 'claude', 2000, ?2, ?3)", params![task, sid, opts()], |r| r.get(0));
            if explicit {
                match &v {
                    Ok(_) => conn.execute_batch("COMMIT")?,
                    Err(_) => conn.execute_batch("ROLLBACK")?,
                }
            }
            v
        })();
        match r {
            Ok(text) => {
                let env: Value = serde_json::from_str(&text).unwrap();
                return env["working_memory"].clone();
            }
            Err(e) => assert!(is_busy(&e), "turn failed: {e}"),
        }
    }
}

fn work(db: &Path, round: u32, worker: u32) {
    let conn = Connection::open(db).unwrap();
    cmp::register(&conn).unwrap();
    conn.busy_timeout(Duration::from_secs(30)).unwrap();
    let sid = session_id(worker);
    let start = Instant::now();
    let mut out = std::io::stdout().lock();
    let mut turns = 0usize;
    // A leading newline: the test harness may have printed `test crash_worker ... ` on this line.
    writeln!(out).unwrap();
    for k in 0.. {
        if start.elapsed() > WORKER_LIFETIME {
            break;
        }
        insert_batch(&conn, round, worker, k);
        writeln!(out, "BATCH {k}").unwrap();
        out.flush().unwrap();
        for _ in 0..2 {
            let task = TASKS[(turns + worker as usize) % TASKS.len()];
            let wm = turn(&conn, &sid, task, turns % 2 == 0);
            turns += 1;
            writeln!(out, "DELTA {wm}").unwrap();
            out.flush().unwrap();
        }
    }
}

/// The worker body: runs only when the parent test spawns this binary with `CMP_CRASH_*` set.
#[test]
fn crash_worker() {
    let (Ok(db), Ok(round), Ok(worker)) =
        (std::env::var("CMP_CRASH_DB"), std::env::var("CMP_CRASH_ROUND"), std::env::var("CMP_CRASH_WORKER"))
    else {
        return;
    };
    work(Path::new(&db), round.parse().unwrap(), worker.parse().unwrap());
}

// ---------------------------------------------------------------------------------------------
// The parent.

/// Children that are killed when dropped, so a failing parent leaves no worker behind.
struct Workers(Vec<Child>);

impl Drop for Workers {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Reads a worker's stdout until EOF: the complete `BATCH`/`DELTA` lines (a line cut by the kill has
/// no newline and was never acknowledged). Sends its worker number once per line.
fn reader(stdout: std::process::ChildStdout, worker: u32, signal: mpsc::Sender<u32>) -> JoinHandle<Vec<String>> {
    std::thread::spawn(move || {
        let mut r = BufReader::new(stdout);
        let mut lines = Vec::new();
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match r.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => break,
                Ok(_) if buf.last() != Some(&b'\n') => break,
                Ok(_) => {}
            }
            let line = String::from_utf8_lossy(&buf).trim_end().to_string();
            if line.starts_with("BATCH ") || line.starts_with("DELTA ") {
                lines.push(line);
                let _ = signal.send(worker);
            }
        }
        lines
    })
}

fn seed(path: &Path) {
    let conn = common::open_file(path);
    let mode: String = conn.query_row("PRAGMA journal_mode = wal", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
    for i in 0..40 {
        let t = TOPICS[i % TOPICS.len()];
        common::insert_memory(&conn, &common::Mem::new(&format!("Seed note {i} about the {t}: detail {i}.")));
    }
}

fn cursor_of(delta: &Value) -> i64 {
    delta["cursor"].as_str().expect("cursor is a string").parse().expect("cursor is a number")
}

fn refs(v: &Value) -> Vec<String> {
    v.as_array().unwrap().iter().map(|x| x.as_str().unwrap().to_string()).collect()
}

/// Applies one delta to a client's mirror of the session, checking it is sound for that mirror.
fn apply(mirror: &mut BTreeSet<String>, delta: &Value, what: &str) {
    let superseded: Vec<String> =
        delta["superseded"].as_array().unwrap().iter().map(|s| s["ref"].as_str().unwrap().to_string()).collect();
    for r in refs(&delta["evicted"]).into_iter().chain(superseded) {
        assert!(mirror.remove(&r), "{what}: evicted or superseded {r}, which the session did not hold");
    }
    for n in delta["new"].as_array().unwrap() {
        let r = n["ref"].as_str().unwrap().to_string();
        assert!(mirror.insert(r.clone()), "{what}: {r} announced as new but already known");
    }
}

/// The stored session: (cursor, known refs).
fn stored_session(conn: &Connection, sid: &str) -> (i64, BTreeSet<String>) {
    let s: String = conn.query_row("SELECT cmp_session(?1)", [sid], |r| r.get(0)).unwrap();
    let v: Value = serde_json::from_str(&s).unwrap();
    let cursor = match &v["cursor"] {
        Value::String(s) => s.parse().unwrap(),
        Value::Number(n) => n.as_i64().unwrap(),
        Value::Null => 0,
        other => panic!("unexpected cursor {other}"),
    };
    let known = v["known"].as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default();
    (cursor, known)
}

/// What the client side knows about one session across rounds.
#[derive(Default)]
struct Client {
    cursor: i64,
    mirror: BTreeSet<String>,
}

#[derive(Default)]
struct Tally {
    acked_batches: usize,
    inflight_batches_committed: usize,
    acked_turns: usize,
    inflight_turns_committed: usize,
}

fn count_batch(conn: &Connection, round: u32, worker: u32, k: u32) -> u32 {
    conn.query_row(
        "SELECT count(*) FROM cmp_memories WHERE id BETWEEN ?1 AND ?2",
        params![mem_id(round, worker, k, 0), mem_id(round, worker, k, BATCH - 1)],
        |r| r.get(0),
    )
    .unwrap()
}

fn superseded_by(conn: &Connection, id: &str) -> Option<String> {
    conn.query_row("SELECT superseded_by FROM cmp_memories WHERE id = ?1", [id], |r| r.get(0)).unwrap()
}

/// Checks the database after the workers of `round` were killed.
fn check(db: &Path, round: u32, outputs: &[Vec<String>], clients: &mut [Client], tally: &mut Tally) {
    let conn = common::open_file(db);
    let ok: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(ok, "ok", "round {round}: integrity_check");
    conn.execute("INSERT INTO cmp_memories_fts(cmp_memories_fts, rank) VALUES ('integrity-check', 1)", [])
        .unwrap_or_else(|e| panic!("round {round}: FTS integrity-check failed: {e}"));

    for (w, lines) in outputs.iter().enumerate() {
        let worker = w as u32;
        let what = format!("round {round}, worker {worker}");
        // Inserts: acknowledged batches are 0..acked, each present whole with its supersede; the batch
        // in flight is all or nothing; none after it.
        let batches: Vec<u32> =
            lines.iter().filter_map(|l| l.strip_prefix("BATCH ")).map(|k| k.parse().unwrap()).collect();
        assert_eq!(batches, (0..batches.len() as u32).collect::<Vec<_>>(), "{what}: batch acknowledgements");
        let acked = batches.len() as u32;
        tally.acked_batches += acked as usize;
        for k in 0..acked {
            assert_eq!(count_batch(&conn, round, worker, k), BATCH, "{what}: acknowledged batch {k} lost rows");
            if k > 0 {
                assert_eq!(
                    superseded_by(&conn, &mem_id(round, worker, k - 1, 0)),
                    Some(mem_id(round, worker, k, 0)),
                    "{what}: acknowledged supersede of batch {k} lost"
                );
            }
        }
        match count_batch(&conn, round, worker, acked) {
            0 => {}
            n if n == BATCH => {
                tally.inflight_batches_committed += 1;
                if acked > 0 {
                    assert_eq!(
                        superseded_by(&conn, &mem_id(round, worker, acked - 1, 0)),
                        Some(mem_id(round, worker, acked, 0)),
                        "{what}: the in-flight batch committed without its supersede"
                    );
                }
            }
            n => panic!("{what}: the in-flight batch {acked} is half-written: {n} of {BATCH} rows"),
        }
        assert_eq!(count_batch(&conn, round, worker, acked + 1), 0, "{what}: a batch after the in-flight one");

        // Sessions: replay the acknowledged deltas onto the client's mirror.
        let sid = session_id(worker);
        let client = &mut clients[w];
        for l in lines.iter().filter_map(|l| l.strip_prefix("DELTA ")) {
            let delta: Value = serde_json::from_str(l).unwrap();
            assert_eq!(cursor_of(&delta), client.cursor + 1, "{what}: acknowledged cursors must be consecutive");
            apply(&mut client.mirror, &delta, &what);
            client.cursor += 1;
            tally.acked_turns += 1;
        }
        let (cursor, known) = stored_session(&conn, &sid);
        if cursor == client.cursor {
            assert_eq!(client.mirror, known, "{what}: the session's known set differs from the acknowledged deltas");
        } else {
            assert_eq!(
                cursor,
                client.cursor + 1,
                "{what}: the stored cursor must be the last acknowledged one, or one more (the turn in flight)"
            );
            tally.inflight_turns_committed += 1;
        }

        // The next turn is valid against the stored state, whatever the client missed.
        let task = TASKS[(round as usize + w) % TASKS.len()];
        let next = turn(&conn, &sid, task, false);
        assert_eq!(cursor_of(&next), cursor + 1, "{what}: the next turn's cursor");
        let mut expected = known.clone();
        apply(&mut expected, &next, &format!("{what}, next turn"));
        let (after_cursor, after) = stored_session(&conn, &sid);
        assert_eq!(after_cursor, cursor + 1);
        assert_eq!(after, expected, "{what}: the known set after the next turn");
        // The client resynchronises from the stored state (as a client that lost a reply would).
        client.cursor = after_cursor;
        client.mirror = after;
    }
    let ok: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(ok, "ok", "round {round}: integrity_check after the next turns");
}

fn spawn_worker(exe: &Path, db: &Path, dir: &Path, round: u32, worker: u32) -> Child {
    let stderr = std::fs::File::create(dir.join(format!("worker-{round}-{worker}.err"))).unwrap();
    Command::new(exe)
        .args(["--exact", "crash_worker", "--nocapture", "--test-threads", "1"])
        .env("CMP_CRASH_DB", db)
        .env("CMP_CRASH_ROUND", round.to_string())
        .env("CMP_CRASH_WORKER", worker.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap()
}

#[test]
fn killed_writers_leave_an_intact_database_and_consistent_sessions() {
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let db: PathBuf = dir.path().join("crash.db");
    seed(&db);
    let exe = std::env::current_exe().unwrap();
    let mut clients: Vec<Client> = (0..WORKERS).map(|_| Client::default()).collect();
    let mut tally = Tally::default();
    for round in 0..ROUNDS {
        let mut workers = Workers(Vec::new());
        let mut readers = Vec::new();
        let (tx, rx) = mpsc::channel();
        for worker in 0..WORKERS {
            let mut child = spawn_worker(&exe, &db, dir.path(), round, worker);
            readers.push(reader(child.stdout.take().unwrap(), worker, tx.clone()));
            workers.0.push(child);
        }
        drop(tx);
        // Let every worker acknowledge something, then kill them at a varied moment: 150 to 870 ms
        // later, staggered by worker.
        let mut acknowledged = BTreeSet::new();
        while acknowledged.len() < WORKERS as usize {
            acknowledged
                .insert(rx.recv_timeout(Duration::from_secs(30)).expect("a worker acknowledged nothing in 30 s"));
        }
        let delay = 150 + u64::from(round * 97 % 5) * 180;
        for (i, child) in workers.0.iter_mut().enumerate() {
            std::thread::sleep(Duration::from_millis(if i == 0 { delay } else { 13 * i as u64 }));
            if let Some(status) = child.try_wait().unwrap() {
                let err = std::fs::read_to_string(dir.path().join(format!("worker-{round}-{i}.err"))).unwrap();
                panic!("round {round}: worker {i} exited by itself ({status}) before the kill:\n{err}");
            }
            child.kill().unwrap();
        }
        for child in &mut workers.0 {
            child.wait().unwrap();
        }
        let outputs: Vec<Vec<String>> = readers.into_iter().map(|r| r.join().unwrap()).collect();
        check(&db, round, &outputs, &mut clients, &mut tally);
    }
    eprintln!(
        "crash: {ROUNDS} rounds x {WORKERS} workers in {:.1} s: {} batches and {} turns acknowledged; \
         in flight at the kill and committed anyway: {} batches, {} turns",
        started.elapsed().as_secs_f64(),
        tally.acked_batches,
        tally.acked_turns,
        tally.inflight_batches_committed,
        tally.inflight_turns_committed
    );
    assert!(tally.acked_turns >= (ROUNDS * WORKERS) as usize, "too few turns ran to test anything");
}
