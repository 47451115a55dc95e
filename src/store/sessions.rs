//! The `cmp_sessions` and `cmp_pins` tables: a session's stored state (read, compare-and-swap,
//! reset), what each ref a session holds is now ([`Status`]), and content-addressed pins.

use super::eligibility::{REDACTED, SUPERSEDED};
use super::memories::live_head;
use rusqlite::{named_params, params, Connection, OptionalExtension};
use std::collections::{HashMap, HashSet};

/// What a ref a session holds is now.
#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    /// Readable and current.
    Live,
    /// Superseded; the live head of its chain, if any.
    Superseded(Option<String>),
    /// Deleted, redacted or in another scope.
    Gone,
}

/// Stores a pin (sha → canonical bytes). The same sha always denotes the same bytes: a collision
/// with different bytes is refused.
pub fn put_pin(conn: &Connection, sha: &str, bytes: &str, at: &str) -> crate::error::Result<()> {
    let existing: Option<String> =
        conn.query_row("SELECT bytes FROM cmp_pins WHERE sha = ?1", [sha], |r| r.get(0)).optional()?;
    match existing {
        Some(b) if b == bytes => Ok(()),
        Some(_) => Err(crate::error::Error::Conflict(format!("pin {sha} already denotes other bytes"))),
        None => {
            conn.execute("INSERT INTO cmp_pins(sha, bytes, created_at) VALUES (?1, ?2, ?3)", params![sha, bytes, at])?;
            Ok(())
        }
    }
}

/// Loads a session's state (None when the session has not started).
pub fn load_session(conn: &Connection, session_id: &str, scope: &str) -> rusqlite::Result<Option<String>> {
    conn.query_row(
        "SELECT state FROM cmp_sessions WHERE session_id = ?1 AND scope = ?2",
        params![session_id, scope],
        |r| r.get(0),
    )
    .optional()
}

/// Stores a session's state if nobody advanced it since it was read (compare-and-swap on the
/// cursor; `expected` None = the session did not exist). Returns false when another turn won the race.
/// This keeps turns atomic even in autocommit mode, where each statement of a function call runs in
/// its own transaction.
#[allow(clippy::too_many_arguments)]
pub fn save_session(
    conn: &Connection,
    session_id: &str,
    scope: &str,
    expected: Option<i64>,
    turn: i64,
    cursor: i64,
    state: &str,
    at: &str,
) -> rusqlite::Result<bool> {
    let n = match expected {
        None => conn.execute(
            "INSERT INTO cmp_sessions(session_id, scope, turn, cursor, state, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
             ON CONFLICT(session_id, scope) DO NOTHING",
            params![session_id, scope, turn, cursor, state, at],
        )?,
        Some(old) => conn.execute(
            "UPDATE cmp_sessions SET turn = ?3, cursor = ?4, state = ?5, updated_at = ?6
             WHERE session_id = ?1 AND scope = ?2 AND cursor = ?7",
            params![session_id, scope, turn, cursor, state, at, old],
        )?,
    };
    Ok(n == 1)
}

/// Forgets a session in one scope; returns whether it existed.
pub fn reset_session(conn: &Connection, session_id: &str, scope: &str) -> rusqlite::Result<bool> {
    conn.execute("DELETE FROM cmp_sessions WHERE session_id = ?1 AND scope = ?2", params![session_id, scope])
        .map(|n| n > 0)
}

/// What each of `refs` is now, read at Julian day `h` in `scope`: memories by the one
/// eligibility rule (redacted, other scope or missing: gone; superseded: the live head of its chain),
/// tasks of the scope live.
pub fn ref_status(
    conn: &Connection,
    refs: &[String],
    scope: &str,
    h: f64,
) -> rusqlite::Result<HashMap<String, Status>> {
    let mut out = HashMap::new();
    let ids = serde_json::to_string(refs).unwrap_or_else(|_| "[]".into());
    let mut seen = HashSet::new();
    {
        let mut st = conn.prepare_cached(&format!(
            "SELECT m.id, m.scope, {REDACTED}, m.superseded_by, {SUPERSEDED}
             FROM cmp_memories AS m WHERE m.id IN (SELECT value FROM json_each(:ids))"
        ))?;
        let mut rows = st.query(named_params! {":ids": ids, ":h": h})?;
        while let Some(r) = rows.next()? {
            let id = super::memories::text_or_empty(r, 0);
            let s = super::memories::text_or_empty(r, 1);
            let red: i64 = r.get(2)?;
            let sup: bool = r.get(4)?;
            seen.insert(id.clone());
            let status = if s != scope || red != 0 {
                Status::Gone
            } else if sup {
                Status::Superseded(live_head(conn, &id, scope)?)
            } else {
                Status::Live
            };
            out.insert(id, status);
        }
    }
    seen.extend(super::tasks::existing(conn, &ids, scope)?);
    for r in refs {
        if !seen.contains(r) {
            out.insert(r.clone(), Status::Gone);
        }
    }
    Ok(out)
}
