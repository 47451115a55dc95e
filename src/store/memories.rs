//! The `cmp_memories` table: the [`Memory`] row, every read of memories through the eligibility
//! rule (full-text top-k, character pairs, newest, hard rules, neighbours in time, embeddings, by
//! id), supersession chains, and the one write path for a new memory ([`remember`]).

use super::bm25::Index;
use super::eligibility::{Reader, INDEXED, NOT_REDACTED, REDACTED, SUPERSEDED, VISIBLE};

use rusqlite::{named_params, params, Connection, OptionalExtension, Row};

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
    let text = |i: usize| lossy(r, o + i);
    let real = |i: usize| -> Option<f64> {
        match r.get_ref(o + i) {
            Ok(ValueRef::Real(f)) if f.is_finite() => Some(f),
            Ok(ValueRef::Integer(n)) => Some(n as f64),
            _ => None,
        }
    };
    let entities = match r.get_ref(o + 10) {
        Ok(ValueRef::Text(t)) => parse_entities(&String::from_utf8_lossy(t)),
        _ => Vec::new(),
    };
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

/// Entity names from an `entities` JSON array (trimmed, empty ones and repeats that differ only in
/// ASCII case dropped, first spelling kept); anything else yields no entities.
pub fn parse_entities(json: &str) -> Vec<String> {
    let mut seen: std::collections::HashSet<String, crate::text::FnvBuild> = Default::default();
    let mut out: Vec<String> = Vec::new();
    for s in entity_strings(json) {
        let t = s.trim();
        if !t.is_empty() && seen.insert(t.to_ascii_lowercase()) {
            out.push(if t.len() == s.len() { s } else { t.to_string() });
        }
    }
    out
}

/// The strings of a JSON array, in order (other elements skipped); none for anything but an array.
/// An array of strings only, the usual case, is read without building a JSON value first.
fn entity_strings(json: &str) -> Vec<String> {
    if let Ok(v) = serde_json::from_str::<Vec<String>>(json) {
        return v;
    }
    let Ok(serde_json::Value::Array(a)) = serde_json::from_str::<serde_json::Value>(json) else { return Vec::new() };
    a.into_iter()
        .filter_map(|v| match v {
            serde_json::Value::String(s) => Some(s),
            _ => None,
        })
        .collect()
}

/// Column `i` as text, whatever a plain-SQL write stored there: text (invalid UTF-8 replaced, so
/// one bad row never fails a read), a number as written, None for NULL or a blob.
pub(super) fn lossy(r: &Row<'_>, i: usize) -> Option<String> {
    use rusqlite::types::ValueRef;
    match r.get_ref(i) {
        Ok(ValueRef::Text(t)) => Some(String::from_utf8_lossy(t).into_owned()),
        Ok(ValueRef::Integer(n)) => Some(n.to_string()),
        Ok(ValueRef::Real(f)) => Some(f.to_string()),
        _ => None,
    }
}

/// A text column, or "" for NULL, blobs and numbers (a scope that is not text matches no scope).
pub(super) fn text_or_empty(r: &Row<'_>, i: usize) -> String {
    match r.get_ref(i) {
        Ok(rusqlite::types::ValueRef::Text(t)) => String::from_utf8_lossy(t).into_owned(),
        _ => String::new(),
    }
}

/// The memory `id` if the reader may read it as a document: eligible (superseded or not, as the
/// reader says) and visible.
pub fn readable(conn: &Connection, r: Reader<'_>, id: &str) -> rusqlite::Result<Option<Memory>> {
    let sql =
        format!("SELECT {MEMORY_COLS} FROM main.cmp_memories AS m WHERE m.id = :id AND {} AND {VISIBLE}", r.eligible());
    let mut st = conn.prepare_cached(&sql)?;
    st.query_row(named_params! {":id": id, ":scope": r.scope, ":h": r.h}, memory_from_row).optional()
}

/// The head of the superseded_by chain starting at `id` at the horizon `h` (at most 16 hops, cycles
/// guarded): the first row after `id` that is not superseded at `h`, if it is in `scope`, not
/// redacted and visible at `h` (a replacement captured after the horizon is not named).
pub fn live_head(conn: &Connection, id: &str, scope: &str, h: f64) -> rusqlite::Result<Option<String>> {
    let mut cur = id.to_string();
    let mut seen = vec![cur.clone()];
    let mut st = conn.prepare_cached(&format!(
        "SELECT m.superseded_by, m.scope, {REDACTED}, {VISIBLE}, {SUPERSEDED} FROM main.cmp_memories AS m WHERE m.id = :id"
    ))?;
    for _ in 0..16 {
        let row: Option<(Option<String>, String, i64, bool, bool)> = st
            .query_row(named_params! {":id": cur, ":h": h}, |r| {
                let next = match r.get_ref(0)? {
                    rusqlite::types::ValueRef::Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
                    _ => None,
                };
                Ok((next, text_or_empty(r, 1), r.get(2)?, r.get(3)?, r.get(4)?))
            })
            .optional()?;
        let Some((next, s, red, visible, superseded)) = row else {
            return Ok(None);
        };
        if s != scope || red != 0 || (cur != id && !visible) {
            return Ok(None);
        }
        match next.filter(|_| superseded) {
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

/// One full-text match: the row, whether it is visible at the horizon ([`VISIBLE`]), and its BM25
/// score (FTS5's `bm25()`: lower is better).
#[derive(Debug, Clone)]
pub struct Match {
    /// The row.
    pub mem: Memory,
    /// Captured by the horizon.
    pub visible: bool,
    /// BM25 as FTS5 computes it (negative; lower is a better match).
    pub bm25: f64,
}

/// The SQL of the BM25 top-`limit` query over rows meeting `eligible`, ranked by FTS5's `bm25()`
/// (the benchmark's join query; cmp's reads rank the same with [`super::bm25`]).
pub fn fts_sql(eligible: &str, limit: usize) -> String {
    fts_sql_with("bm25(cmp_memories_fts)", eligible, "", limit)
}

/// [`fts_sql`] ranked by `score`, with `more` (`, expr…`) selected after the score.
fn fts_sql_with(score: &str, eligible: &str, more: &str, limit: usize) -> String {
    format!(
        "SELECT {MEMORY_COLS}, {score} AS score{more}
         FROM main.cmp_memories_fts JOIN main.cmp_memories AS m ON m.rid = cmp_memories_fts.rowid
         WHERE cmp_memories_fts MATCH :q AND {eligible} AND {INDEXED}
         ORDER BY score, m.rid LIMIT {limit}"
    )
}

/// The SQL of the BM25 top-`limit` query over the character-pair index, with each row's visibility
/// at the horizon after the score.
pub fn ngram_sql(eligible: &str, limit: usize) -> String {
    format!(
        "SELECT {MEMORY_COLS}, cmp_bm25(cmp_memories_ngram, 1) AS score, {VISIBLE}
         FROM main.cmp_memories_ngram JOIN main.cmp_memories AS m ON m.rid = cmp_memories_ngram.rowid
         WHERE cmp_memories_ngram MATCH :q AND {eligible} AND {INDEXED}
         ORDER BY score, m.rid LIMIT {limit}"
    )
}

/// Top `limit` eligible memories by BM25 over the character-pair index for the FTS5 query `expr`
/// (best first), each with whether it is visible at the horizon ([`VISIBLE`]).
pub fn ngram_top(conn: &Connection, r: Reader<'_>, expr: &str, limit: usize) -> rusqlite::Result<Vec<Match>> {
    let mut st = conn.prepare_cached(&ngram_sql(r.eligible(), limit))?;
    let rows = st.query_map(named_params! {":q": expr, ":scope": r.scope, ":h": r.h}, match_at_14)?;
    rows.collect()
}

/// A [`Match`] from a row of [`MEMORY_COLS`], then the score, then the visibility.
fn match_at_14(x: &Row<'_>) -> rusqlite::Result<Match> {
    Ok(Match { mem: memory_from_row(x)?, bm25: x.get(14)?, visible: x.get(15)? })
}

/// Rows FTS5 ranks first that are read beyond `limit`, before the eligibility filter.
const OVERFETCH: usize = 56;
/// Past this many ranked rows the fast path gives up and runs [`fts_sql`] (one join over every match).
const FAST_PATH_MAX: usize = 8192;

/// Top `limit` eligible memories by BM25 for the FTS5 query `expr` (best first, ties by rid), each
/// with whether it is visible at the horizon ([`VISIBLE`]; the caller splits them): exactly the rows
/// of [`fts_sql`], found without joining every match.
///
/// The matches are ranked on the index alone (`ORDER BY rank, rowid LIMIT m`: BM25, then rowid, the
/// same total order as [`fts_sql`]); only those `m` rows are read from `cmp_memories` and filtered by
/// eligibility, in the same statement. The first `limit` eligible rows of that prefix are the answer
/// when there are `limit` of them, or when the prefix holds every match. Otherwise `m` grows, and
/// past `FAST_PATH_MAX` the join query answers.
pub fn fts_top(conn: &Connection, r: Reader<'_>, expr: &str, limit: usize) -> rusqlite::Result<Vec<Match>> {
    let mut m = limit + OVERFETCH;
    while m <= FAST_PATH_MAX {
        let _t = crate::timing::phase("fts: ranked rows, eligibility");
        let mut st = conn.prepare_cached(&format!(
            "SELECT f.rank, m.rid IS NOT NULL, {VISIBLE}, {MEMORY_COLS}
             FROM (SELECT rowid, rank FROM main.cmp_memories_fts WHERE cmp_memories_fts MATCH :q AND {}
                   ORDER BY rank, rowid LIMIT {m}) AS f
             LEFT JOIN main.cmp_memories AS m ON m.rid = f.rowid AND {} AND {INDEXED}
             ORDER BY f.rank, f.rowid",
            Index::Words.rank_constraint(),
            r.eligible()
        ))?;
        let mut rows = st.query(named_params! {":q": expr, ":scope": r.scope, ":h": r.h})?;
        let mut n = 0usize;
        let mut found: Vec<Match> = Vec::new();
        while let Some(row) = rows.next()? {
            n += 1;
            if row.get::<_, bool>(1)? && found.len() < limit {
                found.push(Match { mem: memory_from_row_at(row, 3)?, visible: row.get(2)?, bm25: row.get(0)? });
            }
        }
        if n < m || found.len() >= limit {
            return Ok(found);
        }
        m *= 4;
    }
    let _t = crate::timing::phase("fts: join query (fallback)");
    let score = "cmp_bm25(cmp_memories_fts, 0)";
    let mut st = conn.prepare_cached(&fts_sql_with(score, r.eligible(), &format!(", {VISIBLE}"), limit))?;
    let rows = st.query_map(named_params! {":q": expr, ":scope": r.scope, ":h": r.h}, match_at_14)?;
    rows.collect()
}

/// The `limit` newest eligible, visible memories (by occurred_at, else captured_at), newest first;
/// with `rules_only`, only hard rules (kind `negative`).
pub fn newest(conn: &Connection, r: Reader<'_>, limit: usize, rules_only: bool) -> rusqlite::Result<Vec<Memory>> {
    let eligible = r.eligible();
    let kind = if rules_only { "m.kind = 'negative' AND " } else { "" };
    let sql = format!(
        "SELECT {MEMORY_COLS} FROM main.cmp_memories AS m
         WHERE {kind}{eligible} AND {VISIBLE}
         ORDER BY coalesce(m.occurred_at, m.captured_at) DESC, m.id LIMIT {limit}"
    );
    let mut st = conn.prepare_cached(&sql)?;
    let rows = st.query_map(named_params! {":scope": r.scope, ":h": r.h}, memory_from_row)?;
    rows.collect()
}

/// The `k` eligible, visible memories recorded right before and the `k` right after `m` (by
/// occurred_at, else captured_at, then by insertion order, so memories stored with one timestamp — a
/// batch import, a chat export to the minute, one document in parts — keep their order) within
/// `window` seconds: the context of a strong match, e.g. the messages around it in a conversation.
pub fn around(conn: &Connection, r: Reader<'_>, m: &Memory, k: usize, window: f64) -> rusqlite::Result<Vec<Memory>> {
    let when = m.occurred_at.as_deref().unwrap_or(&m.captured_at);
    let Some(t) = crate::time::parse(when) else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    for (cmp, order) in [("<", "DESC"), (">", "ASC")] {
        // Two index range scans: the same instant by insertion order first (closest), then strictly
        // earlier or later instants. (One row-value comparison over (time, rid) cannot use the index
        // on the time expression and scanned the whole scope.)
        let mut side = same_instant(conn, r, m.rid, when, (cmp, order), k)?;
        if side.len() < k {
            side.extend(other_instants(conn, r, when, (cmp, order), k - side.len())?);
        }
        side.retain(|n| {
            let nt = crate::time::parse(n.occurred_at.as_deref().unwrap_or(&n.captured_at));
            nt.is_some_and(|x| (x - t).abs() <= window)
        });
        out.extend(side);
    }
    Ok(out)
}

/// Up to `limit` eligible, visible memories recorded (occurred_at, else captured_at) from `from`
/// (inclusive) to `to` (exclusive), compared as text (ISO-8601 times in one zone sort by time), in
/// time order, then insertion order.
pub fn recorded_between(
    conn: &Connection,
    r: Reader<'_>,
    from: &str,
    to: &str,
    limit: usize,
) -> rusqlite::Result<Vec<Memory>> {
    let sql = format!(
        "SELECT {MEMORY_COLS} FROM main.cmp_memories AS m
         WHERE m.scope = :scope AND coalesce(m.occurred_at, m.captured_at) >= :from
           AND coalesce(m.occurred_at, m.captured_at) < :to AND {} AND {VISIBLE}
         ORDER BY coalesce(m.occurred_at, m.captured_at), m.rid LIMIT {limit}",
        r.eligible()
    );
    let mut st = conn.prepare_cached(&sql)?;
    let rows = st.query_map(named_params! {":scope": r.scope, ":from": from, ":to": to, ":h": r.h}, memory_from_row)?;
    rows.collect()
}

/// Up to `k` memories at the instant `when` before (`<`) or after (`>`) `rid`, closest first.
fn same_instant(
    conn: &Connection,
    r: Reader<'_>,
    rid: i64,
    when: &str,
    (cmp, order): (&str, &str),
    k: usize,
) -> rusqlite::Result<Vec<Memory>> {
    let sql = format!(
        "SELECT {MEMORY_COLS} FROM main.cmp_memories AS m
         WHERE m.scope = :scope AND coalesce(m.occurred_at, m.captured_at) = :t AND m.rid {cmp} :rid
           AND {} AND {VISIBLE}
         ORDER BY m.rid {order} LIMIT {k}",
        r.eligible()
    );
    let mut st = conn.prepare_cached(&sql)?;
    let rows = st.query_map(named_params! {":scope": r.scope, ":t": when, ":rid": rid, ":h": r.h}, memory_from_row)?;
    rows.collect()
}

/// Up to `k` memories at instants strictly before (`<`) or after (`>`) `when`, closest first.
fn other_instants(
    conn: &Connection,
    r: Reader<'_>,
    when: &str,
    (cmp, order): (&str, &str),
    k: usize,
) -> rusqlite::Result<Vec<Memory>> {
    let sql = format!(
        "SELECT {MEMORY_COLS} FROM main.cmp_memories AS m
         WHERE m.scope = :scope AND coalesce(m.occurred_at, m.captured_at) {cmp} :t
           AND {} AND {VISIBLE}
         ORDER BY coalesce(m.occurred_at, m.captured_at) {order}, m.rid {order} LIMIT {k}",
        r.eligible()
    );
    let mut st = conn.prepare_cached(&sql)?;
    let rows = st.query_map(named_params! {":scope": r.scope, ":t": when, ":h": r.h}, memory_from_row)?;
    rows.collect()
}

/// Calls `each(rid, embedding)` for every eligible, visible memory with an embedding (`embedding`
/// is None for a value that is not a blob).
pub fn each_embedding(
    conn: &Connection,
    r: Reader<'_>,
    mut each: impl FnMut(i64, Option<&[u8]>),
) -> rusqlite::Result<()> {
    let sql = format!(
        "SELECT m.rid, m.embedding FROM main.cmp_memories AS m
         WHERE m.embedding IS NOT NULL AND {} AND {VISIBLE}",
        r.eligible()
    );
    let mut st = conn.prepare_cached(&sql)?;
    let mut rows = st.query(named_params! {":scope": r.scope, ":h": r.h})?;
    while let Some(row) = rows.next()? {
        let rid: i64 = row.get(0)?;
        match row.get_ref(1)? {
            rusqlite::types::ValueRef::Blob(b) => each(rid, Some(b)),
            _ => each(rid, None),
        }
    }
    Ok(())
}

/// The memories with these rids (any scope, any state: the caller read them through eligibility).
pub fn by_rids(conn: &Connection, rids: &[i64]) -> rusqlite::Result<Vec<Memory>> {
    let ids = serde_json::to_string(rids).unwrap_or_else(|_| "[]".into());
    let mut st = conn.prepare_cached(&format!(
        "SELECT {MEMORY_COLS} FROM main.cmp_memories AS m WHERE m.rid IN (SELECT value FROM json_each(?1))"
    ))?;
    let rows = st.query_map([ids], memory_from_row)?;
    rows.collect()
}

/// Of the memories `ids`, those superseded at the reader's horizon (by the one rule, [`SUPERSEDED`]).
pub fn superseded(conn: &Connection, ids: &[&str], h: f64) -> rusqlite::Result<std::collections::HashSet<String>> {
    if ids.is_empty() {
        return Ok(Default::default());
    }
    let json = serde_json::to_string(ids).unwrap_or_else(|_| "[]".into());
    let mut st = conn.prepare_cached(&format!(
        "SELECT m.id FROM main.cmp_memories AS m WHERE m.id IN (SELECT value FROM json_each(:ids)) AND {SUPERSEDED}"
    ))?;
    let rows = st.query_map(named_params! {":ids": json, ":h": h}, |r| r.get(0))?;
    rows.collect()
}

/// A memory kind: the closed set the schema's `CHECK` allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A fact (the default).
    Semantic,
    /// Something that happened.
    Episodic,
    /// How the user wants things written.
    Style,
    /// A decision taken.
    Decision,
    /// A preference.
    Preference,
    /// A hard rule or constraint.
    Negative,
    /// How to do something.
    Procedural,
}

impl Kind {
    /// Every kind, in the schema's order.
    pub const ALL: [Kind; 7] = [
        Kind::Semantic,
        Kind::Episodic,
        Kind::Style,
        Kind::Decision,
        Kind::Preference,
        Kind::Negative,
        Kind::Procedural,
    ];
    /// Every kind's name, in the schema's order.
    pub const NAMES: [&'static str; 7] =
        ["semantic", "episodic", "style", "decision", "preference", "negative", "procedural"];

    /// The name stored in `cmp_memories.kind`.
    pub fn name(self) -> &'static str {
        Kind::NAMES[self as usize]
    }

    /// The kind of this name, if it is one.
    pub fn parse(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// A memory to store with [`remember`].
#[derive(Debug, Clone, Copy)]
pub struct NewMemory<'a> {
    /// The text.
    pub content: &'a str,
    /// Its kind.
    pub kind: Kind,
    /// The `entities` JSON array, if any.
    pub entities: Option<&'a str>,
    /// Locator of the source.
    pub source_url: Option<&'a str>,
    /// When it happened.
    pub occurred_at: Option<&'a str>,
    /// Owner namespace.
    pub scope: &'a str,
    /// The id of the memory of `scope` it replaces, which must not be redacted or superseded.
    pub supersedes: Option<&'a str>,
}

/// What [`remember`] stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Remembered {
    /// The new memory's id.
    pub id: String,
    /// When it was captured (also the `superseded_at` of the memory it replaces).
    pub captured_at: String,
}

/// Why [`remember`] stored nothing.
#[derive(Debug)]
pub enum RememberError {
    /// `supersedes` names no memory of the scope (or a redacted one, whose id is never confirmed).
    NoSuchMemory,
    /// `supersedes` is already superseded by this id.
    AlreadySuperseded(String),
    /// SQLite failed.
    Sql(rusqlite::Error),
}

impl From<rusqlite::Error> for RememberError {
    fn from(e: rusqlite::Error) -> Self {
        RememberError::Sql(e)
    }
}

/// Stores a new memory, captured now, and marks the memory it supersedes (if any) as replaced by
/// it, all in one transaction: either both rows change or neither.
pub fn remember(conn: &Connection, m: &NewMemory<'_>) -> Result<Remembered, RememberError> {
    let tx = conn.unchecked_transaction()?;
    let now: String = tx.query_row("SELECT strftime('%Y-%m-%dT%H:%M:%fZ', 'now')", [], |r| r.get(0))?;
    if let Some(old) = m.supersedes {
        let head: Option<Option<String>> = tx
            .query_row(
                &format!(
                    "SELECT m.superseded_by FROM main.cmp_memories AS m WHERE m.id = ?1 AND m.scope = ?2 AND {NOT_REDACTED}"
                ),
                params![old, m.scope],
                |r| r.get(0),
            )
            .optional()?;
        match head {
            None => return Err(RememberError::NoSuchMemory),
            Some(Some(by)) => return Err(RememberError::AlreadySuperseded(by)),
            Some(None) => {}
        }
    }
    let id: String = tx.query_row(
        "INSERT INTO main.cmp_memories(content, kind, entities, source_url, occurred_at, captured_at, scope)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) RETURNING id",
        params![m.content, m.kind.name(), m.entities, m.source_url, m.occurred_at, now, m.scope],
        |r| r.get(0),
    )?;
    if let Some(old) = m.supersedes {
        tx.execute(
            "UPDATE main.cmp_memories SET superseded_by = ?1, superseded_at = ?2 WHERE id = ?3 AND scope = ?4",
            params![id, now, old, m.scope],
        )?;
    }
    tx.commit()?;
    Ok(Remembered { id, captured_at: now })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::eligibility::ELIGIBLE;

    fn db() -> Connection {
        let conn = Connection::open_in_memory().expect("open");
        crate::register(&conn).expect("register");
        crate::store::init(&conn).expect("init");
        conn
    }

    fn new<'a>(content: &'a str, supersedes: Option<&'a str>) -> NewMemory<'a> {
        NewMemory {
            content,
            kind: Kind::Decision,
            entities: None,
            source_url: None,
            occurred_at: None,
            scope: "s",
            supersedes,
        }
    }

    #[test]
    fn entity_names_are_the_strings_of_an_array_trimmed_once_each() {
        let names = |j: &str| parse_entities(j);
        assert_eq!(names(r#"[" Dana ", "dana", "Atlas", ""]"#), vec!["Dana", "Atlas"]);
        assert_eq!(names(r#"["Dana", 7, null, ["x"], {"a": 1}, " Atlas"]"#), vec!["Dana", "Atlas"]);
        assert_eq!(names(r#"["Dana\u00e9"]"#), vec!["Danaé"]);
        for not_an_array in [r#""Dana""#, "7", "{}", "[", ""] {
            assert!(names(not_an_array).is_empty(), "{not_an_array}");
        }
    }

    #[test]
    fn kinds_round_trip_their_names() {
        for k in Kind::ALL {
            assert_eq!(Kind::parse(k.name()), Some(k));
        }
        assert_eq!(Kind::parse("gossip"), None);
    }

    #[test]
    fn remember_supersedes_once_and_only_in_scope() {
        let conn = db();
        let a = remember(&conn, &new("plan A", None)).expect("a");
        let b = remember(&conn, &new("plan B", Some(&a.id))).expect("b");
        let any = Reader { scope: "s", h: 3_000_000.0, any_version: true };
        let old = readable(&conn, any, &a.id).expect("read").expect("row");
        assert_eq!(
            (old.superseded_by.as_deref(), old.superseded_at.as_deref()),
            (Some(b.id.as_str()), Some(b.captured_at.as_str()))
        );
        assert!(readable(&conn, Reader { any_version: false, ..any }, &a.id).expect("read").is_none(), "superseded");
        assert!(readable(&conn, Reader { scope: "t", ..any }, &a.id).expect("read").is_none(), "another scope");
        assert!(
            matches!(remember(&conn, &new("plan C", Some(&a.id))), Err(RememberError::AlreadySuperseded(by)) if by == b.id)
        );
        let other = NewMemory { scope: "t", ..new("elsewhere", Some(&b.id)) };
        assert!(matches!(remember(&conn, &other), Err(RememberError::NoSuchMemory)));
    }

    #[test]
    fn superseded_is_the_negation_of_eligibility_in_scope() {
        let conn = db();
        let a = remember(&conn, &new("old", None)).expect("a");
        let b = remember(&conn, &new("new", Some(&a.id))).expect("b");
        conn.execute(
            "INSERT INTO main.cmp_memories(id, content, scope, superseded_by) VALUES ('mem_d', 'dangling', 's', 'mem_none')",
            [],
        )
        .expect("dangling");
        let ids = [a.id.as_str(), b.id.as_str(), "mem_d"];
        let far_future = 3_000_000.0;
        let sup = superseded(&conn, &ids, far_future).expect("superseded");
        assert_eq!(sup.into_iter().collect::<Vec<_>>(), vec![a.id.clone()]);
        let eligible: Vec<String> = conn
            .prepare(&format!("SELECT m.id FROM main.cmp_memories AS m WHERE {ELIGIBLE} ORDER BY m.rid"))
            .expect("sql")
            .query_map(named_params! {":scope": "s", ":h": far_future}, |r| r.get(0))
            .expect("rows")
            .collect::<rusqlite::Result<_>>()
            .expect("ids");
        assert_eq!(eligible, vec![b.id.clone(), "mem_d".to_string()]);
        assert!(superseded(&conn, &ids, 0.0).expect("before").is_empty(), "not yet superseded at the epoch");
    }
}
