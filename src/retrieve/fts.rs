//! BM25 over the FTS5 index. Task text never reaches FTS5's query parser as syntax: it is cut into
//! alphanumeric words and each word becomes a quoted string, joined with OR, so quotes, `AND`,
//! `NEAR`, `*`, parentheses, colons and column filters in a task are plain words.
//!
//! Text in scripts written without spaces is searched in the character-pair index
//! (`cmp_memories_ngram`) with the task's character pairs, quoted the same way.

use super::Query;
use crate::store::{memory_from_row, Memory, MEMORY_COLS};
use rusqlite::{named_params, Connection};

/// The safe FTS5 query for a task's terms, or None when there is nothing to search for.
pub fn match_expr(terms: &[String]) -> Option<String> {
    if terms.is_empty() {
        return None;
    }
    // Terms are alphanumeric words (text::words) or pairs of letters and digits (text::gram_terms),
    // so they hold no `"`; quoting makes every one a literal string to FTS5.
    Some(terms.iter().map(|t| format!("\"{t}\"")).collect::<Vec<_>>().join(" OR "))
}

/// The SQL of the BM25 top-k query (also the benchmark floor) over rows meeting `eligible`.
pub fn sql(eligible: &str) -> String {
    format!(
        "SELECT {MEMORY_COLS}, bm25(cmp_memories_fts) AS score
         FROM cmp_memories_fts JOIN cmp_memories AS m ON m.rid = cmp_memories_fts.rowid
         WHERE cmp_memories_fts MATCH :q AND {eligible}
         ORDER BY score, m.rid LIMIT :n"
    )
}

/// The SQL of the BM25 top-k query over the character-pair index.
pub fn ngram_sql(eligible: &str) -> String {
    format!(
        "SELECT {MEMORY_COLS}, bm25(cmp_memories_ngram) AS score
         FROM cmp_memories_ngram JOIN cmp_memories AS m ON m.rid = cmp_memories_ngram.rowid
         WHERE cmp_memories_ngram MATCH :q AND {eligible}
         ORDER BY score, m.rid LIMIT :n"
    )
}

/// Top `limit` memories by BM25 over the character-pair index (best first), visible or not yet
/// visible.
pub fn ngram_search(conn: &Connection, q: &Query<'_>, expr: &str, limit: usize) -> rusqlite::Result<Vec<Memory>> {
    let mut st = conn.prepare_cached(&ngram_sql(q.eligible()))?;
    let rows = st.query_map(
        named_params! {":q": expr, ":scope": q.scope, ":h": q.horizon_jd, ":n": limit as i64},
        memory_from_row,
    )?;
    rows.collect()
}

/// Rows FTS5 ranks first that are read beyond `limit`, before the eligibility filter.
const OVERFETCH: usize = 56;
/// Past this many ranked rows the fast path gives up and runs [`sql`] (one join over every match).
const FAST_PATH_MAX: usize = 8192;

/// Top `limit` memories by BM25 (best first, ties by rid), visible or not yet visible (the caller
/// splits them): exactly the rows of [`sql`], found without joining every match.
///
/// The matches are ranked on the index alone (`ORDER BY rank, rowid LIMIT m`: BM25, then rowid, the
/// same total order as [`sql`]); only those `m` rows are read from `cmp_memories` and filtered by
/// eligibility, in the same statement. The first `limit` eligible rows of that prefix are the answer
/// when there are `limit` of them, or when the prefix holds every match. Otherwise `m` grows, and
/// past [`FAST_PATH_MAX`] the join query answers.
pub fn search(conn: &Connection, q: &Query<'_>, expr: &str, limit: usize) -> rusqlite::Result<Vec<Memory>> {
    let mut m = limit + OVERFETCH;
    while m <= FAST_PATH_MAX {
        let _t = crate::timing::phase("fts: ranked rows, eligibility");
        let mut st = conn.prepare_cached(&format!(
            "SELECT f.rowid, m.rid IS NOT NULL, {MEMORY_COLS}
             FROM (SELECT rowid, rank FROM cmp_memories_fts WHERE cmp_memories_fts MATCH :q
                   ORDER BY rank, rowid LIMIT :m) AS f
             LEFT JOIN cmp_memories AS m ON m.rid = f.rowid AND {}
             ORDER BY f.rank, f.rowid",
            q.eligible()
        ))?;
        let mut rows = st.query(named_params! {":q": expr, ":m": m as i64, ":scope": q.scope, ":h": q.horizon_jd})?;
        let mut n = 0usize;
        let mut found: Vec<Memory> = Vec::new();
        while let Some(r) = rows.next()? {
            n += 1;
            if r.get::<_, bool>(1)? && found.len() < limit {
                found.push(crate::store::memory_from_row_at(r, 2)?);
            }
        }
        if n < m || found.len() >= limit {
            return Ok(found);
        }
        m *= 4;
    }
    let _t = crate::timing::phase("fts: join query (fallback)");
    let mut st = conn.prepare_cached(&sql(q.eligible()))?;
    let rows = st.query_map(
        named_params! {":q": expr, ":scope": q.scope, ":h": q.horizon_jd, ":n": limit as i64},
        memory_from_row,
    )?;
    rows.collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(match_expr(&[]), None);
        assert_eq!(match_expr(&["a".into(), "near".into()]).unwrap(), "\"a\" OR \"near\"");
    }
}
