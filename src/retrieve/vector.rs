//! Cosine similarity retrieval. With `options.query_embedding`, a brute-force scan over the scope's
//! `embedding` blobs (float32 little-endian, sqlite-vec's layout). Without one, a built-in
//! deterministic hashing embedder (stemmed words plus character trigrams, signed feature hashing)
//! ranks the candidate pool the other retrievers found, so hybrid retrieval works with no model.

use super::pool::{Pool, Ranking};
use super::{Query, VECTOR_LIMIT};
use crate::error::{Error, Result};
use crate::store::memories::{by_rids, each_embedding};
use crate::text;
use rusqlite::Connection;
use std::collections::HashMap;

/// What the vector retriever found.
#[derive(Debug, Default)]
pub struct Vectors {
    /// Best first.
    pub ranking: Ranking,
    /// The user-embedding cosine of each hit, in [0, 1] (empty without `query_embedding`).
    pub cosine: HashMap<usize, f64>,
    /// Memories whose embedding had another dimension than `query_embedding`.
    pub skipped: usize,
}

/// The vector ranking: with `query_embedding`, the nearest stored embeddings (pooled); without one,
/// the pool ranked by the hashing embedder's cosine to `task` (the task's hashing embedding).
pub fn rank(conn: &Connection, q: &Query<'_>, task: &[f32], pool: &mut Pool) -> Result<Vectors> {
    match q.query_embedding {
        Some(qe) => user_ranking(conn, q, qe, pool),
        None => Ok(Vectors { ranking: hashed_ranking(task, pool), ..Vectors::default() }),
    }
}

/// The pool ranked by hashing-embedder cosine to `task`, best first; memories with none left out.
pub fn hashed_ranking(task: &[f32], pool: &mut Pool) -> Ranking {
    let mut scored: Vec<(f32, usize)> =
        (0..pool.len()).map(|i| (pool.cosine(i, task), i)).filter(|s| s.0 > 0.0).collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| pool.id(a.1).cmp(pool.id(b.1))));
    scored.into_iter().map(|s| s.1).collect()
}

/// The [`VECTOR_LIMIT`] memories nearest to the user embedding `qe`, pooled.
fn user_ranking(conn: &Connection, q: &Query<'_>, qe: &[f32], pool: &mut Pool) -> Result<Vectors> {
    let scan = scan(conn, q, qe, VECTOR_LIMIT)?;
    let missing: Vec<i64> = scan.hits.iter().map(|h| h.0).filter(|r| pool.index_of(*r).is_none()).collect();
    if !missing.is_empty() {
        for m in by_rids(conn, &missing)? {
            pool.add(m);
        }
    }
    let mut out = Vectors { skipped: scan.skipped, ..Vectors::default() };
    for (rid, cos) in scan.hits {
        if let Some(i) = pool.index_of(rid) {
            out.ranking.push(i);
            out.cosine.insert(i, f64::from(cos).clamp(0.0, 1.0));
        }
    }
    Ok(out)
}

/// Dimensions of the hashing embedder.
pub const HASH_DIMS: usize = 256;
/// Weight of a character trigram relative to a whole (stemmed) word.
const TRIGRAM_WEIGHT: f32 = 0.25;

/// The hashing embedding of a text: L2-normalised, all zeros for a text without words.
pub fn hash_embed(s: &str) -> Vec<f32> {
    let words: Vec<std::rc::Rc<Word>> = text::map_words(s, Word::cached);
    embed_words(&words)
}

/// One analysed word: its stem (what `matched_terms` reports) and the hashing embedder's features
/// of it, (dimension, signed weight) in the order the embedding adds them (none for a stopword).
#[derive(Debug, PartialEq)]
pub struct Word {
    /// Porter stem of the word.
    pub stem: String,
    /// Features added to the embedding for each occurrence of the word.
    pub features: Vec<(u16, f32)>,
}

/// Most words whose analysis a thread keeps; the cache starts over when it is full.
const WORD_CACHE: usize = 1 << 16;

thread_local! {
    /// Words already analysed on this thread (a word's analysis never changes).
    static WORDS: std::cell::RefCell<HashMap<String, std::rc::Rc<Word>, text::FnvBuild>> = Default::default();
}

impl Word {
    /// The analysis of one lowercase word (from [`text::words`]).
    pub fn of(word: &str) -> Word {
        let stem = text::stem(word);
        let mut features = Vec::new();
        // A pair of a spaceless script that holds a function character (的, 是, の…) is a stopword too.
        if !(text::is_stopword(word) || (text::has_spaceless(word) && text::is_stop_pair(word))) {
            let mut add = |feature: &[u8], w: f32| {
                let h = text::fnv1a(feature);
                let idx = (h % HASH_DIMS as u64) as u16;
                let sign = if (h >> 63) == 0 { 1.0 } else { -1.0 };
                features.push((idx, sign * w));
            };
            add(stem.as_bytes(), 1.0);
            // Byte trigrams of " word ": the same features for the same text on every platform.
            let mut padded = Vec::with_capacity(word.len() + 2);
            padded.push(b' ');
            padded.extend_from_slice(word.as_bytes());
            padded.push(b' ');
            for t in padded.windows(3) {
                add(t, TRIGRAM_WEIGHT);
            }
        }
        Word { stem, features }
    }

    /// [`Word::of`], computed once per thread.
    pub fn cached(word: &str) -> std::rc::Rc<Word> {
        WORDS.with(|c| text::memo(&mut c.borrow_mut(), word, WORD_CACHE, || std::rc::Rc::new(Word::of(word))))
    }
}

/// The hashing embedding of a text's analysed words, in order.
pub fn embed_words(words: &[std::rc::Rc<Word>]) -> Vec<f32> {
    let mut v = vec![0f32; HASH_DIMS];
    for w in words {
        for &(idx, x) in &w.features {
            v[idx as usize] += x;
        }
    }
    normalise(&mut v);
    v
}

fn normalise(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
}

/// Cosine similarity (0 when either vector is zero).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let (mut dot, mut na, mut nb) = (0f32, 0f32, 0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

/// Decodes a float32 LE blob; None when its length is not a multiple of 4.
pub fn decode(blob: &[u8]) -> Option<Vec<f32>> {
    if blob.len() % 4 != 0 || blob.is_empty() {
        return None;
    }
    Some(blob.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect())
}

/// Result of a scan over user embeddings.
#[derive(Debug, Default)]
pub struct Scan {
    /// (rid, cosine), best first, at most the requested limit.
    pub hits: Vec<(i64, f32)>,
    /// Rows whose embedding has another dimension than the query (skipped).
    pub skipped: usize,
}

/// Brute-force cosine over every eligible, visible memory with an embedding. A query whose dimension
/// matches no stored embedding is an error naming both dimensions.
pub fn scan(conn: &Connection, q: &Query<'_>, query: &[f32], limit: usize) -> Result<Scan> {
    let (mut hits, mut skipped, mut other_dim) = (Vec::new(), 0usize, None);
    let qn = query.iter().map(|x| x * x).sum::<f32>().sqrt();
    let each = |rid: i64, blob: Option<&[u8]>| match blob {
        Some(b) if b.len() == query.len() * 4 => hits.push((rid, cosine_le(query, qn, b))),
        Some(b) => {
            skipped += 1;
            // The length of a stored embedding of another dimension; a malformed one (not whole
            // float32 values) only when there is no other.
            if other_dim.is_none_or(|n: usize| n % 4 != 0) {
                other_dim = Some(b.len());
            }
        }
        None => skipped += 1,
    };
    each_embedding(conn, q.reader(), each)?;
    if hits.is_empty() {
        if let Some(bytes) = other_dim {
            let msg = if bytes % 4 == 0 {
                format!("has {} dimensions but stored embeddings have {}", query.len(), bytes / 4)
            } else {
                format!(
                    "has {} dimensions but the stored embeddings are {bytes}-byte blobs, not float32 arrays",
                    query.len()
                )
            };
            return Err(Error::invalid("query_embedding", msg));
        }
    }
    hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    hits.truncate(limit);
    Ok(Scan { hits, skipped })
}

/// Cosine of `query` (whose norm is `qn`) to a float32 LE blob of the same dimension; 0 when either
/// is zero or the result is not finite.
fn cosine_le(query: &[f32], qn: f32, blob: &[u8]) -> f32 {
    let (mut dot, mut nb) = (0f32, 0f32);
    for (c, x) in blob.chunks_exact(4).zip(query) {
        let y = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        dot += x * y;
        nb += y * y;
    }
    let cos = if qn == 0.0 || nb == 0.0 || !dot.is_finite() { 0.0 } else { dot / (qn * nb.sqrt()) };
    if cos.is_finite() {
        cos
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retrieve::testdb::{add, ids, open, query};

    fn blob(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn hashed_ranking_orders_the_pool_by_closeness() {
        let conn = open();
        add(&conn, "mem_1", "grocery list", "2026-05-01T00:00:00Z", "semantic", "[]");
        add(&conn, "mem_2", "atlas launch review", "2026-05-01T00:00:00Z", "semantic", "[]");
        let mut pool = Pool::default();
        let q = query("");
        for m in crate::store::memories::newest(&conn, q.reader(), 10, false).expect("rows") {
            pool.add(m);
        }
        let r = rank(&conn, &q, &hash_embed("the atlas launch"), &mut pool).expect("rank");
        assert_eq!(ids(&pool, &r.ranking), ["mem_2"], "no shared feature, no rank");
        assert!(r.cosine.is_empty());
    }

    #[test]
    fn user_embeddings_rank_by_cosine_and_report_other_dimensions() {
        let conn = open();
        add(&conn, "mem_x", "x", "2026-05-01T00:00:00Z", "semantic", "[]");
        add(&conn, "mem_y", "y", "2026-05-01T00:00:00Z", "semantic", "[]");
        add(&conn, "mem_z", "z", "2026-05-01T00:00:00Z", "semantic", "[]");
        for (id, v) in [("mem_x", vec![1.0f32, 0.0]), ("mem_y", vec![0.6, 0.8]), ("mem_z", vec![1.0, 0.0, 0.0])] {
            conn.execute("UPDATE main.cmp_memories SET embedding = ?1 WHERE id = ?2", rusqlite::params![blob(&v), id])
                .expect("embedding");
        }
        let qe = [0.0f32, 1.0];
        let mut q = query("");
        q.query_embedding = Some(&qe);
        let mut pool = Pool::default();
        let r = rank(&conn, &q, &[], &mut pool).expect("rank");
        assert_eq!(ids(&pool, &r.ranking), ["mem_y", "mem_x"]);
        assert_eq!(r.skipped, 1);
        assert!((r.cosine[&r.ranking[0]] - 0.8).abs() < 1e-6);
        let qe3 = [0.0f32; 5];
        q.query_embedding = Some(&qe3);
        let e = rank(&conn, &q, &[], &mut Pool::default()).expect_err("no stored embedding has 5 dimensions");
        assert_eq!(e.to_string(), "query_embedding has 5 dimensions but stored embeddings have 2");
        // A malformed blob is named as one, and only when no stored embedding is well formed.
        let solo = open();
        add(&solo, "mem_m", "m", "2026-05-01T00:00:00Z", "semantic", "[]");
        solo.execute("UPDATE main.cmp_memories SET embedding = x'01020304050607' WHERE id = 'mem_m'", [])
            .expect("blob");
        let e = rank(&solo, &q, &[], &mut Pool::default()).expect_err("only a malformed embedding");
        assert_eq!(
            e.to_string(),
            "query_embedding has 5 dimensions but the stored embeddings are 7-byte blobs, not float32 arrays"
        );
    }

    #[test]
    fn hashing_embedder_is_deterministic_and_graded() {
        let a = hash_embed("Atlas launch readiness review");
        assert_eq!(a, hash_embed("Atlas launch readiness review"));
        let near = cosine(&a, &hash_embed("the atlas launches"));
        let far = cosine(&a, &hash_embed("grocery list: milk, eggs"));
        assert!(near > far, "{near} <= {far}");
        assert_eq!(cosine(&a, &hash_embed("the of and")), 0.0);
        assert_eq!(decode(&[0, 0, 128, 63]), Some(vec![1.0]));
        assert_eq!(decode(&[1, 2, 3]), None);
    }
}
