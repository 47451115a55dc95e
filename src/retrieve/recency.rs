//! The newest memories of the scope, so "what happened recently" tasks work even when no word of
//! the task matches; and the scope's hard rules (kind `negative`), which every pack must be able to
//! place whether or not the task mentions them. These candidates carry no relevance score (null).

use super::pool::{Pool, Ranking};
use super::{Query, VISIBLE};
use crate::store::{memory_from_row, Memory, MEMORY_COLS};
use rusqlite::{named_params, Connection};

/// The recency ranking: the query's `recency_limit` newest memories, newest first, pooled.
pub fn rank(conn: &Connection, q: &Query<'_>, pool: &mut Pool) -> rusqlite::Result<Ranking> {
    if q.recency_limit == 0 {
        return Ok(Vec::new());
    }
    Ok(search(conn, q, q.recency_limit)?.into_iter().map(|m| pool.add(m)).collect())
}

/// The hard-rule ranking: the query's `rules_limit` newest hard rules, newest first, pooled.
pub fn rules_rank(conn: &Connection, q: &Query<'_>, pool: &mut Pool) -> rusqlite::Result<Ranking> {
    if q.rules_limit == 0 {
        return Ok(Vec::new());
    }
    Ok(rules(conn, q, q.rules_limit)?.into_iter().map(|m| pool.add(m)).collect())
}

/// The `limit` newest visible memories (by occurred_at, else captured_at), newest first.
pub fn search(conn: &Connection, q: &Query<'_>, limit: usize) -> rusqlite::Result<Vec<Memory>> {
    let eligible = q.eligible();
    let sql = format!(
        "SELECT {MEMORY_COLS} FROM cmp_memories AS m
         WHERE {eligible} AND {VISIBLE}
         ORDER BY coalesce(m.occurred_at, m.captured_at) DESC, m.id LIMIT :n"
    );
    let mut st = conn.prepare_cached(&sql)?;
    let rows =
        st.query_map(named_params! {":scope": q.scope, ":h": q.horizon_jd, ":n": limit as i64}, memory_from_row)?;
    rows.collect()
}

/// The `limit` newest visible hard rules (kind `negative`) of the scope.
pub fn rules(conn: &Connection, q: &Query<'_>, limit: usize) -> rusqlite::Result<Vec<Memory>> {
    let eligible = q.eligible();
    let sql = format!(
        "SELECT {MEMORY_COLS} FROM cmp_memories AS m
         WHERE m.kind = 'negative' AND {eligible} AND {VISIBLE}
         ORDER BY coalesce(m.occurred_at, m.captured_at) DESC, m.id LIMIT :n"
    );
    let mut st = conn.prepare_cached(&sql)?;
    let rows =
        st.query_map(named_params! {":scope": q.scope, ":h": q.horizon_jd, ":n": limit as i64}, memory_from_row)?;
    rows.collect()
}

/// The `k` memories recorded right before and the `k` right after `m` (by occurred_at, else
/// captured_at, then by insertion order, so memories stored with one timestamp — a batch import, a
/// chat export to the minute, one document in parts — keep their order) within `window` seconds:
/// the context of a strong match, e.g. the messages around it in a conversation.
pub fn around(conn: &Connection, q: &Query<'_>, m: &Memory, k: usize, window: f64) -> rusqlite::Result<Vec<Memory>> {
    let when = m.occurred_at.as_deref().unwrap_or(&m.captured_at);
    let Some(t) = crate::time::parse(when) else { return Ok(Vec::new()) };
    let eligible = q.eligible();
    let mut out = Vec::new();
    for (cmp, order) in [("<", "DESC"), (">", "ASC")] {
        // Two index range scans: the same instant by insertion order first (closest), then strictly
        // earlier or later instants. (One row-value comparison over (time, rid) cannot use the index
        // on the time expression and scanned the whole scope.)
        let same = format!(
            "SELECT {MEMORY_COLS} FROM cmp_memories AS m
             WHERE m.scope = :scope AND coalesce(m.occurred_at, m.captured_at) = :t AND m.rid {cmp} :rid
               AND {eligible} AND {VISIBLE}
             ORDER BY m.rid {order} LIMIT :k"
        );
        let other = format!(
            "SELECT {MEMORY_COLS} FROM cmp_memories AS m
             WHERE m.scope = :scope AND coalesce(m.occurred_at, m.captured_at) {cmp} :t
               AND {eligible} AND {VISIBLE}
             ORDER BY coalesce(m.occurred_at, m.captured_at) {order}, m.rid {order} LIMIT :k"
        );
        let mut side = Vec::new();
        for (sql, by_rid) in [(same, true), (other, false)] {
            let left = k - side.len();
            if left == 0 {
                break;
            }
            let mut st = conn.prepare_cached(&sql)?;
            let k = left as i64;
            let mut rows = if by_rid {
                st.query(named_params! {":scope": q.scope, ":t": when, ":rid": m.rid, ":h": q.horizon_jd, ":k": k})?
            } else {
                st.query(named_params! {":scope": q.scope, ":t": when, ":h": q.horizon_jd, ":k": k})?
            };
            while let Some(r) = rows.next()? {
                let n = memory_from_row(r)?;
                let nt = crate::time::parse(n.occurred_at.as_deref().unwrap_or(&n.captured_at));
                if nt.is_some_and(|x| (x - t).abs() <= window) {
                    side.push(n);
                }
            }
        }
        out.extend(side);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retrieve::testdb::{add, ids, open, query};

    #[test]
    fn newest_first_and_rules_only_when_asked() {
        let conn = open();
        add(&conn, "mem_old", "old", "2026-01-01T00:00:00Z", "semantic", "[]");
        add(&conn, "mem_new", "new", "2026-05-01T00:00:00Z", "semantic", "[]");
        add(&conn, "mem_rule", "never on fridays", "2026-03-01T00:00:00Z", "negative", "[]");
        add(&conn, "mem_later", "after the horizon", "2026-07-01T00:00:00Z", "semantic", "[]");
        let mut q = query("");
        q.recency_limit = 2;
        let mut pool = Pool::default();
        let recent = rank(&conn, &q, &mut pool).expect("recency");
        assert_eq!(ids(&pool, &recent), ["mem_new", "mem_rule"]);
        let rules = rules_rank(&conn, &q, &mut pool).expect("rules");
        assert_eq!(ids(&pool, &rules), ["mem_rule"]);
        assert_eq!(rules, vec![recent[1]], "one pool entry per memory");
        q.recency_limit = 0;
        q.rules_limit = 0;
        assert!(rank(&conn, &q, &mut pool).expect("none").is_empty());
        assert!(rules_rank(&conn, &q, &mut pool).expect("none").is_empty());
    }
}
