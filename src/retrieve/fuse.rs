//! Fusion: reciprocal rank fusion (k = 60) of the relevance-bearing retrievers' rankings (full text,
//! vector, entity, context, dated), then the pool turned into candidates with their provenance: fused ones
//! best first, then the recency and hard-rule ones no ranking fused, in their own order.

use super::pool::{Pool, Ranking};
use super::vector::Word;
use super::{Basis, Candidate, Retriever};
use crate::store::Memory;
use crate::text::{self, FnvBuild};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

/// Every retriever's ranking of one pool.
#[derive(Debug, Default)]
pub struct Rankings {
    /// Full text (relevance-bearing).
    pub fts: Ranking,
    /// Vector (relevance-bearing).
    pub vector: Ranking,
    /// Entity (relevance-bearing): memories linked to a selective entity of the task.
    pub entity: Ranking,
    /// Full-text matches naming a common entity of the task: found by the entity retriever too, but
    /// not fused (the full-text ranking already holds their boost).
    pub named: Ranking,
    /// Context neighbours (relevance-bearing).
    pub context: Ranking,
    /// Bridges: placed in the full-text ranking right after their anchors ([`super::bridge::place`]),
    /// not fused again.
    pub bridge: Ranking,
    /// Memories recorded on a day or in a month the task names (relevance-bearing).
    pub dated: Ranking,
    /// Newest memories (no relevance).
    pub recency: Ranking,
    /// Hard rules (no relevance).
    pub constraints: Ranking,
    /// The user-embedding cosine of each vector hit (empty without `query_embedding`).
    pub cosine: HashMap<usize, f64>,
    /// True when the vector ranking comes from a user embedding.
    pub user_vector: bool,
}

impl Rankings {
    /// The ranking of one retriever.
    pub fn of(&self, r: Retriever) -> &Ranking {
        match r {
            Retriever::Fts => &self.fts,
            Retriever::Vector => &self.vector,
            Retriever::Entity => &self.entity,
            Retriever::Context => &self.context,
            Retriever::Bridge => &self.bridge,
            Retriever::Dated => &self.dated,
            Retriever::Recency => &self.recency,
            Retriever::Constraints => &self.constraints,
        }
    }

    /// The fused rankings, in the order of the fusion weights.
    fn fused(&self) -> [&[usize]; 5] {
        [&self.fts, &self.vector, &self.entity, &self.context, &self.dated]
    }

    /// What the fused relevance means: the user cosine when the vector ranking is the only one, a
    /// fused score when two or more rankings found something, else one ranking's rank.
    pub fn basis(&self) -> Basis {
        let active = self.fused().iter().filter(|r| !r.is_empty()).count();
        if self.user_vector && active == 1 && !self.vector.is_empty() {
            Basis::Cosine
        } else if active >= 2 {
            Basis::Rrf
        } else {
            Basis::Rank
        }
    }
}

/// One candidate's place in the output, before its memory is attached.
struct Slot {
    item: usize,
    relevance: Option<f64>,
    basis: Option<Basis>,
    rank: Option<usize>,
}

/// The output order: the fused rankings (by `weights`) best first, then recency and hard-rule entries
/// no ranking fused.
fn slots(pool: &Pool, r: &Rankings, weights: &[f64; 5]) -> Vec<Slot> {
    let basis = r.basis();
    let fused = rrf_weighted(&r.fused(), weights, |i| pool.id(i));
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(fused.len());
    for f in fused {
        seen.insert(f.item);
        let relevance =
            if basis == Basis::Cosine { r.cosine.get(&f.item).copied().map(round6) } else { Some(f.relevance) };
        out.push(Slot { item: f.item, relevance, basis: Some(basis), rank: Some(f.rank) });
    }
    for &i in r.recency.iter().chain(&r.constraints) {
        if seen.insert(i) {
            out.push(Slot { item: i, relevance: None, basis: None, rank: None });
        }
    }
    out
}

/// The stemmed `terms` present in memory `i`, sorted.
fn matched_terms(pool: &mut Pool, i: usize, terms: &HashSet<&str, FnvBuild>) -> Vec<String> {
    if terms.is_empty() {
        return Vec::new();
    }
    let (analysed, total, content) = pool.text_of(i);
    terms_in(analysed, total, content, terms)
}

/// The stemmed `terms` a text holds, sorted: those among its analysed words (`analysed`, the first
/// [`super::pool::ANALYSED_WORDS`] of its `total` words), then, for a longer text, the rest
/// ([`later_terms`]).
fn terms_in(analysed: &[Rc<Word>], total: usize, content: &str, terms: &HashSet<&str, FnvBuild>) -> Vec<String> {
    let mut m: Vec<String> =
        analysed.iter().filter(|w| terms.contains(w.stem.as_str())).map(|w| w.stem.clone()).collect();
    m.sort();
    m.dedup();
    if total > analysed.len() && m.len() < terms.len() {
        let rest: Vec<&str> =
            terms.iter().copied().filter(|t| m.binary_search_by(|x| x.as_str().cmp(t)).is_err()).collect();
        m.extend(later_terms(content, &rest, analysed.len()));
        m.sort();
        m.dedup();
    }
    m
}

/// Which of `terms` (stemmed task terms) a long text holds past its analysed words
/// ([`super::pool::ANALYSED_WORDS`]), found without analysing them: a pair of spaceless characters
/// as a substring where that is exact ([`text::is_substring_pair`]), the other terms among the later
/// words (a word outside ASCII is its own stem, so only ASCII words are stemmed).
fn later_terms(content: &str, terms: &[&str], analysed: usize) -> Vec<String> {
    let plain = text::is_plain(content);
    let pair = |t: &str| text::is_substring_pair(t, plain);
    let mut out: Vec<String> =
        terms.iter().filter(|t| pair(t) && content.contains(**t)).map(|t| t.to_string()).collect();
    let others: HashSet<&str, FnvBuild> = terms.iter().copied().filter(|t| !pair(t)).collect();
    if others.is_empty() {
        return out;
    }
    let mut k = 0;
    text::map_words(content, |w| {
        k += 1;
        if k <= analysed {
            return;
        }
        if !w.is_ascii() {
            if others.contains(w) {
                out.push(w.to_string());
            }
            return;
        }
        let s = text::stem(w);
        if others.contains(s.as_str()) {
            out.push(s);
        }
    });
    out
}

/// Fuses `r` (relevance-bearing rankings weighted by `weights`) into the candidates of the pool, with
/// the retrievers that found each and the stemmed task `terms` each contains.
pub fn candidates(mut pool: Pool, r: &Rankings, terms: &[String], weights: &[f64; 5]) -> Vec<Candidate> {
    let order = slots(&pool, r, weights);
    let term_set: HashSet<&str, FnvBuild> = terms.iter().map(String::as_str).collect();
    let matched: Vec<Vec<String>> = order.iter().map(|s| matched_terms(&mut pool, s.item, &term_set)).collect();
    let n = pool.len();
    let found: Vec<(Retriever, Vec<bool>)> = Retriever::ALL
        .iter()
        .map(|&k| {
            let mut set = vec![false; n];
            let named = if k == Retriever::Entity { &r.named[..] } else { &[] };
            r.of(k).iter().chain(named).for_each(|&i| set[i] = true);
            (k, set)
        })
        .collect();
    let has = |k: Retriever, i: usize| found.iter().any(|(x, set)| *x == k && set[i]);
    let mut mems: Vec<Option<Memory>> = pool.into_memories().into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(order.len());
    for (s, matched_terms) in order.into_iter().zip(matched) {
        let Some(mem) = mems[s.item].take() else { continue };
        let retrievers = found.iter().filter(|(_, set)| set[s.item]).map(|(k, _)| *k).collect();
        let i = s.item;
        let entity_only =
            has(Retriever::Entity, i) && !has(Retriever::Fts, i) && !(r.user_vector && has(Retriever::Vector, i));
        out.push(Candidate {
            mem,
            relevance: s.relevance,
            basis: s.basis,
            retrievers,
            matched_terms,
            fused_rank: s.rank,
            entity_only,
        });
    }
    out
}

/// RRF constant: the classic 60. A larger one (flatter fusion) gained on LoCoMo at 2000 tokens and
/// lost on realtalk-dev at 1000, a smaller one lost on both (BENCHMARKS.md, "Tried in session 22").
pub const RRF_K: f64 = 60.0;

/// One fused entry: the index of the item in the caller's pool, its fused score normalised to
/// [0, 1] and its 1-based fused rank.
#[derive(Debug, Clone, PartialEq)]
pub struct Fused {
    /// Pool index.
    pub item: usize,
    /// Σ 1/(k + rank) over rankings, rescaled to [0, 1] over the fused list (best 1, weakest 0).
    pub relevance: f64,
    /// 1-based position in the fused order.
    pub rank: usize,
}

/// Fuses rankings (each a list of pool indexes, best first). `tiebreak` orders equal scores.
pub fn rrf<K: Ord>(rankings: &[&[usize]], tiebreak: impl Fn(usize) -> K) -> Vec<Fused> {
    let weights = vec![1.0; rankings.len()];
    rrf_weighted(rankings, &weights, tiebreak)
}

/// [`rrf`] with a weight per ranking: Σ weight/(k + rank), k = [`RRF_K`] (or, in a build with the
/// `eval-knobs` feature, `CMP_RRF_K` from the environment).
pub fn rrf_weighted<K: Ord>(rankings: &[&[usize]], weights: &[f64], tiebreak: impl Fn(usize) -> K) -> Vec<Fused> {
    let active: f64 = rankings.iter().zip(weights).filter(|(r, _)| !r.is_empty()).map(|(_, w)| *w).sum();
    if active == 0.0 {
        return Vec::new();
    }
    let rrf_k = super::knob("CMP_RRF_K", RRF_K);
    // Items are small pool indexes: a score per index, and the items in the order first seen.
    let size = rankings.iter().flat_map(|r| r.iter()).max().map_or(0, |m| m + 1);
    let mut score: Vec<Option<f64>> = vec![None; size];
    let mut order: Vec<usize> = Vec::new();
    for (ranking, w) in rankings.iter().zip(weights) {
        for (pos, &item) in ranking.iter().enumerate() {
            let s = score[item].get_or_insert_with(|| {
                order.push(item);
                0.0
            });
            *s += w / (rrf_k + pos as f64 + 1.0);
        }
    }
    let mut v: Vec<(usize, f64)> = order.into_iter().map(|i| (i, score[i].unwrap_or_default())).collect();
    let best = active / (rrf_k + 1.0);
    v.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| tiebreak(a.0).cmp(&tiebreak(b.0))));
    // Relevance is the fused score rescaled over this candidate list (best 1, weakest 0): RRF scores
    // are flat (rank 1 and rank 100 differ by less than 3x), and the packer weighs relevance against
    // tokens, so an unscaled score would let short, barely matching memories crowd out strong ones.
    let top = v.first().map_or(best, |x| x.1);
    let low = v.last().map_or(0.0, |x| x.1);
    v.into_iter()
        .enumerate()
        .map(|(i, (item, s))| {
            let r = if top > low { (s - low) / (top - low) } else { 1.0 };
            Fused { item, relevance: round6(r.clamp(0.0, 1.0)), rank: i + 1 }
        })
        .collect()
}

/// Rounds to 6 decimal places (stable JSON output).
pub fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retrieve::testdb::{add, open, query};

    fn pool_of(n: usize) -> Pool {
        let conn = open();
        for i in 0..n {
            add(&conn, &format!("mem_{i}"), &format!("word{i} shared"), "2026-05-01T00:00:00Z", "semantic", "[]");
        }
        let mut q = query("");
        q.recency_limit = n;
        let mut pool = Pool::default();
        let mut rows = crate::store::memories::newest(&conn, q.reader(), n, false).expect("rows");
        rows.sort_by_key(|m| m.rid);
        for m in rows {
            pool.add(m);
        }
        pool
    }

    #[test]
    fn basis_follows_the_rankings_that_found_something() {
        let mut r = Rankings { fts: vec![0], ..Rankings::default() };
        assert_eq!(r.basis(), Basis::Rank);
        r.context = vec![1];
        assert_eq!(r.basis(), Basis::Rrf);
        let v = Rankings { vector: vec![0], user_vector: true, ..Rankings::default() };
        assert_eq!(v.basis(), Basis::Cosine);
        let v = Rankings { vector: vec![0], ..Rankings::default() };
        assert_eq!(v.basis(), Basis::Rank);
    }

    #[test]
    fn candidates_fused_first_then_unfused_recency_and_rules() {
        let pool = pool_of(4);
        let r = Rankings {
            fts: vec![1],
            entity: vec![2, 1],
            recency: vec![3, 1],
            constraints: vec![0],
            ..Rankings::default()
        };
        let c = candidates(pool, &r, &["word1".to_string()], &[2.0, 0.5, 1.0, 0.5, 4.0]);
        let ids: Vec<&str> = c.iter().map(|c| c.mem.id.as_str()).collect();
        assert_eq!(ids, ["mem_1", "mem_2", "mem_3", "mem_0"]);
        assert_eq!(c[0].retrievers, [Retriever::Fts, Retriever::Entity, Retriever::Recency]);
        assert_eq!(c[0].matched_terms, ["word1"]);
        assert_eq!((c[0].basis, c[0].fused_rank, c[0].relevance), (Some(Basis::Rrf), Some(1), Some(1.0)));
        assert!(c[1].entity_only && !c[0].entity_only);
        assert_eq!((c[3].basis, c[3].fused_rank, c[3].relevance), (None, None, None));
        assert_eq!(c[3].retrievers, [Retriever::Constraints]);
    }

    /// Pieces of text in every script the tokenizer treats apart: English words (capitals,
    /// inflections), Han, kana with a combining voicing mark, Hangul, Thai with vowel signs, Latin
    /// with a diacritic, digits, punctuation.
    const PIECES: [&str; 22] = [
        "Atlas ",
        "launches ",
        "running ",
        "the ",
        "北京",
        "出差",
        "。",
        "好",
        " ",
        "กิน",
        "ข้าว",
        "か\u{3099}き",
        "が",
        "카페",
        "é",
        "Café ",
        "61",
        "岁",
        "Python",
        ",",
        "ー",
        "・",
    ];

    proptest::proptest! {
        /// The terms found through the analysed words and then [`later_terms`] are exactly the
        /// terms among the stems of all the text's words, wherever the analysed part ends.
        #[test]
        fn terms_in_is_every_term_the_text_holds(
            parts in proptest::collection::vec(proptest::sample::select(&PIECES[..]), 0..80),
            extra in proptest::collection::vec(proptest::sample::select(&PIECES[..]), 0..6),
            cut in 0usize..60,
            every in 1usize..5,
        ) {
            let content = parts.concat();
            let all: Vec<Rc<Word>> = text::words(&content).iter().map(|w| Word::cached(w)).collect();
            let mut wanted: Vec<String> = all.iter().step_by(every).map(|w| w.stem.clone()).collect();
            wanted.extend(extra.iter().flat_map(|e| text::words(e)).map(|w| text::stem(&w)));
            let terms: HashSet<&str, FnvBuild> = wanted.iter().map(String::as_str).collect();
            let mut naive: Vec<String> =
                all.iter().map(|w| w.stem.clone()).filter(|s| terms.contains(s.as_str())).collect();
            naive.sort();
            naive.dedup();
            let cut = cut.min(all.len());
            proptest::prop_assert_eq!(terms_in(&all[..cut], all.len(), &content, &terms), naive, "{:?}", content);
        }
    }

    #[test]
    fn agreement_wins() {
        let a = [0usize, 1, 2];
        let b = [1usize, 0];
        let f = rrf(&[&a, &b], |i| i);
        assert_eq!(f[0].item, 0); // tie on score, lower index first
        assert_eq!(f[0].relevance, f[1].relevance);
        assert_eq!(f[2].item, 2);
        assert!(f[2].relevance < 0.5);
        let solo = rrf(&[&a], |i| i);
        assert_eq!(solo[0].relevance, 1.0);
    }
}
