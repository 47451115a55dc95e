//! The rusqlite wrapper cmp's SQL functions run their statements on. A wrapper made afresh for each
//! call would prepare every statement on every call (a few percent of a `cmp_context` call), so each
//! database connection keeps one wrapper, with its prepared statements, between calls.
//!
//! Each connection also keeps the session turn it stored last ([`LastTurn`]), for as long as its
//! wrapper.
//!
//! A connection with live statements cannot close, so the kept wrapper lives exactly as long as the
//! connection's `cmp_search` table is connected: `sqlite3_close` disconnects every virtual table
//! before it checks for live statements (FTS5 keeps its own statements the same way), and
//! disconnecting `cmp_search` drops the wrapper, which finalizes them.

use crate::session::LastTurn;
use rusqlite::{ffi, Connection};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// Statements a kept wrapper keeps prepared: more than the SQL of every store function together
/// (about 35 texts), so no call re-prepares a statement another call used (rusqlite keeps 16 by
/// default, fewer than one session turn of `cmp_context` prepares).
const KEPT_STATEMENTS: usize = 64;

/// The wrapper of one registered database handle.
enum Slot {
    /// No call holds it: the kept wrapper, or None before the first call.
    Idle(Option<Connection>),
    /// A call holds it.
    Held,
}

type Slots = Mutex<HashMap<usize, Slot>>;

fn slots() -> &'static Slots {
    static SLOTS: OnceLock<Slots> = OnceLock::new();
    SLOTS.get_or_init(Default::default)
}

type LastTurns = Mutex<HashMap<usize, LastTurn>>;

/// The session turn each registered handle stored last: kept, like its wrapper, only while the
/// handle is registered, so a handle's next turn never sees the turn of a closed connection.
fn last_turns() -> &'static LastTurns {
    static LAST: OnceLock<LastTurns> = OnceLock::new();
    LAST.get_or_init(Default::default)
}

/// The session turn `conn` stored last, taken ([`crate::session::LastTurn`]).
pub(crate) fn take_last_turn(conn: &Connection) -> Option<LastTurn> {
    // SAFETY: the handle is only a key here, never dereferenced.
    let key = unsafe { conn.handle() } as usize;
    last_turns().lock().ok()?.remove(&key)
}

/// Keeps the session turn `conn` stored last, if `conn`'s handle is registered.
pub(crate) fn keep_last_turn(conn: &Connection, turn: Option<LastTurn>) {
    // SAFETY: the handle is only a key here, never dereferenced.
    let key = unsafe { conn.handle() } as usize;
    let registered = slots().lock().is_ok_and(|s| s.contains_key(&key));
    if let (Some(turn), true, Ok(mut last)) = (turn, registered, last_turns().lock()) {
        last.insert(key, turn);
    }
}

/// Called when `db`'s `cmp_search` table is connected: from now on its wrapper may be kept.
pub(crate) fn register(db: *mut ffi::sqlite3) {
    if let Ok(mut s) = slots().lock() {
        s.entry(db as usize).or_insert(Slot::Idle(None));
    }
}

/// Called when `db`'s `cmp_search` table is disconnected (at the latest while `db` closes): its
/// wrapper and its prepared statements go.
pub(crate) fn unregister(db: *mut ffi::sqlite3) {
    if let Ok(mut last) = last_turns().lock() {
        last.remove(&(db as usize));
    }
    let kept = slots().lock().ok().and_then(|mut s| s.remove(&(db as usize)));
    // Finalized outside the lock.
    drop(kept);
}

/// What [`take`] found for a handle.
enum Found {
    /// The kept wrapper (or None before the first call), now held by the caller.
    Kept(Option<Connection>),
    /// A call on this handle holds the wrapper (a nested call).
    Busy,
    /// Not registered: `cmp_search` is not connected.
    Unregistered,
}

fn take(key: usize) -> Found {
    let Ok(mut s) = slots().lock() else { return Found::Busy };
    match s.get_mut(&key) {
        None => Found::Unregistered,
        Some(Slot::Held) => Found::Busy,
        Some(slot) => match std::mem::replace(slot, Slot::Held) {
            Slot::Idle(c) => Found::Kept(c),
            Slot::Held => Found::Busy,
        },
    }
}

/// A held wrapper: back to its slot when dropped, if the handle is still registered (dropped
/// instead after a panic).
struct Held {
    key: usize,
    conn: Option<Connection>,
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut conn = self.conn.take();
        if let Ok(mut s) = slots().lock() {
            if let Some(slot) = s.get_mut(&self.key) {
                let keep = if std::thread::panicking() { None } else { conn.take() };
                *slot = Slot::Idle(keep);
            }
        }
        // Finalized outside the lock.
        drop(conn);
    }
}

/// Connects `db`'s `cmp_search` table (preparing a statement that names it does), which registers
/// the handle.
fn connect_guard(conn: &Connection) {
    let _ = conn.prepare("SELECT 1 FROM cmp_search LIMIT 0");
}

/// Runs `f` on `db`'s kept wrapper (made on first use), or on a wrapper of its own when another call
/// on this handle holds it or `cmp_search` cannot be connected.
///
/// # Safety
///
/// `db` must be the open connection the calling SQL function runs on.
pub(crate) unsafe fn with<R>(db: *mut ffi::sqlite3, f: impl FnOnce(&Connection) -> R) -> rusqlite::Result<R> {
    let key = db as usize;
    let mut found = take(key);
    if matches!(found, Found::Unregistered) {
        connect_guard(&Connection::from_handle(db)?);
        found = take(key);
    }
    let Found::Kept(kept) = found else { return Ok(f(&Connection::from_handle(db)?)) };
    let mut held = Held { key, conn: None };
    let conn = match kept {
        Some(c) => c,
        None => {
            let c = Connection::from_handle(db)?;
            c.set_prepared_statement_cache_capacity(KEPT_STATEMENTS);
            c
        }
    };
    let conn = held.conn.insert(conn);
    Ok(f(conn))
}

#[cfg(test)]
mod tests {
    use rusqlite::Connection;

    fn db() -> Connection {
        let conn = Connection::open_in_memory().expect("open");
        crate::register(&conn).expect("register");
        conn.query_row("SELECT cmp_init()", [], |_| Ok(())).expect("init");
        conn.execute("INSERT INTO main.cmp_memories(content) VALUES ('atlas ships on friday')", []).expect("insert");
        conn
    }

    fn calls(conn: &Connection) -> (String, i64) {
        let pack: String =
            // A fixed clock: the receipt is dated by it, and the wall clock moves between two calls.
            conn.query_row("SELECT cmp_context('when does atlas ship?', NULL, NULL, NULL, '{\"now\":\"2100-01-01T00:00:00Z\"}')", [], |r| r.get(0)).expect("pack");
        let n: i64 = conn.query_row("SELECT count(*) FROM cmp_search('atlas')", [], |r| r.get(0)).expect("search");
        (pack, n)
    }

    #[test]
    fn kept_statements_never_keep_a_connection_open() {
        for _ in 0..3 {
            let conn = db();
            let first = calls(&conn);
            assert_eq!(calls(&conn), first, "the kept wrapper answers as a fresh one does");
            assert_eq!(first.1, 1);
            // sqlite3_close (not _v2) refuses a connection with live statements.
            conn.close().map_err(|(_, e)| e).expect("closes");
        }
    }

    #[test]
    fn only_cmp_context_calls_still_close() {
        let conn = db();
        let _: String = conn.query_row("SELECT cmp_context('atlas')", [], |r| r.get(0)).expect("pack");
        let _: String = conn.query_row("SELECT cmp_context('friday')", [], |r| r.get(0)).expect("pack");
        conn.close().map_err(|(_, e)| e).expect("closes");
    }
}
