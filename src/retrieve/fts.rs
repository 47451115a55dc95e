//! BM25 over the FTS5 index. Task text never reaches FTS5's query parser as syntax: it is cut into
//! alphanumeric words and each word becomes a quoted string, joined with OR, so quotes, `AND`,
//! `NEAR`, `*`, parentheses, colons and column filters in a task are plain words.
//!
//! Text in scripts written without spaces is searched in the character-pair index
//! (`cmp_memories_ngram`) with the task's character pairs, quoted the same way. The SQL is in
//! [`crate::store::memories`].
//!
//! Rows still in the index queue ([`crate::store::pending`]: only on a connection that could not
//! index them) are matched by their words and fused with the indexes' ranking (`queued`).

use super::pool::{Pool, Ranking};
use super::{Query, Terms, FTS_LIMIT};
use crate::store::memories::{fts_top, ngram_top, Match};
use crate::text;
use rusqlite::Connection;

/// What the full-text retriever found.
#[derive(Debug, Default)]
pub struct Lexical {
    /// Visible matches, best first.
    pub ranking: Ranking,
    /// Matches captured after the horizon (not yet visible), counted once each.
    pub pending: usize,
    /// The BM25 strength (−bm25, higher is better) of each entry of `ranking`, when the ranking is
    /// the word index's alone; empty when the character-pair index ranked too.
    pub strength: Vec<f64>,
}

/// The full-text ranking: the word index, and the character-pair index for text in scripts written
/// without spaces; when both find something for a task in such a script, their rankings are fused.
pub fn rank(conn: &Connection, q: &Query<'_>, terms: &Terms, pool: &mut Pool) -> rusqlite::Result<Lexical> {
    let mut pending = 0;
    let _armed = crate::store::bm25::arm(conn);
    let (word, word_strength) = match match_expr(&terms.words) {
        Some(expr) => split_visible(fts_top(conn, q.reader(), &expr, FTS_LIMIT)?, pool, &mut pending),
        None => Default::default(),
    };
    let (word, word_strength) = {
        let _t = crate::timing::phase("fts: length prior");
        length_prior(word, word_strength, pool, q.task)
    };
    let _t = crate::timing::phase("fts: character pairs");
    let (gram, gram_strength) = match match_expr(&terms.grams) {
        Some(expr) => split_visible(ngram_top(conn, q.reader(), &expr, FTS_LIMIT)?, pool, &mut pending),
        None => Default::default(),
    };
    let gram = triple_prior(gram, gram_strength, q.task, pool);
    let strength = if gram.is_empty() { word_strength } else { Vec::new() };
    let ranking = merge(word, gram, q.task, pool);
    let late = queued(conn, q, terms, pool, &mut pending)?;
    if late.is_empty() {
        return Ok(Lexical { ranking, pending, strength });
    }
    let fused = super::fuse::rrf(&[&ranking, &late], |i| pool.id(i));
    Ok(Lexical { ranking: fused.into_iter().map(|f| f.item).take(FTS_LIMIT).collect(), pending, strength: Vec::new() })
}

/// The queued rows that hold a task term (a stemmed word, or a pair of a spaceless script), most
/// distinct terms first, then newest: what the indexes would find among rows they do not hold yet.
/// Empty, after one lookup, whenever the queue is (every connection that can write empties it
/// before it reads).
fn queued(
    conn: &Connection,
    q: &Query<'_>,
    terms: &Terms,
    pool: &mut Pool,
    pending: &mut usize,
) -> rusqlite::Result<Ranking> {
    if terms.stems.is_empty() || !crate::store::pending::waiting(conn)? {
        return Ok(Vec::new());
    }
    let mut found: Vec<(usize, i64, crate::store::Memory)> = Vec::new();
    for (mem, visible) in crate::store::pending::queued(conn, q.reader())? {
        let stems: std::collections::HashSet<String> =
            text::words(&mem.content).iter().map(|w| text::stem(w)).collect();
        let hits = terms
            .stems
            .iter()
            .filter(
                |t| if text::has_spaceless(t) { mem.content.contains(t.as_str()) } else { stems.contains(t.as_str()) },
            )
            .count();
        if hits == 0 {
            continue;
        }
        if visible {
            found.push((hits, mem.rid, mem));
        } else if pool.index_of(mem.rid).is_none() {
            *pending += 1;
        }
    }
    found.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
    Ok(found.into_iter().take(FTS_LIMIT).map(|(_, _, m)| pool.add(m)).collect())
}

/// Word count at which the length prior halves a match's strength (see `length_prior`).
pub const LENGTH_PIVOT: f64 = 8.0;
/// Exponent of the length prior (1: strength × words / (words + pivot); 0: no prior).
pub const LENGTH_EXPONENT: f64 = 1.0;

/// Re-ranks the word index's matches (`strength` parallel to `rank`) by BM25 strength × (words / (words + [`LENGTH_PIVOT`]))^
/// [`LENGTH_EXPONENT`], ties by rid. BM25 normalises term frequency by length, so a three-word
/// message that holds a task word ("elise: Hey Kate!", "Emi: For sure!") outranks a message that says
/// something about it; the prior (a message's chance to carry an answer grows with what it says)
/// leaves long messages almost as they were and halves an eight-word one. Measured on LoCoMo and
/// realtalk-dev alike (BENCHMARKS.md, "Length prior"). For a task that asks "when", a match that
/// says when (see [`time_prior`]) counts × (1 + [`TIME_WEIGHT`]).
fn length_prior(rank: Ranking, strength: Vec<f64>, pool: &mut Pool, task: &str) -> (Ranking, Vec<f64>) {
    let (g, pivot) = (super::knob("CMP_LEN_G", LENGTH_EXPONENT), super::knob("CMP_LEN_PIVOT", LENGTH_PIVOT));
    if g == 0.0 {
        return (rank, strength);
    }
    let when = time_prior(task);
    let mut v: Vec<(usize, f64)> = rank
        .into_iter()
        .zip(strength)
        .map(|(i, s)| {
            let n = pool.word_count(i) as f64;
            let a = pool.analysed(i);
            let t = when.map_or(1.0, |w| if a.iter().any(|x| is_time_stem(&x.stem)) { 1.0 + w } else { 1.0 });
            (i, t * s * (n / (n + pivot)).powf(g))
        })
        .collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1).then(pool.mems[a.0].rid.cmp(&pool.mems[b.0].rid)));
    v.into_iter().unzip()
}

/// What a match that says when gains for a task that asks "when": its strength × (1 + this).
pub const TIME_WEIGHT: f64 = 0.5;

/// Words that say when something happened, besides the month names ([`super::dated::MONTH_NAMES`]).
const TIME_WORDS: &[&str] = &[
    "yesterday",
    "today",
    "tonight",
    "tomorrow",
    "week",
    "weeks",
    "weekend",
    "month",
    "months",
    "year",
    "years",
    "days",
    "ago",
    "recently",
    "lately",
    "earlier",
    "morning",
    "afternoon",
    "evening",
    "night",
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

/// Month names that as words mostly mean something else: not time words.
const AMBIGUOUS_MONTHS: [&str; 2] = ["march", "may"];

/// True for the stem of a word of [`TIME_WORDS`] or of a month name (stemmed when first used).
fn is_time_stem(stem: &str) -> bool {
    static STEMS: std::sync::OnceLock<std::collections::HashSet<String>> = std::sync::OnceLock::new();
    STEMS
        .get_or_init(|| {
            let months = super::dated::MONTH_NAMES.iter().filter(|m| !AMBIGUOUS_MONTHS.contains(m));
            TIME_WORDS.iter().chain(months).map(|w| text::stem(w)).collect()
        })
        .contains(stem)
}

/// The time prior's weight for `task`: [`TIME_WEIGHT`] when it asks "when" (the answer is the match
/// that says when: "I went to the support group yesterday"), None otherwise.
fn time_prior(task: &str) -> Option<f64> {
    let w = super::knob("CMP_TIME", TIME_WEIGHT);
    (w > 0.0 && text::words(task).iter().any(|t| t == "when")).then_some(w)
}

/// Weight of the character-triple prior (see `triple_prior`; 0: none).
pub const TRIPLE_WEIGHT: f64 = 1.0;

/// Re-ranks the character-pair index's matches (`strength` parallel to `rank`) by BM25 strength ×
/// (1 + [`TRIPLE_WEIGHT`] × the share of the task's runs of three spaceless characters the memory
/// holds; the first [`super::MAX_GRAMS`] distinct runs, as many as pairs are searched), ties by
/// rid. Pairs match each half of a three-character word on its own; a memory that holds the task's
/// characters in the task's order is the likelier answer.
fn triple_prior(rank: Ranking, strength: Vec<f64>, task: &str, pool: &Pool) -> Ranking {
    let w = super::knob("CMP_TRIPLE", TRIPLE_WEIGHT);
    if w == 0.0 || rank.len() < 2 || !text::has_spaceless(task) {
        return rank;
    }
    let chars: Vec<char> = task.chars().collect();
    let mut triples: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    'runs: for run in chars.split(|&c| !text::is_spaceless(c)) {
        for t in run.windows(3) {
            if triples.len() == super::MAX_GRAMS {
                break 'runs;
            }
            let t: String = t.iter().collect();
            if seen.insert(t.clone()) {
                triples.push(t);
            }
        }
    }
    if triples.is_empty() {
        return rank;
    }
    let n = triples.len() as f64;
    let mut v: Vec<(usize, f64)> = rank
        .into_iter()
        .zip(strength)
        .map(|(i, s)| {
            let held = triples.iter().filter(|t| pool.mems[i].content.contains(t.as_str())).count() as f64;
            (i, s * (1.0 + w * held / n))
        })
        .collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1).then(pool.mems[a.0].rid.cmp(&pool.mems[b.0].rid)));
    v.into_iter().map(|(i, _)| i).collect()
}

/// Pools the visible matches (in their order) and counts the others as pending; with each visible
/// match's strength (−bm25).
fn split_visible(found: Vec<Match>, pool: &mut Pool, pending: &mut usize) -> (Ranking, Vec<f64>) {
    let (mut rank, mut strength) = (Vec::new(), Vec::new());
    for m in found {
        if m.visible {
            rank.push(pool.add(m.mem));
            strength.push(-m.bm25);
        } else if pool.index_of(m.mem.rid).is_none() {
            *pending += 1;
        }
    }
    (rank, strength)
}

/// One ranking from the word index's and the character-pair index's.
fn merge(word: Ranking, gram: Ranking, task: &str, pool: &Pool) -> Ranking {
    if gram.is_empty() {
        word
    } else if word.is_empty() {
        gram
    } else if !text::has_spaceless(task) {
        // A task in a space-separated script searches the pairs only for its words glued to text of
        // a spaceless script: those matches follow the word index's.
        let mut r = word;
        for i in gram {
            if !r.contains(&i) {
                r.push(i);
            }
        }
        r.truncate(FTS_LIMIT);
        r
    } else {
        let fused = super::fuse::rrf(&[&word, &gram], |i| pool.id(i));
        fused.into_iter().map(|f| f.item).take(FTS_LIMIT).collect()
    }
}

/// The safe FTS5 query for a task's terms, or None when there is nothing to search for.
pub fn match_expr(terms: &[String]) -> Option<String> {
    if terms.is_empty() {
        return None;
    }
    // Terms are alphanumeric words (text::words) or pairs of letters and digits (text::gram_terms),
    // so they hold no `"`; quoting makes every one a literal string to FTS5.
    Some(terms.iter().map(|t| format!("\"{t}\"")).collect::<Vec<_>>().join(" OR "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retrieve::testdb::{add, ids, open, query};

    #[test]
    fn ranks_visible_matches_and_counts_later_ones_pending() {
        let conn = open();
        add(&conn, "mem_1", "atlas atlas launch", "2026-05-01T00:00:00Z", "semantic", "[]");
        add(&conn, "mem_2", "the atlas review", "2026-05-02T00:00:00Z", "semantic", "[]");
        add(&conn, "mem_3", "atlas after the horizon", "2026-07-01T00:00:00Z", "semantic", "[]");
        add(&conn, "mem_4", "grocery list", "2026-05-03T00:00:00Z", "semantic", "[]");
        conn.execute("INSERT INTO main.cmp_memories(id, content, redacted) VALUES ('mem_5', 'atlas secret', 1)", [])
            .expect("redacted row");
        let q = query("atlas launch");
        let mut pool = Pool::default();
        let lex = rank(&conn, &q, &crate::retrieve::Terms::of(q.task), &mut pool).expect("rank");
        assert_eq!(ids(&pool, &lex.ranking), ["mem_1", "mem_2"]);
        assert_eq!(lex.pending, 1);
        let lex = rank(&conn, &q, &crate::retrieve::Terms::of("nothing matches"), &mut Pool::default()).expect("rank");
        assert!(lex.ranking.is_empty());
    }

    #[test]
    fn a_message_that_says_more_outranks_a_few_words_holding_the_same_term() {
        let conn = open();
        add(&conn, "mem_short", "Emi: atlas ok", "2026-05-01T00:00:00Z", "episodic", "[]");
        add(
            &conn,
            "mem_long",
            "Emi: the atlas launch moved to June because the billing migration needed more time",
            "2026-05-01T00:00:00Z",
            "episodic",
            "[]",
        );
        let q = query("atlas");
        let mut pool = Pool::default();
        let lex = rank(&conn, &q, &crate::retrieve::Terms::of(q.task), &mut pool).expect("rank");
        assert_eq!(ids(&pool, &lex.ranking), ["mem_long", "mem_short"]);
    }

    #[test]
    fn spaceless_text_is_found_through_character_pairs() {
        let conn = open();
        add(&conn, "mem_zh", "我们周五发布新版本", "2026-05-01T00:00:00Z", "semantic", "[]");
        add(&conn, "mem_en", "release notes", "2026-05-01T00:00:00Z", "semantic", "[]");
        let q = query("什么时候发布");
        let mut pool = Pool::default();
        let lex = rank(&conn, &q, &crate::retrieve::Terms::of(q.task), &mut pool).expect("rank");
        assert_eq!(ids(&pool, &lex.ranking), ["mem_zh"]);
    }

    #[test]
    fn a_task_that_asks_when_prefers_the_match_that_says_when() {
        let conn = open();
        add(
            &conn,
            "mem_1",
            "Caroline: our support group is the best support group, a group like no other",
            "2026-05-01T00:00:00Z",
            "episodic",
            "[]",
        );
        add(
            &conn,
            "mem_2",
            "Caroline: I went to a support group yesterday, it was great",
            "2026-05-02T00:00:00Z",
            "episodic",
            "[]",
        );
        let order = |task: &str| {
            let q = query(task);
            let mut pool = Pool::default();
            let lex = rank(&conn, &q, &crate::retrieve::Terms::of(q.task), &mut pool).expect("rank");
            ids(&pool, &lex.ranking)
        };
        assert_eq!(order("what was the support group like"), ["mem_1", "mem_2"]);
        assert_eq!(order("when was the support group"), ["mem_2", "mem_1"]);
        assert!(is_time_stem(&text::stem("yesterday")) && is_time_stem(&text::stem("mondays")));
        assert!(!is_time_stem(&text::stem("group")));
    }

    #[test]
    fn a_memory_holding_the_task_characters_in_order_outranks_a_slightly_stronger_pair_match() {
        let conn = open();
        add(&conn, "mem_pairs", "上司叫张三，学历不详。", "2026-05-01T00:00:00Z", "episodic", "[]");
        add(&conn, "mem_order", "我的上司就只有高中学历。", "2026-05-01T00:00:00Z", "episodic", "[]");
        let mut pool = Pool::default();
        let ranked: Vec<usize> =
            crate::store::memories::by_rids(&conn, &[1, 2]).expect("rows").into_iter().map(|m| pool.add(m)).collect();
        // BM25 put the pair match first, barely; the other holds "我的上" and "的上司" of the task.
        let task = "我的上司是什么学历？";
        let out = triple_prior(ranked.clone(), vec![1.0, 0.9], task, &pool);
        assert_eq!(ids(&pool, &out), ["mem_order", "mem_pairs"]);
        // Far stronger pair matches keep their place.
        assert_eq!(ids(&pool, &triple_prior(ranked, vec![3.0, 0.9], task, &pool)), ["mem_pairs", "mem_order"]);
    }

    #[test]
    fn the_triple_prior_leaves_a_task_without_three_spaceless_characters_alone() {
        let conn = open();
        add(&conn, "mem_a", "我的上司就只有高中学历。", "2026-05-01T00:00:00Z", "episodic", "[]");
        add(&conn, "mem_b", "上司叫张三。", "2026-05-01T00:00:00Z", "episodic", "[]");
        let mut pool = Pool::default();
        let ranked: Vec<usize> =
            crate::store::memories::by_rids(&conn, &[1, 2]).expect("rows").into_iter().map(|m| pool.add(m)).collect();
        // Weaker first: a prior that applied would sort them; these tasks hold no triple to apply.
        for task in ["atlas launch", "上司 学历", "我的"] {
            assert_eq!(
                ids(&pool, &triple_prior(ranked.clone(), vec![0.5, 1.0], task, &pool)),
                ["mem_a", "mem_b"],
                "{task}"
            );
        }
    }

    #[test]
    fn quoting() {
        assert_eq!(match_expr(&[]), None);
        assert_eq!(match_expr(&["a".into(), "near".into()]).unwrap(), "\"a\" OR \"near\"");
    }
}
