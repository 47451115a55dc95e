//! The `cmp_sessions` and `cmp_pins` tables: a session's stored state (read, compare-and-swap,
//! reset), what each ref a session holds is now ([`Status`]), and content-addressed pins.

use super::eligibility::{REDACTED, SUPERSEDED};
use super::memories::live_head;
use rusqlite::{named_params, params, Connection, OptionalExtension};
use std::collections::{BTreeMap, HashMap, HashSet};

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
        conn.query_row("SELECT bytes FROM main.cmp_pins WHERE sha = ?1", [sha], |r| r.get(0)).optional()?;
    match existing {
        Some(b) if b == bytes => Ok(()),
        Some(_) => Err(crate::error::Error::Conflict(format!("pin {sha} already denotes other bytes"))),
        None => {
            conn.execute(
                "INSERT INTO main.cmp_pins(sha, bytes, created_at) VALUES (?1, ?2, ?3)",
                params![sha, bytes, at],
            )?;
            Ok(())
        }
    }
}

/// Loads a session's state (None when the session has not started).
pub fn load_session(conn: &Connection, session_id: &str, scope: &str) -> rusqlite::Result<Option<String>> {
    conn.prepare_cached("SELECT state FROM main.cmp_sessions WHERE session_id = ?1 AND scope = ?2")?
        .query_row(params![session_id, scope], |r| r.get(0))
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
        None => conn
            .prepare_cached(
                "INSERT INTO main.cmp_sessions(session_id, scope, turn, cursor, state, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                 ON CONFLICT(session_id, scope) DO NOTHING",
            )?
            .execute(params![session_id, scope, turn, cursor, state, at])?,
        Some(old) => conn
            .prepare_cached(
                "UPDATE main.cmp_sessions SET turn = ?3, cursor = ?4, state = ?5, updated_at = ?6
                 WHERE session_id = ?1 AND scope = ?2 AND cursor = ?7",
            )?
            .execute(params![session_id, scope, turn, cursor, state, at, old])?,
    };
    Ok(n == 1)
}

/// Forgets a session in one scope; returns whether it existed.
pub fn reset_session(conn: &Connection, session_id: &str, scope: &str) -> rusqlite::Result<bool> {
    conn.execute("DELETE FROM main.cmp_sessions WHERE session_id = ?1 AND scope = ?2", params![session_id, scope])
        .map(|n| n > 0)
}

/// Whether any memory row, of any scope, names a row that supersedes it: if none does, which rows
/// are superseded does not depend on the horizon. One probe of a partial index.
pub fn any_superseded(conn: &Connection) -> rusqlite::Result<bool> {
    conn.prepare_cached("SELECT EXISTS (SELECT 1 FROM main.cmp_memories WHERE superseded_by IS NOT NULL)")?
        .query_row([], |r| r.get(0))
}

/// What a session's known refs are now ([`ref_status`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Statuses {
    /// The refs that are not live; a ref missing from the map is [`Status::Live`].
    pub status: HashMap<String, Status>,
    /// For each ref asked about, in the same order, the rowid of its memory row (None: not a memory).
    pub rows: Vec<Option<i64>>,
}

/// SQL (parameters `:scope`, `:h`; the joined memory row `m`): the row may not be live for this
/// reader. It is false only when `m.scope` is this very text and the row is neither redacted nor
/// superseded, i.e. for rows [`judge`] finds live: only the rows that may not be come back.
fn maybe_not_live() -> String {
    format!("typeof(m.scope) IS NOT 'text' OR m.scope IS NOT :scope OR {REDACTED} OR {SUPERSEDED}")
}

/// What each of `refs` is now, read at Julian day `h` in `scope`: memories by the one
/// eligibility rule (redacted, other scope or missing: gone; superseded: the live head of its chain),
/// tasks of the scope live. `rows` may give, in the order of `refs`, where each ref's memory row was
/// last found (a hint, e.g. the [`Statuses::rows`] of the previous turn; empty for none).
///
/// Every turn of a session asks about every ref it holds, nearly all of them live and still where
/// they were: a hinted ref's row is read by its rowid, without the id index, and used only when its
/// id is the ref (ids are unique, so it is then the ref's row); any other ref is looked up by id.
/// The by-rowid statement returns only the rows that may not be live, which are judged here; the by-id
/// one returns every row it finds, to learn its rowid for the next turn.
pub fn ref_status(
    conn: &Connection,
    refs: &[String],
    rows: &[Option<i64>],
    scope: &str,
    h: f64,
) -> rusqlite::Result<Statuses> {
    let mut out = Statuses { status: HashMap::new(), rows: vec![None; refs.len()] };
    // rid → index in `refs`: one ref per rowid (two refs never share a row; a stale hint may).
    let mut hinted: BTreeMap<i64, usize> = BTreeMap::new();
    let mut by_id = Vec::new();
    for (i, _) in refs.iter().enumerate() {
        match rows.get(i).copied().flatten() {
            Some(rid) if !hinted.contains_key(&rid) => {
                hinted.insert(rid, i);
            }
            _ => by_id.push(i),
        }
    }
    if !hinted.is_empty() {
        by_id.extend(by_rowid(conn, refs, &hinted, scope, h, &mut out)?);
    }
    if by_id.is_empty() {
        return Ok(out);
    }
    let not_memories = by_ref(conn, refs, &by_id, scope, h, &mut out)?;
    if not_memories.is_empty() {
        return Ok(out);
    }
    let ids = serde_json::to_string(&not_memories).unwrap_or_else(|_| "[]".into());
    let tasks: HashSet<String> = super::tasks::existing(conn, &ids, scope)?.into_iter().collect();
    for r in not_memories {
        if !tasks.contains(r) {
            out.status.insert(r.to_string(), Status::Gone);
        }
    }
    Ok(out)
}

/// The hinted refs (`hinted`: rowid → index in `refs`) read by rowid; returns the indexes whose row
/// is not theirs (gone, or another row now), to be looked up by id.
fn by_rowid(
    conn: &Connection,
    refs: &[String],
    hinted: &BTreeMap<i64, usize>,
    scope: &str,
    h: f64,
    out: &mut Statuses,
) -> rusqlite::Result<Vec<usize>> {
    let pairs: BTreeMap<i64, &str> = hinted.iter().map(|(&rid, &i)| (rid, refs[i].as_str())).collect();
    let json = serde_json::to_string(&pairs).unwrap_or_else(|_| "{}".into());
    let mut st = conn.prepare_cached(&format!(
        "SELECT CAST(j.key AS INTEGER), m.id IS NOT j.value, m.scope, {REDACTED}, {SUPERSEDED}
         FROM json_each(:rows) AS j LEFT JOIN main.cmp_memories AS m ON m.rid = CAST(j.key AS INTEGER)
         WHERE m.id IS NOT j.value OR {}",
        maybe_not_live()
    ))?;
    let mut moved = Vec::new();
    for (&rid, &i) in hinted {
        out.rows[i] = Some(rid);
    }
    let mut q = st.query(named_params! {":rows": json, ":scope": scope, ":h": h})?;
    while let Some(r) = q.next()? {
        let Some(&i) = hinted.get(&r.get::<_, i64>(0)?) else { continue };
        if r.get::<_, bool>(1)? {
            out.rows[i] = None;
            moved.push(i);
            continue;
        }
        judge(conn, &refs[i], r, 2, (scope, h), out)?;
    }
    Ok(moved)
}

/// The refs at indexes `which` looked up by id; records their rowids and returns those that are
/// not memories.
fn by_ref<'a>(
    conn: &Connection,
    refs: &'a [String],
    which: &[usize],
    scope: &str,
    h: f64,
    out: &mut Statuses,
) -> rusqlite::Result<Vec<&'a str>> {
    let asked: Vec<&str> = which.iter().map(|&i| refs[i].as_str()).collect();
    let json = serde_json::to_string(&asked).unwrap_or_else(|_| "[]".into());
    let mut st = conn.prepare_cached(&format!(
        "SELECT j.key, m.rid, m.scope, {REDACTED}, {SUPERSEDED}
         FROM json_each(:ids) AS j LEFT JOIN main.cmp_memories AS m ON m.id = j.value"
    ))?;
    let mut not_memories = Vec::new();
    let mut q = st.query(named_params! {":ids": json, ":h": h})?;
    while let Some(r) = q.next()? {
        let Some(&i) = usize::try_from(r.get::<_, i64>(0)?).ok().and_then(|k| which.get(k)) else { continue };
        let Some(rid) = r.get::<_, Option<i64>>(1)? else {
            not_memories.push(refs[i].as_str());
            continue;
        };
        out.rows[i] = Some(rid);
        judge(conn, &refs[i], r, 2, (scope, h), out)?;
    }
    Ok(not_memories)
}

/// Judges the memory row of `r` (columns from `at`: scope, redacted, superseded) for a reader of
/// `scope` at `h` by the rule of [`ref_status`], recording it unless it is live.
fn judge(
    conn: &Connection,
    r: &str,
    row: &rusqlite::Row<'_>,
    at: usize,
    (scope, h): (&str, f64),
    out: &mut Statuses,
) -> rusqlite::Result<()> {
    let s = super::memories::text_or_empty(row, at);
    let red: i64 = row.get(at + 1)?;
    let sup: bool = row.get(at + 2)?;
    if s != scope || red != 0 {
        out.status.insert(r.to_string(), Status::Gone);
    } else if sup {
        let head = live_head(conn, r, scope, h)?;
        out.status.insert(r.to_string(), Status::Superseded(head));
    }
    Ok(())
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
                 FROM main.cmp_memories AS m WHERE m.id IN (SELECT value FROM json_each(:ids))"
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
                    Status::Superseded(live_head(conn, &id, scope, h)?)
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
            "INSERT INTO main.cmp_memories(id, content, scope, redacted, superseded_by, superseded_at) VALUES
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
             INSERT INTO main.cmp_tasks(id, title, scope) VALUES
               ('task_s', 't', 's'), ('task_t', 't', 't'), ('both', 't', 's');
             -- Captured in 2000: after the oldest horizon below (1968), before the others; a
             -- replacement is named only at a horizon where it is visible.
             UPDATE main.cmp_memories SET captured_at = '2000-01-01T00:00:00Z';",
        )
        .expect("rows");
        conn
    }

    fn not_live(m: HashMap<String, Status>) -> BTreeMap<String, Status> {
        m.into_iter().filter(|(_, s)| *s != Status::Live).collect()
    }

    #[test]
    fn only_refs_that_are_not_live_come_back_judged_as_before_whatever_the_row_hints() {
        let conn = odd_store();
        let mut refs: Vec<String> = conn
            .prepare("SELECT id FROM main.cmp_memories UNION SELECT id FROM main.cmp_tasks")
            .expect("ids")
            .query_map([], |r| r.get(0))
            .expect("ids")
            .collect::<rusqlite::Result<_>>()
            .expect("ids");
        refs.extend(["missing".to_string(), "LIVE".to_string(), "🚀".to_string()]);
        let (past, now, future) = (2_440_000.0, 2_460_000.0, 2_470_000.0);
        let rowid = |r: &String| -> Option<i64> {
            conn.query_row("SELECT rid FROM main.cmp_memories WHERE id = ?1", [r], |x| x.get(0))
                .optional()
                .expect("rid")
        };
        let rows: Vec<Option<i64>> = refs.iter().map(rowid).collect();
        // Hints of every kind: none, right, all shifted by one ref (every one names another row), a
        // rowid no row has, one rowid for every ref.
        let mut shifted = rows.clone();
        shifted.rotate_left(1);
        let hints: [Vec<Option<i64>>; 5] =
            [vec![], rows.clone(), shifted, vec![Some(999_999); refs.len()], vec![Some(1); refs.len()]];
        for scope in ["s", "t", "", "u"] {
            for h in [past, now, future] {
                let want = not_live(reference(&conn, &refs, scope, h).expect("reference"));
                for hint in &hints {
                    let got = ref_status(&conn, &refs, hint, scope, h).expect("status");
                    assert!(got.status.values().all(|s| *s != Status::Live), "{got:?}");
                    assert_eq!(got.rows, rows, "the rows found, whatever the hints");
                    assert_eq!(not_live(got.status), want, "scope {scope:?} at {h} with hints {hint:?}");
                }
            }
        }
        let got = ref_status(&conn, &refs, &rows, "s", now).expect("status").status;
        assert_eq!(got.get("old"), Some(&Status::Superseded(Some("new".into()))));
        assert_eq!(got.get("chain1"), Some(&Status::Superseded(Some("chain3".into()))));
        assert_eq!(got.get("later"), None, "superseded only from 2030");
        let long_ago = ref_status(&conn, &refs, &rows, "s", past).expect("status").status;
        assert_eq!(long_ago.get("chain1"), Some(&Status::Superseded(None)), "no replacement visible in 1968");
        assert_eq!(got.get("both"), Some(&Status::Gone), "the memory of another scope, not the task");
        assert_eq!((got.get("task_s"), got.get("task_t")), (None, Some(&Status::Gone)));
        for gone in ["redacted", "redacted_text", "redacted_real", "negative_redacted", "blob_scope", "missing", "🚀"]
        {
            assert_eq!(got.get(gone), Some(&Status::Gone), "{gone}");
        }
        // A row that moved: its id now names another row, and its old rowid holds nothing.
        conn.execute("UPDATE main.cmp_memories SET rid = 5000 WHERE id = 'live'", []).expect("move");
        let moved = ref_status(&conn, &refs, &rows, "s", now).expect("moved");
        let i = refs.iter().position(|r| r == "live").expect("live");
        assert_eq!((moved.rows[i], moved.status.get("live")), (Some(5000), None));
        assert_eq!(ref_status(&conn, &[], &[], "s", now).expect("none"), Statuses::default());
    }
}
