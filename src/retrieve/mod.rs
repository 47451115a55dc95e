//! Hybrid retrieval: one module per retriever, fused by reciprocal rank fusion (k = 60).
//!
//! Every retriever reads through the same eligibility rule ([`ELIGIBLE`]): one scope, never a
//! redacted row, never a row superseded at the horizon (`as_of`, else `now`). Rows captured after the
//! horizon are not yet visible ([`VISIBLE`]); lexical matches among them are counted as `pending`.

pub mod entity;
pub mod fts;
pub mod fuse;
pub mod recency;
pub mod vector;

use crate::error::Result;
use crate::store::{memory_from_row, Memory, MEMORY_COLS};
use crate::text;
use crate::time::{self, Epoch};
use rusqlite::Connection;
use std::collections::{HashMap, HashSet};

/// SQL condition (table alias `m`, parameters `:scope`, `:h` = horizon as a Julian day) for a row
/// that may be read: in scope, not redacted, not superseded at the horizon.
/// A `superseded_by` that names no row (a dangling id) does not hide the row.
pub const ELIGIBLE: &str = "m.scope = :scope AND (m.redacted = 0 OR m.redacted IS NULL) \
     AND (m.superseded_by IS NULL OR coalesce(julianday(m.superseded_at) > :h, 0) \
          OR NOT EXISTS (SELECT 1 FROM cmp_memories AS s WHERE s.id = m.superseded_by))";
/// [`ELIGIBLE`] without the supersession test (MQL with `valid_only: false` narrows afterwards). It
/// names `:h` too, so both conditions bind the same parameters.
pub const ELIGIBLE_ANY_VERSION: &str = "m.scope = :scope AND (m.redacted = 0 OR m.redacted IS NULL) AND :h IS NOT NULL";

/// True when `m` is superseded at `horizon` (an unparseable superseded_at counts as superseded).
pub fn superseded_at(m: &Memory, horizon: Epoch) -> bool {
    m.superseded_by.is_some() && m.superseded_at.as_deref().and_then(time::parse).is_none_or(|t| t <= horizon)
}
/// SQL condition for a row already captured at the horizon (unparseable timestamps count as visible).
pub const VISIBLE: &str = "coalesce(julianday(m.captured_at) <= :h, 1)";

/// Most task terms sent to FTS5.
pub const MAX_TERMS: usize = 32;
/// Most character pairs a task sends to the character-pair index.
pub const MAX_GRAMS: usize = 64;
/// BM25 candidates read (the benchmark floor reads the same).
pub const FTS_LIMIT: usize = 200;
/// User-embedding candidates kept.
pub const VECTOR_LIMIT: usize = 200;
/// Newest memories offered by the recency retriever.
pub const RECENCY_LIMIT: usize = 10;

/// Strongest full-text matches whose neighbours in time are offered as context.
pub const CONTEXT_ANCHORS: usize = 8;
/// Neighbours taken on each side of an anchor.
pub const CONTEXT_NEIGHBOURS: usize = 2;
/// Neighbours further apart than this (seconds) are not context.
pub const CONTEXT_WINDOW_SECS: f64 = 3600.0;

/// Hard rules offered to every pack.
pub const RULES_LIMIT: usize = 20;

/// The retrievers, in the order `why.retrievers` lists them.
pub const RETRIEVERS: [&str; 6] = ["fts", "vector", "entity", "context", "recency", "constraints"];

/// Weights of the fused rankings in reciprocal rank fusion, in the order fts, vector, entity,
/// context. A word of the task found in a memory is the strongest evidence there is; the built-in
/// hashing embedder only re-ranks what was found, so it counts half. Measured on LoCoMo and
/// realtalk-dev alike (BENCHMARKS.md, "Fusion weights"): with equal weights a memory that matches a
/// rare word of the task lost to its neighbours, which collect votes from every other ranking.
pub const FUSION_WEIGHTS: [f64; 4] = [2.0, 0.5, 1.0, 0.5];

/// The fusion weights in force: [`FUSION_WEIGHTS`], or, in a build with the `eval-knobs` feature
/// (evaluation only), `CMP_W_FTS`, `CMP_W_VEC`, `CMP_W_ENT`, `CMP_W_CTX` from the environment.
fn fusion_weights() -> [f64; 4] {
    #[cfg(feature = "eval-knobs")]
    {
        let w = |k: &str, d: f64| std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d);
        let d = FUSION_WEIGHTS;
        [w("CMP_W_FTS", d[0]), w("CMP_W_VEC", d[1]), w("CMP_W_ENT", d[2]), w("CMP_W_CTX", d[3])]
    }
    #[cfg(not(feature = "eval-knobs"))]
    FUSION_WEIGHTS
}

/// What to retrieve.
#[derive(Debug, Clone)]
pub struct Query<'a> {
    /// Task text (any string).
    pub task: &'a str,
    /// Owner namespace.
    pub scope: &'a str,
    /// Read point (as_of, else now).
    pub horizon: Epoch,
    /// The horizon as a Julian day, for SQL.
    pub horizon_jd: f64,
    /// User query embedding, if any.
    pub query_embedding: Option<&'a [f32]>,
    /// How many recency candidates to offer.
    pub recency_limit: usize,
    /// How many hard rules (kind `negative`) to offer whether or not they match.
    pub rules_limit: usize,
    /// Also return rows superseded at the horizon (MQL `valid_only: false`).
    pub include_superseded: bool,
}

impl<'a> Query<'a> {
    /// The eligibility condition this query reads through.
    pub fn eligible(&self) -> &'static str {
        if self.include_superseded {
            ELIGIBLE_ANY_VERSION
        } else {
            ELIGIBLE
        }
    }

    /// A query at `horizon`. The newest memories are offered (with no score) only to a task that asks
    /// about what is recent ([`asks_for_recent`]) or is empty: for any other task an unmatched memory
    /// is a guess, and it would take budget from memories that match.
    pub fn new(task: &'a str, scope: &'a str, horizon: Epoch) -> Self {
        Query {
            task,
            scope,
            horizon,
            horizon_jd: time::julian(horizon),
            query_embedding: None,
            recency_limit: if asks_for_recent(task) { RECENCY_LIMIT } else { 0 },
            rules_limit: RULES_LIMIT,
            include_superseded: false,
        }
    }
}

/// Words that make a task about what is recent.
const RECENT_CUES: &[&str] = &[
    "recent",
    "recently",
    "latest",
    "lately",
    "newest",
    "new",
    "news",
    "today",
    "yesterday",
    "tonight",
    "week",
    "month",
    "current",
    "currently",
    "now",
    "update",
    "updates",
    "happened",
    "happening",
    "status",
    "since",
];

/// True for an empty task or one that asks about what is recent ("what happened this week?").
pub fn asks_for_recent(task: &str) -> bool {
    let words = text::words(task);
    words.is_empty() || words.iter().any(|w| RECENT_CUES.contains(&w.as_str()))
}

/// One retrieved memory with its provenance.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The row.
    pub mem: Memory,
    /// Match strength in [0, 1], or None (recency-only).
    pub relevance: Option<f64>,
    /// `rrf`, `rank`, `cosine`, or None.
    pub basis: Option<&'static str>,
    /// Retrievers that found it, in [`RETRIEVERS`] order.
    pub retrievers: Vec<&'static str>,
    /// Stemmed task terms found in the memory.
    pub matched_terms: Vec<String>,
    /// 1-based fused rank, None for recency-only.
    pub fused_rank: Option<usize>,
    /// Admitted only through an entity named in the task.
    pub entity_only: bool,
}

/// Retrieval output.
#[derive(Debug, Clone, Default)]
pub struct Retrieval {
    /// Fused candidates, best first; recency-only candidates last, newest first.
    pub candidates: Vec<Candidate>,
    /// Lexical matches captured after the horizon.
    pub pending: usize,
    /// Entity names recognised in the task.
    pub entities: Vec<String>,
    /// Stemmed task terms.
    pub terms: Vec<String>,
    /// Memories whose embedding had another dimension than `query_embedding`.
    pub skipped_embeddings: usize,
}

struct Pool {
    mems: Vec<Memory>,
    by_rid: HashMap<i64, usize>,
    /// (stem, word) pairs of each memory's content, computed once per call.
    analysed: Vec<Option<Vec<(String, String)>>>,
    /// Hashing-embedder cosine to the task, computed once per call.
    cos: Vec<Option<f32>>,
    stems: HashMap<String, String>,
}

impl Pool {
    fn add(&mut self, m: Memory) -> usize {
        if let Some(&i) = self.by_rid.get(&m.rid) {
            return i;
        }
        self.by_rid.insert(m.rid, self.mems.len());
        self.mems.push(m);
        self.analysed.push(None);
        self.cos.push(None);
        self.mems.len() - 1
    }

    fn analysed(&mut self, i: usize) -> &[(String, String)] {
        if self.analysed[i].is_none() {
            let mut v = Vec::new();
            for w in text::words(&self.mems[i].content) {
                let st = self.stems.entry(w.clone()).or_insert_with(|| text::stem(&w)).clone();
                v.push((st, w));
            }
            self.analysed[i] = Some(v);
        }
        self.analysed[i].as_deref().unwrap_or(&[])
    }

    fn cosine(&mut self, i: usize, task: &[f32]) -> f32 {
        if let Some(c) = self.cos[i] {
            return c;
        }
        let c = vector::cosine(task, &vector::embed_analysed(self.analysed(i)));
        self.cos[i] = Some(c);
        c
    }
}

fn visible(m: &Memory, horizon: Epoch) -> bool {
    time::parse(&m.captured_at).is_none_or(|t| t <= horizon)
}

fn recency_key(m: &Memory) -> &str {
    m.occurred_at.as_deref().unwrap_or(&m.captured_at)
}

/// Runs every retriever and fuses their rankings.
pub fn retrieve(conn: &Connection, q: &Query<'_>) -> Result<Retrieval> {
    let words = text::query_terms(q.task, MAX_TERMS);
    let grams = text::task_gram_terms(q.task, MAX_GRAMS);
    let terms: Vec<String> = {
        let mut t: Vec<String> = Vec::new();
        for w in &words {
            let s = text::stem(w);
            if !t.contains(&s) {
                t.push(s);
            }
        }
        // Pairs of spaceless scripts are terms as they are (never stemmed).
        for w in text::spaceless_terms(q.task, MAX_TERMS) {
            if !t.contains(&w) {
                t.push(w);
            }
        }
        t
    };
    let mut pool =
        Pool { mems: Vec::new(), by_rid: HashMap::new(), analysed: Vec::new(), cos: Vec::new(), stems: HashMap::new() };
    let mut out = Retrieval { terms: terms.clone(), ..Default::default() };

    // fts: the word index, and the character-pair index for text in scripts written without
    // spaces; when both find something for a task in such a script, their rankings are fused.
    let lexical = |found: Vec<Memory>, pool: &mut Pool, out: &mut Retrieval| {
        let mut rank = Vec::new();
        for m in found {
            if visible(&m, q.horizon) {
                rank.push(pool.add(m));
            } else if !pool.by_rid.contains_key(&m.rid) {
                out.pending += 1;
            }
        }
        rank
    };
    let word_rank = match fts::match_expr(&words) {
        Some(expr) => lexical(fts::search(conn, q, &expr, FTS_LIMIT)?, &mut pool, &mut out),
        None => Vec::new(),
    };
    let gram_rank = match fts::match_expr(&grams) {
        Some(expr) => lexical(fts::ngram_search(conn, q, &expr, FTS_LIMIT)?, &mut pool, &mut out),
        None => Vec::new(),
    };
    let fts_rank: Vec<usize> = if gram_rank.is_empty() {
        word_rank
    } else if word_rank.is_empty() {
        gram_rank
    } else if !text::has_spaceless(q.task) {
        // A task in a space-separated script searches the pairs only for its words glued to text of
        // a spaceless script: those matches follow the word index's.
        let mut r = word_rank;
        for i in gram_rank {
            if !r.contains(&i) {
                r.push(i);
            }
        }
        r.truncate(FTS_LIMIT);
        r
    } else {
        let fused = fuse::rrf(&[&word_rank, &gram_rank], |i| pool.mems[i].id.clone());
        fused.into_iter().map(|f| f.item).take(FTS_LIMIT).collect()
    };

    // context: the memories recorded right around the strongest matches. A memory rarely stands
    // alone: the message before a match often asks the question it answers, the one after often
    // completes it. Fused as one more ranking (in the order of their anchors).
    // The anchors themselves get no vote here: they already matched, and in a conversation every
    // strong match is some other match's neighbour, so counting that would outvote the text.
    let mut context_rank = Vec::new();
    {
        let anchors: Vec<usize> = fts_rank.iter().copied().take(CONTEXT_ANCHORS).collect();
        for &a in &anchors {
            let m = pool.mems[a].clone();
            for n in recency::around(conn, q, &m, CONTEXT_NEIGHBOURS, CONTEXT_WINDOW_SECS)? {
                let i = pool.add(n);
                if !context_rank.contains(&i) && !anchors.contains(&i) {
                    context_rank.push(i);
                }
            }
        }
    }

    let gz = entity::gazetteer(conn)?;
    let (entity_ids, names) = if gz.is_empty() { (Vec::new(), Vec::new()) } else { gz.find(q.task) };
    out.entities = names;
    let (selective, common) = entity::split_common(conn, &entity_ids)?;
    let task_vec = vector::hash_embed(q.task);
    let mut entity_rank = Vec::new();
    {
        let rows = entity::search(conn, q, &selective)?;
        // Within the linked memories: more task entities first, then closeness to the task text
        // (hashing embedder), then newest. A bare link says little; the text says which link matters.
        let mut scored: Vec<(i64, f32, usize)> = Vec::with_capacity(rows.len());
        for (m, hits) in rows {
            let i = pool.add(m);
            scored.push((hits, pool.cosine(i, &task_vec), i));
        }
        scored.sort_by(|a, b| {
            b.0.cmp(&a.0)
                .then(b.1.total_cmp(&a.1))
                .then_with(|| recency_key(&pool.mems[b.2]).cmp(recency_key(&pool.mems[a.2])))
                .then_with(|| pool.mems[a.2].id.cmp(&pool.mems[b.2].id))
        });
        entity_rank.extend(scored.into_iter().map(|s| s.2));
        // Common entities only re-rank: the memories full-text search found that name one of them
        // follow, in their full-text order.
        if !common.is_empty() {
            let rids: Vec<i64> = fts_rank.iter().map(|&i| pool.mems[i].rid).collect();
            let named = entity::linked(conn, &common, &rids)?;
            let have: HashSet<usize> = entity_rank.iter().copied().collect();
            for &i in &fts_rank {
                if named.contains(&pool.mems[i].rid) && !have.contains(&i) {
                    entity_rank.push(i);
                }
            }
        }
    }

    let mut vector_rank = Vec::new();
    let mut cosine_of: HashMap<usize, f64> = HashMap::new();
    let user_vector = q.query_embedding.is_some();
    if let Some(qe) = q.query_embedding {
        let scan = vector::scan(conn, q, qe, VECTOR_LIMIT)?;
        out.skipped_embeddings = scan.skipped;
        let missing: Vec<i64> = scan.hits.iter().map(|h| h.0).filter(|r| !pool.by_rid.contains_key(r)).collect();
        if !missing.is_empty() {
            let ids = serde_json::to_string(&missing).unwrap_or_else(|_| "[]".into());
            let mut st = conn.prepare_cached(&format!(
                "SELECT {MEMORY_COLS} FROM cmp_memories AS m WHERE m.rid IN (SELECT value FROM json_each(?1))"
            ))?;
            let rows = st.query_map([ids], memory_from_row)?;
            for m in rows {
                pool.add(m?);
            }
        }
        for (rid, cos) in scan.hits {
            if let Some(&i) = pool.by_rid.get(&rid) {
                vector_rank.push(i);
                cosine_of.insert(i, f64::from(cos).clamp(0.0, 1.0));
            }
        }
    } else if !pool.mems.is_empty() {
        let mut scored: Vec<(f32, usize)> =
            (0..pool.mems.len()).map(|i| (pool.cosine(i, &task_vec), i)).filter(|s| s.0 > 0.0).collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| pool.mems[a.1].id.cmp(&pool.mems[b.1].id)));
        vector_rank.extend(scored.into_iter().map(|s| s.1));
    }

    let mut recent = HashSet::new();
    let mut recency_order = Vec::new();
    if q.recency_limit > 0 {
        for m in recency::search(conn, q, q.recency_limit)? {
            let i = pool.add(m);
            recent.insert(i);
            recency_order.push(i);
        }
    }

    // hard rules
    let mut rules = HashSet::new();
    let mut rules_order = Vec::new();
    if q.rules_limit > 0 {
        for m in recency::rules(conn, q, q.rules_limit)? {
            let i = pool.add(m);
            rules.insert(i);
            rules_order.push(i);
        }
    }

    let weights = fusion_weights();
    let fused = fuse::rrf_weighted(&[&fts_rank, &vector_rank, &entity_rank, &context_rank], &weights, |i| {
        pool.mems[i].id.clone()
    });
    let active = [&fts_rank, &vector_rank, &entity_rank, &context_rank].iter().filter(|r| !r.is_empty()).count();
    let basis = if user_vector && active == 1 && !vector_rank.is_empty() {
        "cosine"
    } else if active >= 2 {
        "rrf"
    } else {
        "rank"
    };
    let in_fts: HashSet<usize> = fts_rank.iter().copied().collect();
    let in_entity: HashSet<usize> = entity_rank.iter().copied().collect();
    let in_vector: HashSet<usize> = vector_rank.iter().copied().collect();
    let in_context: HashSet<usize> = context_rank.iter().copied().collect();
    let mut seen = HashSet::new();
    let term_set: HashSet<&str> = terms.iter().map(String::as_str).collect();
    // matched_terms: the stemmed task terms present in each memory.
    let matched_of: Vec<Vec<String>> = (0..pool.mems.len())
        .map(|i| {
            if term_set.is_empty() {
                return Vec::new();
            }
            let mut m: Vec<String> = pool
                .analysed(i)
                .iter()
                .filter(|(st, _)| term_set.contains(st.as_str()))
                .map(|(st, _)| st.clone())
                .collect();
            m.sort();
            m.dedup();
            m
        })
        .collect();
    let mut matched_of: Vec<Option<Vec<String>>> = matched_of.into_iter().map(Some).collect();
    let mut mems: Vec<Option<Memory>> = pool.mems.into_iter().map(Some).collect();
    let mut make = |i: usize, relevance: Option<f64>, basis: Option<&'static str>, rank: Option<usize>| {
        let mem = mems[i].take()?;
        let mut retrievers = Vec::new();
        for (name, set) in [("fts", &in_fts), ("vector", &in_vector), ("entity", &in_entity), ("context", &in_context)]
        {
            if set.contains(&i) {
                retrievers.push(name);
            }
        }
        if recent.contains(&i) {
            retrievers.push("recency");
        }
        if rules.contains(&i) {
            retrievers.push("constraints");
        }
        let matched = matched_of[i].take().unwrap_or_default();
        let entity_only = in_entity.contains(&i) && !in_fts.contains(&i) && !(user_vector && in_vector.contains(&i));
        Some(Candidate { mem, relevance, basis, retrievers, matched_terms: matched, fused_rank: rank, entity_only })
    };
    for f in &fused {
        seen.insert(f.item);
        let rel = if basis == "cosine" { cosine_of.get(&f.item).copied().map(fuse::round6) } else { Some(f.relevance) };
        if let Some(c) = make(f.item, rel, Some(basis), Some(f.rank)) {
            out.candidates.push(c);
        }
    }
    for i in recency_order.into_iter().chain(rules_order) {
        if seen.insert(i) {
            if let Some(c) = make(i, None, None, None) {
                out.candidates.push(c);
            }
        }
    }
    Ok(out)
}
