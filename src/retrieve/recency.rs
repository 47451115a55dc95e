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

/// [`around`] for every anchor at once, in two statements whatever the number of anchors: one
/// lists each anchor's neighbours (in the order [`around`] reads them), one reads those rows.
pub fn around_all(
    conn: &Connection,
    q: &Query<'_>,
    anchors: &[&Memory],
    k: usize,
    window: f64,
) -> rusqlite::Result<Vec<Vec<Memory>>> {
    let mut out: Vec<Vec<Memory>> = vec![Vec::new(); anchors.len()];
    let mut times: Vec<Option<f64>> = Vec::with_capacity(anchors.len());
    let mut list = Vec::new();
    for (i, m) in anchors.iter().enumerate() {
        let when = m.occurred_at.as_deref().unwrap_or(&m.captured_at);
        let t = crate::time::parse(when);
        if t.is_some() {
            list.push(serde_json::json!([i, when, m.rid]));
        }
        times.push(t);
    }
    if list.is_empty() {
        return Ok(out);
    }
    let eligible = q.eligible();
    let side = |cmp: &str, order: &str| {
        format!(
            "(SELECT json_group_array(rid) FROM (SELECT m.rid FROM cmp_memories AS m
               WHERE m.scope = :scope AND coalesce(m.occurred_at, m.captured_at) {cmp} a.t AND m.rid <> a.rid
                 AND {eligible} AND {VISIBLE}
               ORDER BY coalesce(m.occurred_at, m.captured_at) {order}, m.id LIMIT :k))"
        )
    };
    let sql = format!(
        "SELECT a.i, {}, {} FROM (SELECT json_extract(value, '$[0]') AS i, json_extract(value, '$[1]') AS t,
                                         json_extract(value, '$[2]') AS rid FROM json_each(:anchors)) AS a",
        side("<", "DESC"),
        side(">", "ASC")
    );
    let mut lists: Vec<(usize, Vec<i64>)> = Vec::new();
    {
        let mut st = conn.prepare_cached(&sql)?;
        let anchors_json = serde_json::Value::Array(list).to_string();
        let mut rows =
            st.query(named_params! {":anchors": anchors_json, ":scope": q.scope, ":h": q.horizon_jd, ":k": k as i64})?;
        while let Some(r) = rows.next()? {
            let i: i64 = r.get(0)?;
            let mut rids = Vec::new();
            for c in [1, 2] {
                let j: Option<String> = r.get(c)?;
                rids.extend(serde_json::from_str::<Vec<i64>>(j.as_deref().unwrap_or("[]")).unwrap_or_default());
            }
            lists.push((i as usize, rids));
        }
    }
    let all: Vec<i64> = lists.iter().flat_map(|l| l.1.iter().copied()).collect();
    if all.is_empty() {
        return Ok(out);
    }
    let mut by_rid: std::collections::HashMap<i64, Memory> = std::collections::HashMap::new();
    {
        let mut st = conn.prepare_cached(&format!(
            "SELECT {MEMORY_COLS} FROM cmp_memories AS m WHERE m.rid IN (SELECT value FROM json_each(?1))"
        ))?;
        let ids = serde_json::to_string(&all).unwrap_or_else(|_| "[]".into());
        for m in st.query_map([ids], memory_from_row)? {
            let m = m?;
            by_rid.insert(m.rid, m);
        }
    }
    for (i, rids) in lists {
        let Some(t) = times.get(i).copied().flatten() else { continue };
        for rid in rids {
            let Some(n) = by_rid.get(&rid) else { continue };
            let nt = crate::time::parse(n.occurred_at.as_deref().unwrap_or(&n.captured_at));
            if nt.is_some_and(|x| (x - t).abs() <= window) {
                out[i].push(n.clone());
            }
        }
    }
    Ok(out)
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
        let sql = format!(
            "SELECT {MEMORY_COLS} FROM cmp_memories AS m
             WHERE m.scope = :scope AND (coalesce(m.occurred_at, m.captured_at), m.rid) {cmp} (:t, :rid)
               AND {eligible} AND {VISIBLE}
             ORDER BY coalesce(m.occurred_at, m.captured_at) {order}, m.rid {order} LIMIT :k"
        );
        let mut st = conn.prepare_cached(&sql)?;
        let mut rows =
            st.query(named_params! {":scope": q.scope, ":t": when, ":rid": m.rid, ":h": q.horizon_jd, ":k": k as i64})?;
        while let Some(r) = rows.next()? {
            let n = memory_from_row(r)?;
            let nt = crate::time::parse(n.occurred_at.as_deref().unwrap_or(&n.captured_at));
            if nt.is_some_and(|x| (x - t).abs() <= window) {
                out.push(n);
            }
        }
    }
    Ok(out)
}
