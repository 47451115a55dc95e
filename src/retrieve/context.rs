//! Context retrieval: the memories recorded right around the strongest matches (full-text ones, and
//! with the caller's embedding its nearest ones, in turn: the composer chooses the anchors). A memory
//! rarely stands alone: the message before a match often asks the question it answers, the one after
//! often completes it. Fused as one more ranking, in the order of their anchors.

use super::pool::{Pool, Ranking};
use super::{Query, CONTEXT_ANCHORS, CONTEXT_NEIGHBOURS, CONTEXT_WINDOW_SECS};
use rusqlite::Connection;

/// The neighbours of the first [`CONTEXT_ANCHORS`] entries of the anchor ranking `fts`. The
/// anchors themselves get no vote here: they already matched, and in a conversation every strong
/// match is some other match's neighbour, so counting that would outvote the text.
pub fn rank(conn: &Connection, q: &Query<'_>, fts: &[usize], pool: &mut Pool) -> rusqlite::Result<Ranking> {
    let n_anchors = super::knob("CMP_CTX_ANCHORS", CONTEXT_ANCHORS as f64) as usize;
    let k = super::knob("CMP_CTX_N", CONTEXT_NEIGHBOURS as f64) as usize;
    let anchors: Vec<usize> = fts.iter().copied().take(n_anchors).collect();
    let mut ranking = Vec::new();
    for &a in &anchors {
        let m = pool.mems[a].clone();
        for n in crate::store::memories::around(conn, q.reader(), &m, k, CONTEXT_WINDOW_SECS)? {
            let i = pool.add(n);
            if !ranking.contains(&i) && !anchors.contains(&i) {
                ranking.push(i);
            }
        }
    }
    Ok(ranking)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retrieve::testdb::{add, ids, open, query};
    use crate::retrieve::{fts, Terms};

    #[test]
    fn neighbours_within_the_window_not_the_anchors() {
        let conn = open();
        add(&conn, "mem_far", "lunch", "2026-05-01T07:00:00Z", "semantic", "[]");
        add(&conn, "mem_before", "what day?", "2026-05-01T09:59:00Z", "semantic", "[]");
        add(&conn, "mem_anchor", "atlas ships friday", "2026-05-01T10:00:00Z", "semantic", "[]");
        add(&conn, "mem_after", "great, thanks", "2026-05-01T10:01:00Z", "semantic", "[]");
        add(&conn, "mem_other", "atlas is late", "2026-05-01T10:02:00Z", "semantic", "[]");
        let q = query("atlas");
        let mut pool = Pool::default();
        let lex = fts::rank(&conn, &q, &Terms::of(q.task), &mut pool).expect("fts");
        let ranking = rank(&conn, &q, &lex.ranking, &mut pool).expect("context");
        let got = ids(&pool, &ranking);
        assert!(got.contains(&"mem_before".to_string()) && got.contains(&"mem_after".to_string()), "{got:?}");
        assert!(!got.contains(&"mem_far".to_string()), "outside the hour: {got:?}");
        assert!(!got.contains(&"mem_anchor".to_string()) && !got.contains(&"mem_other".to_string()), "{got:?}");
        assert!(rank(&conn, &q, &[], &mut pool).expect("no anchors").is_empty());
    }
}
