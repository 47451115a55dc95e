//! The `cmp_entities` and `cmp_memory_entities` tables (filled by the schema's triggers from each
//! memory's `entities` JSON): entity names, how many memories link to an entity, and the memories
//! linked to entities, read through the eligibility rule.

use super::eligibility::{Reader, VISIBLE};
use super::memories::{lossy, memory_from_row, Memory, MEMORY_COLS};
use rusqlite::{named_params, Connection};
use std::collections::HashSet;

/// Every entity: (id, name).
pub fn all(conn: &Connection) -> rusqlite::Result<Vec<(i64, String)>> {
    let mut st = conn.prepare_cached("SELECT id, name FROM cmp_entities")?;
    let rows = st.query_map([], |r| Ok((r.get(0)?, lossy(r, 1).unwrap_or_default())))?;
    rows.collect()
}

/// The largest rid of `cmp_memories` (0 when empty): an O(log n) stand-in for the row count.
pub fn max_rid(conn: &Connection) -> rusqlite::Result<i64> {
    conn.prepare_cached("SELECT coalesce(max(rid), 0) FROM cmp_memories")?.query_row([], |r| r.get(0))
}

/// How many memories link to `entity`, counted up to `cap` (a count of `cap` means "at least").
pub fn links_up_to(conn: &Connection, entity: i64, cap: i64) -> rusqlite::Result<i64> {
    let mut st = conn.prepare_cached(&format!(
        "SELECT count(*) FROM (SELECT 1 FROM cmp_memory_entities WHERE entity_id = ?1 LIMIT {cap})"
    ))?;
    st.query_row([entity], |r| r.get(0))
}

/// [`links_up_to`] counting only memories of `scope`.
pub fn scoped_links_up_to(conn: &Connection, entity: i64, scope: &str, cap: i64) -> rusqlite::Result<i64> {
    let mut st = conn.prepare_cached(&format!(
        "SELECT count(*) FROM (SELECT 1 FROM cmp_memory_entities AS l JOIN cmp_memories AS m ON m.rid = l.rid
                               WHERE l.entity_id = ?1 AND m.scope = ?2 LIMIT {cap})"
    ))?;
    st.query_row(rusqlite::params![entity, scope], |r| r.get(0))
}

/// Two subqueries: SQLite reads a lone min() or max() off the end of the scope index, but both in
/// one query scan the whole index (12 ms a call at 100,000 rows).
const ONLY_SCOPE: &str =
    "SELECT coalesce((SELECT min(scope) FROM cmp_memories) = ?1 AND (SELECT max(scope) FROM cmp_memories) = ?1, 1)";

/// Whether every memory of the store is in `scope` (two probes of the scope index; true when empty).
pub fn only_scope(conn: &Connection, scope: &str) -> rusqlite::Result<bool> {
    let mut st = conn.prepare_cached(ONLY_SCOPE)?;
    st.query_row([scope], |r| r.get(0))
}

/// How many memories `scope` holds, counted up to `cap`.
pub fn scope_rows_up_to(conn: &Connection, scope: &str, cap: i64) -> rusqlite::Result<i64> {
    let mut st = conn
        .prepare_cached(&format!("SELECT count(*) FROM (SELECT 1 FROM cmp_memories WHERE scope = ?1 LIMIT {cap})"))?;
    st.query_row([scope], |r| r.get(0))
}

/// Of the memories `rids`, those linked to any of `entity_ids`.
pub fn linked(conn: &Connection, entity_ids: &[i64], rids: &[i64]) -> rusqlite::Result<HashSet<i64>> {
    if entity_ids.is_empty() || rids.is_empty() {
        return Ok(Default::default());
    }
    let mut st = conn.prepare_cached(
        "SELECT DISTINCT rid FROM cmp_memory_entities
         WHERE entity_id IN (SELECT value FROM json_each(?1)) AND rid IN (SELECT value FROM json_each(?2))",
    )?;
    let e = serde_json::to_string(entity_ids).unwrap_or_else(|_| "[]".into());
    let r = serde_json::to_string(rids).unwrap_or_else(|_| "[]".into());
    let rows = st.query_map([e, r], |x| x.get(0))?;
    rows.collect()
}

/// Eligible, visible memories linked to any of `entity_ids` with how many of them each links to:
/// most links first, then newest, at most `limit`.
pub fn memories_linked(
    conn: &Connection,
    r: Reader<'_>,
    entity_ids: &[i64],
    limit: usize,
) -> rusqlite::Result<Vec<(Memory, i64)>> {
    if entity_ids.is_empty() {
        return Ok(Vec::new());
    }
    let ids = serde_json::to_string(entity_ids).unwrap_or_else(|_| "[]".into());
    let sql = format!(
        "SELECT {MEMORY_COLS}, count(*) AS hits
         FROM cmp_memory_entities AS l JOIN cmp_memories AS m ON m.rid = l.rid
         WHERE l.entity_id IN (SELECT value FROM json_each(:ids))
           AND {} AND {VISIBLE}
         GROUP BY m.rid
         ORDER BY hits DESC, coalesce(m.occurred_at, m.captured_at) DESC, m.id LIMIT {limit}",
        r.eligible()
    );
    let mut st = conn.prepare_cached(&sql)?;
    let rows = st.query_map(named_params! {":ids": ids, ":scope": r.scope, ":h": r.h}, |x| {
        Ok((memory_from_row(x)?, x.get::<_, i64>(14)?))
    })?;
    rows.collect()
}

/// The entities memory `rid` links to: (id, name), by name.
pub fn of_memory(conn: &Connection, rid: i64) -> rusqlite::Result<Vec<(i64, String)>> {
    let mut st = conn.prepare_cached(
        "SELECT e.id, e.name FROM cmp_memory_entities AS l JOIN cmp_entities AS e ON e.id = l.entity_id
         WHERE l.rid = ?1 ORDER BY e.name",
    )?;
    let rows = st.query_map([rid], |x| Ok((x.get(0)?, lossy(x, 1).unwrap_or_default())))?;
    rows.collect()
}

/// The `limit` newest eligible, visible memories other than `rid` linked to `entity`.
pub fn neighbours(
    conn: &Connection,
    r: Reader<'_>,
    entity: i64,
    rid: i64,
    limit: usize,
) -> rusqlite::Result<Vec<Memory>> {
    let sql = format!(
        "SELECT {MEMORY_COLS} FROM cmp_memory_entities AS l JOIN cmp_memories AS m ON m.rid = l.rid
         WHERE l.entity_id = :e AND m.rid <> :rid AND {} AND {VISIBLE}
         ORDER BY coalesce(m.occurred_at, m.captured_at) DESC, m.id LIMIT {limit}",
        r.eligible()
    );
    let mut st = conn.prepare_cached(&sql)?;
    let rows =
        st.query_map(named_params! {":e": entity, ":rid": rid, ":scope": r.scope, ":h": r.h}, memory_from_row)?;
    rows.collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whether_a_store_has_one_scope_is_two_index_probes() {
        let conn = Connection::open_in_memory().expect("open");
        crate::register(&conn).expect("register");
        crate::store::init(&conn).expect("init");
        let plan: Vec<String> = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {ONLY_SCOPE}"))
            .expect("plan")
            .query_map(["default"], |r| r.get::<_, String>(3))
            .expect("plan")
            .collect::<rusqlite::Result<_>>()
            .expect("plan");
        assert!(plan.iter().all(|l| !l.starts_with("SCAN cmp_memories")), "{plan:?}");
        assert!(only_scope(&conn, "default").expect("empty"));
        conn.execute("INSERT INTO cmp_memories(content) VALUES ('a')", []).expect("insert");
        assert!(only_scope(&conn, "default").expect("one scope"));
        conn.execute("INSERT INTO cmp_memories(content, scope) VALUES ('b', 'other')", []).expect("insert");
        assert!(!only_scope(&conn, "default").expect("two scopes"));
        assert!(!only_scope(&conn, "other").expect("two scopes"));
    }
}
