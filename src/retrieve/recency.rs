//! The newest memories of the scope, so "what happened recently" tasks work even when no word of
//! the task matches; and the scope's hard rules (kind `negative`), which every pack must be able to
//! place whether or not the task mentions them. These candidates carry no relevance score (null).

use super::pool::{Pool, Ranking};
use super::Query;
use crate::store::memories::newest;
use rusqlite::Connection;

/// The recency ranking: the query's `recency_limit` newest memories, newest first, pooled.
pub fn rank(conn: &Connection, q: &Query<'_>, pool: &mut Pool) -> rusqlite::Result<Ranking> {
    if q.recency_limit == 0 {
        return Ok(Vec::new());
    }
    Ok(newest(conn, q.reader(), q.recency_limit, false)?.into_iter().map(|m| pool.add(m)).collect())
}

/// The hard-rule ranking: the query's `rules_limit` newest hard rules, newest first, pooled.
pub fn rules_rank(conn: &Connection, q: &Query<'_>, pool: &mut Pool) -> rusqlite::Result<Ranking> {
    if q.rules_limit == 0 {
        return Ok(Vec::new());
    }
    Ok(newest(conn, q.reader(), q.rules_limit, true)?.into_iter().map(|m| pool.add(m)).collect())
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
