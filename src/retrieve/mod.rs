//! Hybrid retrieval: [`retrieve`] composes one function per retriever (full text, context neighbours,
//! bridges, entity, the days a task names, vector, recency and hard rules), each returning a ranking
//! of one shared candidate pool ([`pool`]), and fuses them by weighted reciprocal rank fusion (k = 60,
//! [`fuse`]). Bridges are placed in the full-text ranking, right after the match each was found from.
//!
//! Every retriever reads through the same eligibility rule ([`crate::store::eligibility`]): one
//! scope, never a redacted row, never a row superseded at the horizon (`as_of`, else `now`). Rows
//! captured after the horizon are not yet visible; lexical matches among them are counted as `pending`.

pub mod bridge;
pub mod context;
pub mod dated;
pub mod entity;
pub mod fts;
pub mod fuse;
pub mod pool;
pub mod recency;
pub mod vector;

use crate::error::Result;
use crate::store::{Memory, Reader};
use crate::text;
use crate::time::{self, Epoch};
use fuse::Rankings;
use pool::Pool;
use rusqlite::Connection;

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

/// Strongest full-text matches whose neighbours in time are offered as context (the neighbours of
/// weaker matches diluted the context ranking: BENCHMARKS.md, "Context neighbours").
pub const CONTEXT_ANCHORS: usize = 4;
/// Neighbours taken on each side of an anchor.
pub const CONTEXT_NEIGHBOURS: usize = 3;
/// Neighbours further apart than this (seconds) are not context.
pub const CONTEXT_WINDOW_SECS: f64 = 3600.0;

/// Hard rules offered to every pack.
pub const RULES_LIMIT: usize = 20;

/// A retriever: one way a candidate can be found (`why.retrievers` names them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Retriever {
    /// BM25 over the word index and the character-pair index.
    Fts,
    /// Cosine to the user embedding, or the built-in hashing embedder.
    Vector,
    /// Memories linked to an entity named in the task.
    Entity,
    /// Memories recorded right around a strong full-text match.
    Context,
    /// Memories that name what a strong full-text match names and hold a task term it lacks.
    Bridge,
    /// Memories recorded on a day or in a month the task names.
    Dated,
    /// The newest memories.
    Recency,
    /// Hard rules (kind `negative`).
    Constraints,
}

impl Retriever {
    /// Every retriever, in the order `why.retrievers` lists them.
    pub const ALL: [Retriever; 8] = [
        Retriever::Fts,
        Retriever::Vector,
        Retriever::Entity,
        Retriever::Context,
        Retriever::Bridge,
        Retriever::Dated,
        Retriever::Recency,
        Retriever::Constraints,
    ];

    /// The name output shows.
    pub fn name(self) -> &'static str {
        match self {
            Retriever::Fts => "fts",
            Retriever::Vector => "vector",
            Retriever::Entity => "entity",
            Retriever::Context => "context",
            Retriever::Bridge => "bridge",
            Retriever::Dated => "dated",
            Retriever::Recency => "recency",
            Retriever::Constraints => "constraints",
        }
    }
}

/// What a candidate's relevance means (`relevance_basis`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Basis {
    /// Reciprocal rank fusion of two or more rankings, rescaled to [0, 1].
    Rrf,
    /// The rank in the only ranking that found anything, rescaled to [0, 1].
    Rank,
    /// Cosine to the user embedding (the only ranking).
    Cosine,
}

impl Basis {
    /// The name output shows.
    pub fn name(self) -> &'static str {
        match self {
            Basis::Rrf => "rrf",
            Basis::Rank => "rank",
            Basis::Cosine => "cosine",
        }
    }
}

/// Weights of the fused rankings in reciprocal rank fusion, in the order fts, vector, entity,
/// context, dated. A word of the task found in a memory is the strongest evidence there is; the built-in
/// hashing embedder only re-ranks what was found, so it counts half. Measured on LoCoMo and
/// realtalk-dev alike (BENCHMARKS.md, "Fusion weights" and "Common entities"): with equal weights a
/// memory that matches a rare word of the task lost to its neighbours, which collect votes from every
/// other ranking; full text counts 4 since a common entity (a chat's speaker) no longer votes for every
/// match that names it, which had doubled as a full-text vote. Context counts half: its neighbours
/// share no evidence with the task but their time (BENCHMARKS.md, "Context neighbours"). A memory
/// recorded on the day a task names counts as much as a full-text match (BENCHMARKS.md, "Dated
/// tasks").
pub const FUSION_WEIGHTS: [f64; 5] = [4.0, 0.5, 1.0, 0.5, 4.0];

/// Weight of the vector ranking when the caller's embedding drives it (`query_embedding` or the
/// `embedder` option) instead of the hashing embedder: a real sentence model finds what shares no
/// word with the task, and ranks the whole scope, not only what the others found. Measured with
/// all-MiniLM-L6-v2 on LoCoMo and realtalk-dev alike (BENCHMARKS.md, "With an embedding model").
pub const USER_VECTOR_WEIGHT: f64 = 2.0;

/// The fusion weights in force: [`FUSION_WEIGHTS`] (the vector weight [`USER_VECTOR_WEIGHT`] for
/// the caller's embedding), or, in a build with the `eval-knobs` feature (evaluation only),
/// `CMP_W_FTS`, `CMP_W_VEC`, `CMP_W_ENT`, `CMP_W_CTX`, `CMP_W_DATED` from the environment.
fn fusion_weights(user_vector: bool) -> [f64; 5] {
    let d = FUSION_WEIGHTS;
    let vector = if user_vector { USER_VECTOR_WEIGHT } else { d[1] };
    [
        knob("CMP_W_FTS", d[0]),
        knob("CMP_W_VEC", vector),
        knob("CMP_W_ENT", d[2]),
        knob("CMP_W_CTX", d[3]),
        knob("CMP_W_DATED", d[4]),
    ]
}

/// A tuned constant in force: `value`, or, in a build with the `eval-knobs` feature (evaluation
/// only), the number in the environment variable `name` when it holds one.
pub(crate) fn knob(name: &str, value: f64) -> f64 {
    #[cfg(feature = "eval-knobs")]
    if let Some(v) = std::env::var(name).ok().and_then(|v| v.parse().ok()) {
        return v;
    }
    let _ = name;
    value
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
    /// Who this query reads as: its scope at its horizon, with superseded rows or not.
    pub fn reader(&self) -> Reader<'a> {
        Reader { scope: self.scope, h: self.horizon_jd, any_version: self.include_superseded }
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
    /// What `relevance` means, or None (recency-only).
    pub basis: Option<Basis>,
    /// Retrievers that found it, in [`Retriever::ALL`] order.
    pub retrievers: Vec<Retriever>,
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

/// The task's search terms.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Terms {
    /// Words sent to the word index: the task's, then their irregular forms, at most [`MAX_TERMS`].
    pub words: Vec<String>,
    /// Character pairs sent to the character-pair index (at most [`MAX_GRAMS`]).
    pub grams: Vec<String>,
    /// Stemmed words, then pairs of spaceless scripts as they are (never stemmed), each once: what
    /// `matched_terms` reports.
    pub stems: Vec<String>,
}

impl Terms {
    /// The terms of a task: its words, then the other forms of its irregular ones ("go": "went",
    /// "gone"; [`text::irregular_forms`]), which a stemmer cannot join to them.
    pub fn of(task: &str) -> Terms {
        let mut words = text::query_terms(task, MAX_TERMS);
        // The forms fill the room the task's own words leave, so a query never holds more than
        // MAX_TERMS words (the bound on what one task can make FTS5 read).
        let forms: Vec<&str> = words.iter().flat_map(|w| text::irregular_forms(w)).collect();
        for f in forms {
            if words.len() < MAX_TERMS && !words.iter().any(|w| w == f) {
                words.push(f.to_string());
            }
        }
        let grams = text::task_gram_terms(task, MAX_GRAMS);
        let mut stems: Vec<String> = Vec::new();
        for w in &words {
            let s = text::stem(w);
            if !stems.contains(&s) {
                stems.push(s);
            }
        }
        for w in text::spaceless_terms(task, MAX_TERMS) {
            if !stems.contains(&w) {
                stems.push(w);
            }
        }
        Terms { words, grams, stems }
    }
}

/// Runs every retriever over one candidate pool and fuses their rankings.
pub fn retrieve(conn: &Connection, q: &Query<'_>) -> Result<Retrieval> {
    use crate::timing::phase;
    let terms = Terms::of(q.task);
    let task_vec = vector::hash_embed(q.task);
    let mut pool = Pool::default();
    let lexical = fts::rank(conn, q, &terms, &mut pool)?;
    let t = phase("retrieve: entities");
    let entities = entity::rank(conn, q, &lexical.ranking, &task_vec, &mut pool)?;
    let fts = entity::boost_named(&lexical.ranking, &lexical.strength, &entities.named);
    let entity_ranking = entity::with_votes(entities.ranking, &lexical, &entities.named);
    drop(t);
    // The caller's embedding ranks the whole scope, so when the task also matched text, its best
    // matches anchor context too (a search by embedding alone stays a pure cosine ranking); the
    // hashing embedder ranks what the retrievers found, context included (recency and rules after).
    let user_first = q.query_embedding.is_some() && !fts.is_empty() && knob("CMP_CTX_VEC", 1.0) > 0.0;
    let early = if user_first { Some(vector::rank(conn, q, &task_vec, &mut pool)?) } else { None };
    let t = phase("retrieve: context neighbours");
    let anchors = early.as_ref().map(|v| interleave(&fts, &v.ranking, CONTEXT_ANCHORS));
    let context = context::rank(conn, q, anchors.as_deref().unwrap_or(&fts), &mut pool)?;
    drop(t);
    let t = phase("retrieve: bridges");
    let bridges = bridge::rank(conn, q, &terms, &fts, &mut pool)?;
    let fts = bridge::place(&fts, &bridges);
    drop(t);
    let t = phase("retrieve: dated");
    let dated = dated::rank(conn, q, &fts, &mut pool)?;
    drop(t);
    let t = phase("retrieve: hashing embedder");
    let vectors = match early {
        Some(v) => v,
        None => vector::rank(conn, q, &task_vec, &mut pool)?,
    };
    drop(t);
    let t = phase("retrieve: recency and rules");
    let recency = recency::rank(conn, q, &mut pool)?;
    let constraints = recency::rules_rank(conn, q, &mut pool)?;
    drop(t);
    let _t = phase("retrieve: fusion");
    let rankings = Rankings {
        fts,
        vector: vectors.ranking,
        entity: entity_ranking,
        named: entities.named,
        context,
        bridge: bridges.iter().map(|b| b.item).collect(),
        dated,
        recency,
        constraints,
        cosine: vectors.cosine,
        user_vector: q.query_embedding.is_some(),
    };
    Ok(Retrieval {
        candidates: fuse::candidates(pool, &rankings, &terms.stems, &fusion_weights(q.query_embedding.is_some())),
        pending: lexical.pending,
        entities: entities.names,
        terms: terms.stems,
        skipped_embeddings: vectors.skipped,
    })
}

/// The first `n` of `a` and `b` taken in turn, each entry once.
fn interleave(a: &[usize], b: &[usize], n: usize) -> Vec<usize> {
    let mut out = Vec::with_capacity(n);
    for i in 0..a.len().max(b.len()) {
        for r in [a.get(i), b.get(i)].into_iter().flatten() {
            if out.len() == n {
                return out;
            }
            if !out.contains(r) {
                out.push(*r);
            }
        }
    }
    out
}

/// An in-memory database for the retrievers' unit tests.
#[cfg(test)]
pub(crate) mod testdb {
    use super::Query;
    use rusqlite::Connection;

    /// The read point of every test query: 2026-06-01.
    pub const NOW: &str = "2026-06-01T00:00:00Z";

    /// A fresh database with cmp registered and its schema applied.
    pub fn open() -> Connection {
        let conn = Connection::open_in_memory().expect("open");
        crate::register(&conn).expect("register");
        conn.query_row("SELECT cmp_init()", [], |_| Ok(())).expect("init");
        conn
    }

    /// Adds a memory (id, content, captured_at, kind, entities JSON) and indexes it, as the SQL
    /// functions do before they read.
    pub fn add(conn: &Connection, id: &str, content: &str, at: &str, kind: &str, entities: &str) {
        conn.execute(
            "INSERT INTO main.cmp_memories(id, content, captured_at, kind, entities) VALUES (?1, ?2, ?3, ?4, ?5)",
            [id, content, at, kind, entities],
        )
        .expect("insert");
        crate::store::pending::flush(conn).expect("flush");
    }

    /// A query of the default scope at [`NOW`].
    pub fn query(task: &str) -> Query<'_> {
        Query::new(task, "default", crate::time::parse(NOW).expect("now"))
    }

    /// The ids of a ranking, in order.
    pub fn ids(pool: &super::Pool, ranking: &[usize]) -> Vec<String> {
        ranking.iter().map(|&i| pool.id(i).to_string()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::testdb::{add, open, query};
    use super::*;

    #[test]
    fn interleave_takes_in_turn_once_each_up_to_n() {
        assert_eq!(interleave(&[1, 2, 3], &[2, 9], 8), [1, 2, 9, 3]);
        assert_eq!(interleave(&[1, 2, 3], &[4, 5, 6], 3), [1, 4, 2]);
        assert_eq!(interleave(&[], &[7], 8), [7]);
        assert!(interleave(&[1], &[2], 0).is_empty());
    }

    #[test]
    fn names_follow_the_documented_order() {
        let names: Vec<&str> = Retriever::ALL.iter().map(|r| r.name()).collect();
        assert_eq!(names, ["fts", "vector", "entity", "context", "bridge", "dated", "recency", "constraints"]);
        assert_eq!([Basis::Rrf.name(), Basis::Rank.name(), Basis::Cosine.name()], ["rrf", "rank", "cosine"]);
    }

    #[test]
    fn irregular_words_bring_their_other_forms() {
        let t = Terms::of("Where did Caroline go after she met Mel?");
        assert_eq!(t.words, ["caroline", "go", "met", "mel", "went", "gone", "meet"]);
        assert_eq!(t.stems, ["carolin", "go", "met", "mel", "went", "gone", "meet"]);
        assert_eq!(Terms::of("launch the boat").words, ["launch", "boat"], "regular words come alone");
        let long: Vec<String> = (0..MAX_TERMS).map(|i| format!("w{i}")).collect();
        let t = Terms::of(&format!("went {}", long.join(" ")));
        assert_eq!(t.words.len(), MAX_TERMS, "the forms never pass the bound");
        assert_eq!(t.words[0], "went");
        assert!(Terms::of(&format!("went {}", long[..MAX_TERMS - 3].join(" ")))
            .words
            .ends_with(&["go".into(), "gone".into()]));
    }

    #[test]
    fn terms_stem_once_and_keep_spaceless_pairs() {
        let t = Terms::of("launching launches of Atlas");
        assert_eq!(t.stems, ["launch", "atla"]);
        assert!(t.words.contains(&"launching".to_string()));
        assert!(Terms::of("").stems.is_empty());
    }

    #[test]
    fn retrieve_composes_every_retriever() {
        let conn = open();
        add(&conn, "mem_a", "Atlas ships on Friday", "2026-05-01T10:00:00Z", "semantic", r#"["Atlas"]"#);
        add(&conn, "mem_b", "the team agreed", "2026-05-01T10:10:00Z", "semantic", "[]");
        add(&conn, "mem_r", "never deploy on weekends", "2026-04-01T00:00:00Z", "negative", "[]");
        let r = retrieve(&conn, &query("when does atlas ship?")).expect("retrieve");
        let ids: Vec<&str> = r.candidates.iter().map(|c| c.mem.id.as_str()).collect();
        assert_eq!(ids, ["mem_a", "mem_b", "mem_r"]);
        let a = &r.candidates[0];
        assert_eq!(a.retrievers, [Retriever::Fts, Retriever::Vector, Retriever::Entity]);
        assert_eq!((a.basis, a.fused_rank, a.relevance), (Some(Basis::Rrf), Some(1), Some(1.0)));
        assert_eq!(a.matched_terms, ["atla", "ship"]);
        assert_eq!(r.candidates[1].retrievers, [Retriever::Context]);
        assert_eq!(r.candidates[2].retrievers, [Retriever::Constraints]);
        assert_eq!(r.candidates[2].basis, None);
        assert_eq!(r.entities, ["Atlas"]);
    }
}
