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
/// tasks of the scope live. Only refs that are not live are returned: a ref missing from the map is
/// [`Status::Live`].
///
/// Every turn of a session asks about every ref it holds, nearly all of them live: the statement
/// returns only the rows that may not be (missing, or failing a cheap SQL test that keeps every
/// live row out), and those are judged here as before, so the cost is one indexed lookup per ref.
pub fn ref_status(
    conn: &Connection,
    refs: &[String],
    scope: &str,
    h: f64,
) -> rusqlite::Result<HashMap<String, Status>> {
    let mut out = HashMap::new();
    if refs.is_empty() {
        return Ok(out);
    }
    let ids = serde_json::to_string(refs).unwrap_or_else(|_| "[]".into());
    let mut not_memories = Vec::new();
    {
        // A row is left out only when its scope is this very text and it is neither redacted nor
        // superseded: exactly the rows judged live below.
        let mut st = conn.prepare_cached(&format!(
            "SELECT j.value, m.rid IS NULL, m.scope, {REDACTED}, {SUPERSEDED}
             FROM json_each(:ids) AS j LEFT JOIN cmp_memories AS m ON m.id = j.value
             WHERE m.rid IS NULL OR typeof(m.scope) IS NOT 'text' OR m.scope IS NOT :scope
                OR {REDACTED} OR {SUPERSEDED}"
        ))?;
        let mut rows = st.query(named_params! {":ids": ids, ":scope": scope, ":h": h})?;
        while let Some(r) = rows.next()? {
            let id = super::memories::text_or_empty(r, 0);
            if r.get::<_, bool>(1)? {
                not_memories.push(id);
                continue;
            }
            let s = super::memories::text_or_empty(r, 2);
            let red: i64 = r.get(3)?;
            let sup: bool = r.get(4)?;
            if s != scope || red != 0 {
                out.insert(id, Status::Gone);
            } else if sup {
                let head = live_head(conn, &id, scope)?;
                out.insert(id, Status::Superseded(head));
            }
        }
    }
    if not_memories.is_empty() {
        return Ok(out);
    }
    let ids = serde_json::to_string(&not_memories).unwrap_or_else(|_| "[]".into());
    let tasks: HashSet<String> = super::tasks::existing(conn, &ids, scope)?.into_iter().collect();
    for r in not_memories {
        if !tasks.contains(&r) {
            out.insert(r, Status::Gone);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// The statement before the filtered one: every ref's row read and judged here. Kept to show
    /// that the filtered statement judges every ref the same way.
    fn reference(conn: &Connection, refs: &[String], scope: &str, h: f64) -> rusqlite::Result<HashMap<String, Status>> {
        let mut out = HashMap::new();
        let ids = serde_json::to_string(refs).unwrap_or_else(|_| "[]".into());
        let mut seen = HashSet::new();
        {
            let mut st = conn.prepare(&format!(
                "SELECT m.id, m.scope, {REDACTED}, m.superseded_by, {SUPERSEDED}
                 FROM cmp_memories AS m WHERE m.id IN (SELECT value FROM json_each(:ids))"
            ))?;
            let mut rows = st.query(named_params! {":ids": ids, ":h": h})?;
            while let Some(r) = rows.next()? {
                let id = super::super::memories::text_or_empty(r, 0);
                let s = super::super::memories::text_or_empty(r, 1);
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
        seen.extend(super::super::tasks::existing(conn, &ids, scope)?);
        for r in refs {
            if !seen.contains(r) {
                out.insert(r.clone(), Status::Gone);
            }
        }
        Ok(out)
    }

    /// Rows of every odd shape a session may hold: other scopes (text, blob, the same text with
    /// other bytes), redaction flags that are not 0 or 1, supersession now, later, undated, by a
    /// missing row, in chains and cycles, tasks (one sharing its id with a memory), odd ids.
    fn odd_store() -> Connection {
        let conn = Connection::open_in_memory().expect("open");
        crate::register(&conn).expect("register");
        crate::store::init(&conn).expect("init");
        conn.execute_batch(
            "INSERT INTO cmp_memories(id, content, scope, redacted, superseded_by, superseded_at) VALUES
               ('live', 'a', 's', 0, NULL, NULL),
               ('negative_redacted', 'a', 's', -1, NULL, NULL),
               ('redacted', 'a', 's', 1, NULL, NULL),
               ('redacted_text', 'a', 's', 'yes', NULL, NULL),
               ('redacted_real', 'a', 's', 0.5, NULL, NULL),
               ('other_scope', 'a', 't', 0, NULL, NULL),
               ('blob_scope', 'a', x'73', 0, NULL, NULL),
               ('empty_scope', 'a', '', 0, NULL, NULL),
               ('old', 'a', 's', 0, 'new', '2020-01-01T00:00:00Z'),
               ('new', 'a', 's', 0, NULL, NULL),
               ('later', 'a', 's', 0, 'new', '2030-01-01T00:00:00Z'),
               ('undated', 'a', 's', 0, 'new', 'not a date'),
               ('dangling', 'a', 's', 0, 'nobody', NULL),
               ('chain1', 'a', 's', 0, 'chain2', NULL),
               ('chain2', 'a', 's', 0, 'chain3', NULL),
               ('chain3', 'a', 's', 0, NULL, NULL),
               ('to_redacted', 'a', 's', 0, 'redacted', NULL),
               ('to_other', 'a', 's', 0, 'other_scope', NULL),
               ('cycle1', 'a', 's', 0, 'cycle2', NULL),
               ('cycle2', 'a', 's', 0, 'cycle1', NULL),
               ('🚀' || char(0) || 'x', 'a', 's', 0, NULL, NULL),
               ('', 'a', 's', 0, NULL, NULL),
               ('both', 'a', 't', 0, NULL, NULL);
             INSERT INTO cmp_tasks(id, title, scope) VALUES
               ('task_s', 't', 's'), ('task_t', 't', 't'), ('both', 't', 's');",
        )
        .expect("rows");
        conn
    }

    fn not_live(m: HashMap<String, Status>) -> BTreeMap<String, Status> {
        m.into_iter().filter(|(_, s)| *s != Status::Live).collect()
    }

    #[test]
    fn only_refs_that_are_not_live_come_back_judged_as_before() {
        let conn = odd_store();
        let mut refs: Vec<String> = conn
            .prepare("SELECT id FROM cmp_memories UNION SELECT id FROM cmp_tasks")
            .expect("ids")
            .query_map([], |r| r.get(0))
            .expect("ids")
            .collect::<rusqlite::Result<_>>()
            .expect("ids");
        refs.extend(["missing".to_string(), "LIVE".to_string(), "🚀".to_string()]);
        let (past, now, future) = (2_440_000.0, 2_460_000.0, 2_470_000.0);
        for scope in ["s", "t", "", "u"] {
            for h in [past, now, future] {
                let want = not_live(reference(&conn, &refs, scope, h).expect("reference"));
                let got = ref_status(&conn, &refs, scope, h).expect("status");
                assert!(got.values().all(|s| *s != Status::Live), "{got:?}");
                assert_eq!(not_live(got), want, "scope {scope:?} at {h}");
            }
        }
        let got = ref_status(&conn, &refs, "s", now).expect("status");
        assert_eq!(got.get("old"), Some(&Status::Superseded(Some("new".into()))));
        assert_eq!(got.get("chain1"), Some(&Status::Superseded(Some("chain3".into()))));
        assert_eq!(got.get("later"), None, "superseded only from 2030");
        assert_eq!(got.get("both"), Some(&Status::Gone), "the memory of another scope, not the task");
        assert_eq!((got.get("task_s"), got.get("task_t")), (None, Some(&Status::Gone)));
        for gone in ["redacted", "redacted_text", "redacted_real", "negative_redacted", "blob_scope", "missing", "🚀"]
        {
            assert_eq!(got.get(gone), Some(&Status::Gone), "{gone}");
        }
        assert!(ref_status(&conn, &[], "s", now).expect("none").is_empty());
    }
}
