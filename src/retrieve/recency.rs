//! The newest memories of the scope, so "what happened recently" tasks work even when no word of
//! the task matches; and the scope's hard rules (kind `negative`), which every pack must be able to
//! place whether or not the task mentions them. These candidates carry no relevance score (null).

use super::{Query, VISIBLE};
use crate::store::{memory_from_row, Memory, MEMORY_COLS};
use rusqlite::{named_params, Connection};

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
