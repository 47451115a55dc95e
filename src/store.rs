//! Every SQL read and write cmp makes: schema and migrations, meta, memory rows, entities,
//! sessions and pins. The rest of the crate works on the plain structs defined here.

use rusqlite::{params, Connection, OptionalExtension, Row};

/// The schema, applied by `cmp_init()`.
pub const SCHEMA_SQL: &str = include_str!("../sql/schema.sql");
/// Version written by this build. History: 1 = memories, tasks, FTS, entities, meta;
/// 2 = adds sessions, pins and the recency index (all additive: schema.sql upgrades v1 in place);
/// 3 = adds the character-pair index of spaceless scripts (`cmp_memories_ngram`, filled from the
/// existing rows on upgrade).
pub const SCHEMA_VERSION: i64 = 3;

/// One memory row, as retrieval and packing see it.
#[derive(Debug, Clone, PartialEq)]
pub struct Memory {
    /// Stable integer key (FTS rowid).
    pub rid: i64,
    /// `mem_…` id, the citation ref.
    pub id: String,
    /// The text.
    pub content: String,
    /// Optional stored summary (ladder rung 2).
    pub summary: Option<String>,
    /// semantic, episodic, …
    pub kind: String,
    /// When the fact was true/observed.
    pub occurred_at: Option<String>,
    /// When it was recorded.
    pub captured_at: String,
    /// Locator of the source.
    pub source_url: Option<String>,
    /// Explicit confidence.
    pub confidence: Option<f64>,
    /// Author trust.
    pub trust: Option<f64>,
    /// Entity names (from the `entities` JSON; malformed JSON ⇒ empty).
    pub entities: Vec<String>,
    /// Replacement id, when superseded.
    pub superseded_by: Option<String>,
    /// When it was superseded.
    pub superseded_at: Option<String>,
    /// Flagged as contradicting another memory.
    pub conflict: bool,
}

/// Columns read for a [`Memory`], for a table aliased `m`.
pub const MEMORY_COLS: &str = "m.rid, m.id, m.content, m.summary, m.kind, m.occurred_at, m.captured_at, \
     m.source_url, m.confidence, m.trust, m.entities, m.superseded_by, m.superseded_at, m.conflict";

/// Reads a [`Memory`] from the first 14 columns of a row selected with [`MEMORY_COLS`].
/// Values of the wrong type (a blob where text belongs, a text trust) read as absent, never as an error.
pub fn memory_from_row(r: &Row<'_>) -> rusqlite::Result<Memory> {
    memory_from_row_at(r, 0)
}

/// [`memory_from_row`] for the 14 columns starting at column `o`.
pub fn memory_from_row_at(r: &Row<'_>, o: usize) -> rusqlite::Result<Memory> {
    use rusqlite::types::ValueRef;
    let text = |i: usize| -> Option<String> {
        match r.get_ref(o + i) {
            Ok(ValueRef::Text(t)) => Some(String::from_utf8_lossy(t).into_owned()),
            Ok(ValueRef::Integer(n)) => Some(n.to_string()),
            Ok(ValueRef::Real(f)) => Some(f.to_string()),
            _ => None,
        }
    };
    let real = |i: usize| -> Option<f64> {
        match r.get_ref(o + i) {
            Ok(ValueRef::Real(f)) if f.is_finite() => Some(f),
            Ok(ValueRef::Integer(n)) => Some(n as f64),
            _ => None,
        }
    };
    let entities = text(10).map(|j| parse_entities(&j)).unwrap_or_default();
    Ok(Memory {
        rid: r.get(o)?,
        id: text(1).unwrap_or_default(),
        content: text(2).unwrap_or_default(),
        summary: text(3),
        kind: text(4).unwrap_or_else(|| "semantic".into()),
        occurred_at: text(5),
        captured_at: text(6).unwrap_or_default(),
        source_url: text(7),
        confidence: real(8).map(|c| c.clamp(0.0, 1.0)),
        trust: real(9).map(|t| t.clamp(0.0, 1.0)),
        entities,
        superseded_by: text(11),
        superseded_at: text(12),
        conflict: matches!(r.get_ref(o + 13), Ok(ValueRef::Integer(n)) if n != 0),
    })
}

/// Entity names from an `entities` JSON array; anything else yields no entities.
pub fn parse_entities(json: &str) -> Vec<String> {
    match serde_json::from_str::<serde_json::Value>(json) {
        Ok(serde_json::Value::Array(a)) => {
            let mut out: Vec<String> = Vec::new();
            for v in a {
                if let serde_json::Value::String(s) = v {
                    let s = s.trim();
                    if !s.is_empty() && !out.iter().any(|o| o.eq_ignore_ascii_case(s)) {
                        out.push(s.to_string());
                    }
                }
            }
            out
        }
        _ => Vec::new(),
    }
}

/// Creates or upgrades the schema. Idempotent.
pub fn init(conn: &Connection) -> crate::error::Result<i64> {
    let has_meta: bool = conn
        .query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'cmp_meta'", [], |r| {
            r.get::<_, i64>(0)
        })
        .map(|n| n > 0)?;
    let current: Option<i64> = if has_meta {
        conn.query_row("SELECT CAST(value AS INTEGER) FROM cmp_meta WHERE key = 'schema_version'", [], |r| r.get(0))
            .optional()?
    } else {
        None
    };
    if let Some(v) = current {
        if v > SCHEMA_VERSION {
            return Err(crate::error::Error::Schema(format!(
                "database schema version {v} is newer than this extension's ({SCHEMA_VERSION}); upgrade cmp"
            )));
        }
        if v == SCHEMA_VERSION {
            return Ok(v);
        }
    }
    if let Some(why) = unwritable(conn) {
        let msg =
            format!("the schema needs creating or upgrading, which cannot be done here: {why}; run it on the primary");
        return Err(crate::error::Error::Unwritable(msg));
    }
    // All-or-nothing: a failure leaves the database as it was.
    conn.execute_batch("SAVEPOINT cmp_init")?;
    let r = conn.execute_batch(SCHEMA_SQL).and_then(|_| {
        // The character-pair index arrived in version 3: index the rows written before it.
        if current.is_some_and(|v| v < 3) {
            conn.execute_batch("INSERT INTO cmp_memories_ngram(cmp_memories_ngram) VALUES ('rebuild')")?;
        }
        conn.execute(
            "INSERT INTO cmp_meta(key, value) VALUES ('schema_version', ?1)
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            [SCHEMA_VERSION.to_string()],
        )
    });
    match r {
        Ok(_) => {
            conn.execute_batch("RELEASE cmp_init")?;
            Ok(SCHEMA_VERSION)
        }
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK TO cmp_init; RELEASE cmp_init");
            Err(e.into())
        }
    }
}

/// A value from `cmp_meta`, or None (also when the schema is missing).
pub fn meta(conn: &Connection, key: &str) -> Option<String> {
    conn.query_row("SELECT value FROM cmp_meta WHERE key = ?1", [key], |r| r.get(0)).optional().ok().flatten()
}

/// True when `cmp_init()` has run on this database.
pub fn initialized(conn: &Connection) -> bool {
    meta(conn, "schema_version").is_some()
}

/// 1 when a row (alias `m`) is redacted, read as retrieval reads it: anything but 0 or NULL, also a
/// text or a real, counts as redacted.
const REDACTED_FLAG: &str = "NOT (m.redacted = 0 OR m.redacted IS NULL)";

/// A text column, or "" for NULL, blobs and numbers (a scope that is not text matches no scope).
fn text_or_empty(r: &Row<'_>, i: usize) -> String {
    match r.get_ref(i) {
        Ok(rusqlite::types::ValueRef::Text(t)) => String::from_utf8_lossy(t).into_owned(),
        _ => String::new(),
    }
}

/// Loads memories by id (any scope, any state): callers filter.
pub fn memory_by_id(conn: &Connection, id: &str) -> rusqlite::Result<Option<(Memory, String, bool)>> {
    conn.query_row(
        &format!("SELECT {MEMORY_COLS}, m.scope, {REDACTED_FLAG} FROM cmp_memories m WHERE m.id = ?1"),
        [id],
        |r| Ok((memory_from_row(r)?, text_or_empty(r, 14), r.get::<_, i64>(15)? != 0)),
    )
    .optional()
}

/// True when a row with this id exists (any scope, any state).
pub fn exists(conn: &Connection, id: &str) -> rusqlite::Result<bool> {
    conn.query_row("SELECT EXISTS (SELECT 1 FROM cmp_memories WHERE id = ?1)", [id], |r| r.get(0))
}

/// The head of a superseded_by chain starting at `id` (at most 16 hops, cycles guarded), if live
/// and visible in `scope`.
pub fn live_head(conn: &Connection, id: &str, scope: &str) -> rusqlite::Result<Option<String>> {
    let mut cur = id.to_string();
    let mut seen = vec![cur.clone()];
    for _ in 0..16 {
        let row: Option<(Option<String>, String, i64)> = conn
            .query_row(
                &format!("SELECT m.superseded_by, m.scope, {REDACTED_FLAG} FROM cmp_memories AS m WHERE m.id = ?1"),
                [&cur],
                |r| {
                    let next = match r.get_ref(0)? {
                        rusqlite::types::ValueRef::Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
                        _ => None,
                    };
                    Ok((next, text_or_empty(r, 1), r.get(2)?))
                },
            )
            .optional()?;
        let Some((next, s, red)) = row else {
            return Ok(None);
        };
        if s != scope || red != 0 {
            return Ok(None);
        }
        match next {
            None => return Ok(if cur == id { None } else { Some(cur) }),
            Some(n) => {
                if seen.contains(&n) {
                    return Ok(None);
                }
                seen.push(n.clone());
                cur = n;
            }
        }
    }
    Ok(None)
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

/// What each of `refs` is now, read at Julian day `h` in `scope`.
pub fn ref_status(
    conn: &Connection,
    refs: &[String],
    scope: &str,
    h: f64,
) -> rusqlite::Result<std::collections::HashMap<String, crate::session::Status>> {
    use crate::session::Status;
    let mut out = std::collections::HashMap::new();
    let ids = serde_json::to_string(refs).unwrap_or_else(|_| "[]".into());
    let mut seen = std::collections::HashSet::new();
    {
        let mut st = conn.prepare_cached(
            "SELECT m.id, m.scope, NOT (m.redacted = 0 OR m.redacted IS NULL), m.superseded_by,
                    m.superseded_by IS NOT NULL AND NOT coalesce(julianday(m.superseded_at) > ?3, 0)
                      AND EXISTS (SELECT 1 FROM cmp_memories AS s WHERE s.id = m.superseded_by)
             FROM cmp_memories AS m WHERE m.id IN (SELECT value FROM json_each(?1))",
        )?;
        let mut rows = st.query(params![ids, scope, h])?;
        while let Some(r) = rows.next()? {
            let id = text_or_empty(r, 0);
            let s = text_or_empty(r, 1);
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
    {
        let mut st = conn
            .prepare_cached("SELECT id FROM cmp_tasks WHERE id IN (SELECT value FROM json_each(?1)) AND scope = ?2")?;
        let mut rows = st.query(params![ids, scope])?;
        while let Some(r) = rows.next()? {
            seen.insert(r.get(0)?);
        }
    }
    for r in refs {
        if !seen.contains(r) {
            out.insert(r.clone(), Status::Gone);
        }
    }
    Ok(out)
}

/// Why a write made on `conn` would not last, or `None` when it would. cmp_init, cmp_context and
/// cmp_session_reset write from inside a SELECT; where that write cannot durably land they must fail
/// rather than answer as if it had. Three cases: a database opened read-only, `PRAGMA query_only`,
/// and a libSQL server (sqld) read replica. A replica runs a SELECT on its own copy, where the write
/// succeeds, is read back by later calls on that replica, never reaches the primary, and vanishes when
/// the primary's next change to the same page replicates. sqld keeps a `client_wal_index` file in a
/// replica's database directory and none beside a primary's, which is what is checked here.
pub fn unwritable(conn: &Connection) -> Option<&'static str> {
    if conn.is_readonly(rusqlite::MAIN_DB).unwrap_or(false) {
        return Some("the database is open read-only");
    }
    if conn.pragma_query_value(None, "query_only", |r| r.get::<_, bool>(0)).unwrap_or(false) {
        return Some("PRAGMA query_only is on");
    }
    let file = conn.path().filter(|p| !p.is_empty())?;
    let dir = std::path::Path::new(file).parent()?;
    if dir.join("client_wal_index").exists() {
        return Some(
            "this database is a libSQL (sqld) read replica, whose local writes are overwritten by the primary's \
             next replicated change",
        );
    }
    None
}
