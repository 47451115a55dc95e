//! The `cmp_entities` and `cmp_memory_entities` tables (filled by the schema's triggers from each
//! memory's `entities` JSON): entity names, how many memories link to an entity, and the memories
//! linked to entities, read through the eligibility rule.

use super::eligibility::{Reader, NOT_REDACTED, VISIBLE};
use super::memories::{lossy, memory_from_row, Memory, MEMORY_COLS};
use rusqlite::{named_params, Connection, OptionalExtension};
use std::collections::HashSet;

/// Every entity: (id, name).
pub fn all(conn: &Connection) -> rusqlite::Result<Vec<(i64, String)>> {
    let mut st = conn.prepare_cached("SELECT id, name FROM main.cmp_entities")?;
    let rows = st.query_map([], |r| Ok((r.get(0)?, lossy(r, 1).unwrap_or_default())))?;
    rows.collect()
}

/// How many rows the word index holds, of every scope: the rows that are neither redacted nor
/// queued. FTS5 keeps that count as the first varint of its averages record (block 1 of
/// `cmp_memories_fts_data`), so this is one read of one small row.
pub fn indexed_rows(conn: &Connection) -> rusqlite::Result<i64> {
    let block: Option<Vec<u8>> = conn
        .prepare_cached("SELECT block FROM main.cmp_memories_fts_data WHERE id = 1")?
        .query_row([], |r| r.get(0))
        .optional()?;
    Ok(block.map_or(0, |b| i64::try_from(varint(&b)).unwrap_or(i64::MAX)))
}

/// An SQLite varint (FTS5 writes its counts in this form): big-endian groups of 7 bits, each byte
/// but the last with its high bit set; a ninth byte gives 8 bits.
fn varint(b: &[u8]) -> u64 {
    let mut v: u64 = 0;
    for (i, &x) in b.iter().enumerate().take(9) {
        if i == 8 {
            return (v << 8) | u64::from(x);
        }
        v = (v << 7) | u64::from(x & 0x7f);
        if x & 0x80 == 0 {
            break;
        }
    }
    v
}

/// How many rows of every scope are not redacted: the word index's rows and the queued rows that
/// are not redacted (a connection that cannot write leaves rows queued).
pub fn unredacted_rows(conn: &Connection) -> rusqlite::Result<i64> {
    let queued: i64 = conn.prepare_cached(&queued_unredacted())?.query_row([], |r| r.get(0))?;
    Ok(indexed_rows(conn)? + queued)
}

/// The SQL counting the queued rows that are not redacted. `CROSS JOIN` keeps the queue the outer
/// loop: without statistics the planner scanned every memory and probed the (usually empty) queue,
/// 21 ms a call at 100,000 rows.
fn queued_unredacted() -> String {
    format!("SELECT count(*) FROM main.cmp_pending AS p CROSS JOIN main.cmp_memories AS m ON m.rid = p.rid WHERE {NOT_REDACTED}")
}

/// How many memories link to `entity`, counted up to `cap` (a count of `cap` means "at least").
pub fn links_up_to(conn: &Connection, entity: i64, cap: i64) -> rusqlite::Result<i64> {
    let mut st = conn.prepare_cached(&format!(
        "SELECT count(*) FROM (SELECT 1 FROM main.cmp_memory_entities WHERE entity_id = ?1 LIMIT {cap})"
    ))?;
    st.query_row([entity], |r| r.get(0))
}

/// [`links_up_to`] counting only memories of `scope`.
pub fn scoped_links_up_to(conn: &Connection, entity: i64, scope: &str, cap: i64) -> rusqlite::Result<i64> {
    let mut st = conn.prepare_cached(&format!(
        "SELECT count(*) FROM (SELECT 1 FROM main.cmp_memory_entities AS l JOIN main.cmp_memories AS m ON m.rid = l.rid
                               WHERE l.entity_id = ?1 AND m.scope = ?2 LIMIT {cap})"
    ))?;
    st.query_row(rusqlite::params![entity, scope], |r| r.get(0))
}

/// Two subqueries: SQLite reads a lone min() or max() off the end of the scope index, but both in
/// one query scan the whole index (12 ms a call at 100,000 rows).
const ONLY_SCOPE: &str =
    "SELECT coalesce((SELECT min(scope) FROM main.cmp_memories) = ?1 AND (SELECT max(scope) FROM main.cmp_memories) = ?1, 1)";

/// Whether every memory of the store is in `scope` (two probes of the scope index; true when empty).
pub fn only_scope(conn: &Connection, scope: &str) -> rusqlite::Result<bool> {
    let mut st = conn.prepare_cached(ONLY_SCOPE)?;
    st.query_row([scope], |r| r.get(0))
}

/// How many memories of `scope` are not redacted, counted up to `cap`.
pub fn scope_rows_up_to(conn: &Connection, scope: &str, cap: i64) -> rusqlite::Result<i64> {
    let mut st = conn.prepare_cached(&format!(
        "SELECT count(*) FROM (SELECT 1 FROM main.cmp_memories AS m WHERE m.scope = ?1 AND {NOT_REDACTED} LIMIT {cap})"
    ))?;
    st.query_row([scope], |r| r.get(0))
}

/// Of the memories `rids`, those linked to any of `entity_ids`.
pub fn linked(conn: &Connection, entity_ids: &[i64], rids: &[i64]) -> rusqlite::Result<HashSet<i64>> {
    if entity_ids.is_empty() || rids.is_empty() {
        return Ok(Default::default());
    }
    let mut st = conn.prepare_cached(
        "SELECT DISTINCT rid FROM main.cmp_memory_entities
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
         FROM main.cmp_memory_entities AS l JOIN main.cmp_memories AS m ON m.rid = l.rid
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
        "SELECT e.id, e.name FROM main.cmp_memory_entities AS l JOIN main.cmp_entities AS e ON e.id = l.entity_id
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
        "SELECT {MEMORY_COLS} FROM main.cmp_memory_entities AS l JOIN main.cmp_memories AS m ON m.rid = l.rid
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

    /// The word index's own count is the number of its rows, through inserts, redactions, deletes
    /// and a rebuild, and varints of every length decode.
    #[test]
    fn the_word_index_counts_its_rows() {
        let conn = Connection::open_in_memory().expect("open");
        crate::register(&conn).expect("register");
        crate::store::init(&conn).expect("init");
        let count = || -> (i64, i64) {
            crate::store::pending::flush(&conn).expect("flush");
            let rows: i64 = conn
                .query_row("SELECT count(*) FROM main.cmp_memories_indexable", [], |r| r.get(0))
                .expect("count the view");
            (indexed_rows(&conn).expect("indexed rows"), rows)
        };
        assert_eq!(count(), (0, 0));
        conn.execute_batch(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 300)
             INSERT INTO main.cmp_memories(content) SELECT 'row ' || i FROM n",
        )
        .expect("insert");
        assert_eq!(count(), (300, 300));
        conn.execute_batch(
            "UPDATE main.cmp_memories SET redacted = 1 WHERE rid % 3 = 0; DELETE FROM main.cmp_memories WHERE rid % 7 = 0",
        )
        .expect("redact and delete");
        let (n, rows) = count();
        assert_eq!(n, rows);
        conn.execute_batch("INSERT INTO main.cmp_memories_fts(cmp_memories_fts) VALUES ('rebuild')").expect("rebuild");
        assert_eq!(count(), (rows, rows));
        assert_eq!(unredacted_rows(&conn).expect("unredacted"), rows);
        for (bytes, want) in
            [(vec![0x05], 5), (vec![0x81, 0x00], 128), (vec![0x82, 0xac, 0x00], 38_400), (vec![0xff; 9], u64::MAX)]
        {
            assert_eq!(varint(&bytes), want, "{bytes:?}");
        }
    }

    /// A fresh store and the plan's lines (`EXPLAIN QUERY PLAN`) of `sql` with `params`.
    fn plan(sql: &str, params: impl rusqlite::Params) -> (Connection, Vec<String>) {
        let conn = Connection::open_in_memory().expect("open");
        crate::register(&conn).expect("register");
        crate::store::init(&conn).expect("init");
        let lines = conn
            .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .expect("plan")
            .query_map(params, |r| r.get::<_, String>(3))
            .expect("plan")
            .collect::<rusqlite::Result<_>>()
            .expect("plan");
        (conn, lines)
    }

    #[test]
    fn counting_the_queue_reads_the_queue_not_the_memories() {
        let (_, plan) = plan(&queued_unredacted(), []);
        assert!(plan.iter().all(|l| !l.starts_with("SCAN m") && !l.starts_with("SCAN cmp_memories")), "{plan:?}");
    }

    #[test]
    fn whether_a_store_has_one_scope_is_two_index_probes() {
        let (conn, plan) = plan(ONLY_SCOPE, ["default"]);
        assert!(plan.iter().all(|l| !l.starts_with("SCAN cmp_memories")), "{plan:?}");
        assert!(only_scope(&conn, "default").expect("empty"));
        conn.execute("INSERT INTO main.cmp_memories(content) VALUES ('a')", []).expect("insert");
        assert!(only_scope(&conn, "default").expect("one scope"));
        conn.execute("INSERT INTO main.cmp_memories(content, scope) VALUES ('b', 'other')", []).expect("insert");
        assert!(!only_scope(&conn, "default").expect("two scopes"));
        assert!(!only_scope(&conn, "other").expect("two scopes"));
    }
}
