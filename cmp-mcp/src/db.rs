//! The one SQLite connection the server owns. A rusqlite `Connection` is `Send` but not `Sync`, so it
//! lives behind a std `Mutex`, and every use runs on tokio's blocking pool: a slow pack never stalls
//! the async loop, and calls are serialised exactly as they would be on one connection anyway.
//!
//! A call may carry a deadline. One that is still waiting for the connection when its deadline passes
//! never starts; one that is running is interrupted (`sqlite3_interrupt`), so a runaway statement
//! cannot hold the connection past its caller's time limit.

use crate::tools::{Kind, ToolError};
use rusqlite::{Connection, InterruptHandle};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a call waits for another process's write lock before failing with "database is locked".
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// What the deadline machinery shares with the blocking jobs.
struct Watch {
    interrupt: InterruptHandle,
    /// Number of the job now running on the connection, 0 when none. Jobs set and clear it, and a
    /// caller whose deadline passed interrupts only while it holds this lock and sees its own number.
    running: Mutex<u64>,
    next: AtomicU64,
}

/// A shared handle on the connection.
#[derive(Clone)]
pub struct Db {
    conn: Arc<Mutex<Connection>>,
    watch: Arc<Watch>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic cannot leave the connection mid-statement (rusqlite finalises on unwind, and a
    // transaction rolls back on drop), so a poisoned lock is still safe to use.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn timeout_error() -> ToolError {
    ToolError::new(Kind::Timeout, "the call ran past the server's time limit and was stopped")
}

impl Db {
    /// Opens (creating if needed) the database, registers cmp and applies its schema.
    pub fn open(path: &Path) -> Result<Db, String> {
        let conn = Connection::open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(|e| e.to_string())?;
        cmp::register(&conn).map_err(|e| e.to_string())?;
        conn.query_row("SELECT cmp_init()", [], |_| Ok(())).map_err(|e| e.to_string())?;
        let watch = Watch { interrupt: conn.get_interrupt_handle(), running: Mutex::new(0), next: AtomicU64::new(1) };
        Ok(Db { conn: Arc::new(Mutex::new(conn)), watch: Arc::new(watch) })
    }

    /// Runs `f` with exclusive use of the connection, off the async threads, and gives up at
    /// `deadline` (when given) with a [`Kind::Timeout`] error. A panic in `f` becomes an error
    /// message, never the end of the server.
    pub async fn call<T, F>(&self, deadline: Option<Instant>, f: F) -> Result<T, ToolError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, ToolError> + Send + 'static,
    {
        let (conn, watch) = (self.conn.clone(), self.watch.clone());
        let id = self.watch.next.fetch_add(1, Ordering::Relaxed);
        let job = move || {
            let mut conn = lock(&conn);
            {
                let mut running = lock(&watch.running);
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    return Err(timeout_error());
                }
                *running = id;
            }
            let out = f(&mut conn);
            *lock(&watch.running) = 0;
            out
        };
        let mut handle = tokio::task::spawn_blocking(job);
        let joined = match deadline {
            None => handle.await,
            Some(d) => match tokio::time::timeout_at(tokio::time::Instant::from_std(d), &mut handle).await {
                Ok(joined) => joined,
                Err(_) => {
                    let running = lock(&self.watch.running);
                    if *running == id {
                        self.watch.interrupt.interrupt();
                    }
                    return Err(timeout_error());
                }
            },
        };
        joined.unwrap_or_else(|e| Err(ToolError::new(Kind::Internal, format!("cmp-mcp: internal error: {e}"))))
    }

    /// Like [`Db::call`] for code whose errors are plain messages, with no deadline.
    pub async fn call_plain<T, F>(&self, f: F) -> Result<T, String>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, String> + Send + 'static,
    {
        self.call(None, move |c| f(c).map_err(ToolError::from)).await.map_err(|e| e.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_runaway_statement_is_interrupted_at_its_deadline() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Db::open(&dir.path().join("t.db")).expect("open");
        let started = Instant::now();
        let endless = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n";
        let err = db
            .call(Some(Instant::now() + Duration::from_millis(200)), move |c| {
                Ok(c.query_row(endless, [], |r| r.get::<_, i64>(0)).map_err(|e| e.to_string())?)
            })
            .await
            .expect_err("must time out");
        assert_eq!(err.kind, Kind::Timeout);
        // The connection is free again at once: the statement was interrupted, not left running.
        let one: i64 = db
            .call(Some(Instant::now() + Duration::from_secs(5)), |c| {
                Ok(c.query_row("SELECT 1", [], |r| r.get(0)).map_err(|e| e.to_string())?)
            })
            .await
            .expect("the next call runs");
        assert_eq!(one, 1);
        assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());
    }

    #[tokio::test]
    async fn a_call_whose_deadline_passed_in_the_queue_never_starts() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Db::open(&dir.path().join("t.db")).expect("open");
        let err = db
            .call(Some(Instant::now() - Duration::from_millis(1)), |c| {
                c.execute("CREATE TABLE never(x)", []).map_err(|e| e.to_string())?;
                Ok(())
            })
            .await
            .expect_err("past deadline");
        assert_eq!(err.kind, Kind::Timeout);
        let n: i64 = db
            .call_plain(|c| {
                c.query_row("SELECT count(*) FROM sqlite_master WHERE name = 'never'", [], |r| r.get(0))
                    .map_err(|e| e.to_string())
            })
            .await
            .expect("count");
        assert_eq!(n, 0);
    }
}
