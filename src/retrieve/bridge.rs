//! Bridge retrieval: memories that name what a strong full-text match names and hold a task term the
//! match lacks. A question often joins two stored facts. "那个地点是广东广州的活动，我要参加的活动是什么？"
//! (the event held in Guangzhou: which one am I going to?) matches "设计总监项目启动会的地点是广东广州。"
//! on its condition; the answer, "我将要参加设计总监项目启动会。", shares with the task only a pair
//! ("参加") that hundreds of memories hold. What joins it to the task is the event's name, which the
//! match holds and the task does not. Each bridge takes the place right after its anchor in the
//! full-text ranking ([`place`]).
//!
//! Only tasks in a script written without spaces bridge: on LoCoMo and realtalk-dev bridging on
//! words gained nothing (BENCHMARKS.md, "Bridges"; [`BRIDGE_WORDS`]).

use super::pool::{Pool, Ranking};
use super::{Query, Terms};
use crate::store::bm25::Index;
use crate::store::memories::{fts_top, ngram_top, Match};
use crate::text;
use rusqlite::Connection;
/// Sets and maps of short terms, hashed with FNV (SipHash cost a call over long texts more than the
/// terms' analysis).
type HashSet<T> = std::collections::HashSet<T, text::FnvBuild>;
type HashMap<K, V> = std::collections::HashMap<K, V, text::FnvBuild>;

/// Strongest full-text matches a bridge may start from.
pub const BRIDGE_ANCHORS: usize = 10;
/// Share of an anchor's own terms a memory must hold to bridge from it.
pub const BRIDGE_MIN_SHARE: f64 = 0.5;
/// Fewest own terms an anchor must have to bridge: one pair or word alone names little.
pub const BRIDGE_MIN_TERMS: usize = 2;
/// A term held by more than this share of the full-text matches (and by more than two) is common to
/// them: not an anchor's own (see `common_terms`).
pub const BRIDGE_COMMON: f64 = 0.05;
/// Most own terms taken from one anchor.
const BRIDGE_TERMS: usize = 24;
/// Characters of a text read for its terms: what names a memory's subject is at its start, and
/// a bound on what one long memory costs a call (every full-text match is read for
/// `common_terms`).
pub const BRIDGE_CHARS: usize = 256;
/// Rows the bridge query reads.
const BRIDGE_READ: usize = 40;
/// Whether tasks in space-separated scripts bridge too (1) or not (0).
pub const BRIDGE_WORDS: f64 = 0.0;

/// A memory found from an anchor (pool indexes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bridge {
    /// The full-text match it was found from.
    pub anchor: usize,
    /// The memory.
    pub item: usize,
}

/// A full-text index's view of a text: its terms as the index matches them (the word index:
/// non-stopword words, compared by stem; the character-pair index: pairs, compared as they are).
trait View: Copy {
    fn terms(self, s: &str) -> Vec<String>;
    fn key(self, t: &str) -> String;
    fn keys(self, s: &str) -> HashSet<String>;
    fn names(self, t: &str) -> bool;
    fn holds(self, held: &HashSet<String>, t: &str) -> bool;
    fn top(self, conn: &Connection, q: &Query<'_>, expr: &str) -> rusqlite::Result<Vec<Match>>;
}

impl View for Index {
    /// The terms of `s` this index matches on, as written, from its first [`BRIDGE_CHARS`]
    /// characters.
    fn terms(self, s: &str) -> Vec<String> {
        let cap = super::knob("CMP_BRIDGE_CHARS", BRIDGE_CHARS as f64) as usize;
        let s = s.char_indices().nth(cap).map_or(s, |(i, _)| &s[..i]);
        match self {
            Index::Words => text::query_terms(s, usize::MAX),
            Index::Pairs => text::gram_terms(s, usize::MAX),
        }
    }

    /// How terms compare: a word by its stem (the word index stems), a pair as it is.
    fn key(self, t: &str) -> String {
        match self {
            Index::Words => text::stem(t),
            Index::Pairs => t.to_string(),
        }
    }

    /// The term keys of `s`.
    fn keys(self, s: &str) -> HashSet<String> {
        self.terms(s).iter().map(|t| self.key(t)).collect()
    }

    /// Terms that may name something: a pair must be of a spaceless script and hold no function
    /// character.
    fn names(self, t: &str) -> bool {
        match self {
            Index::Words => true,
            Index::Pairs => text::has_spaceless(t) && !text::is_stop_pair(t),
        }
    }

    /// True when `held` (a text's term keys) holds the task term `t`; a phrase of pairs ("at tl la
    /// as") when it holds each of them.
    fn holds(self, held: &HashSet<String>, t: &str) -> bool {
        match self {
            Index::Words => held.contains(&text::stem(t)),
            Index::Pairs => t.split(' ').all(|p| held.contains(p)),
        }
    }

    /// The best `BRIDGE_READ` eligible matches of `expr`, visible or not.
    fn top(self, conn: &Connection, q: &Query<'_>, expr: &str) -> rusqlite::Result<Vec<Match>> {
        match self {
            Index::Words => fts_top(conn, q.reader(), expr, BRIDGE_READ),
            Index::Pairs => ngram_top(conn, q.reader(), expr, BRIDGE_READ),
        }
    }
}

/// What one anchor bridges on.
struct Anchor {
    /// Its pool index.
    item: usize,
    /// Its own terms (keys): those the full-text matches do not have in common.
    own: HashSet<String>,
    /// The task's terms it lacks.
    lacking: Vec<String>,
}

impl Anchor {
    /// Anchor `item` with its own terms (as written, in order) and the task terms it lacks, or None
    /// when it has fewer than [`BRIDGE_MIN_TERMS`] own terms or holds every task term.
    fn of(
        index: Index,
        item: usize,
        content: &str,
        task: &[String],
        common: &HashSet<String>,
    ) -> Option<(Anchor, Vec<String>)> {
        let terms = index.terms(content);
        let held: HashSet<String> = terms.iter().map(|t| index.key(t)).collect();
        let (mut own, mut written) = (HashSet::default(), Vec::new());
        for t in terms {
            let k = index.key(&t);
            if own.len() < BRIDGE_TERMS && index.names(&t) && !common.contains(&k) && own.insert(k) {
                written.push(t);
            }
        }
        let lacking: Vec<String> = task.iter().filter(|t| !index.holds(&held, t)).cloned().collect();
        let fewest = super::knob("CMP_BRIDGE_MIN_TERMS", BRIDGE_MIN_TERMS as f64) as usize;
        (own.len() >= fewest && !lacking.is_empty()).then_some((Anchor { item, own, lacking }, written))
    }

    /// True when a memory holding `held` (term keys) bridges from this anchor: it holds at least
    /// [`BRIDGE_MIN_SHARE`] of the anchor's own terms and a task term the anchor lacks.
    fn bridged_by(&self, index: Index, held: &HashSet<String>, min_share: f64) -> bool {
        let shared = self.own.iter().filter(|t| held.contains(*t)).count() as f64;
        shared >= min_share * self.own.len() as f64 && self.lacking.iter().any(|t| index.holds(held, t))
    }
}

/// The bridges of the first [`BRIDGE_ANCHORS`] entries of `fts`, at most one per anchor: the best
/// match (BM25) of "one of the anchors' own terms AND one of the task terms they lack" that bridges
/// from the anchor (`Anchor::bridged_by`) and is neither the anchor itself, nor an earlier
/// anchor's bridge, nor an earlier anchor that has one. One query serves every anchor.
pub fn rank(
    conn: &Connection,
    q: &Query<'_>,
    terms: &Terms,
    fts: &[usize],
    pool: &mut Pool,
) -> rusqlite::Result<Vec<Bridge>> {
    let (index, task) = if text::has_spaceless(q.task) {
        (Index::Pairs, &terms.grams)
    } else if super::knob("CMP_BRIDGE_WORDS", BRIDGE_WORDS) > 0.0 {
        (Index::Words, &terms.words)
    } else {
        return Ok(Vec::new());
    };
    let n = super::knob("CMP_BRIDGE_ANCHORS", BRIDGE_ANCHORS as f64) as usize;
    if n == 0 {
        return Ok(Vec::new());
    }
    let common = common_terms(index, fts, pool);
    let (mut anchors, mut own_terms, mut lacking) = (Vec::new(), Vec::new(), Vec::new());
    for &a in fts.iter().take(n) {
        let Some((anchor, written)) = Anchor::of(index, a, &pool.mems[a].content, task, &common) else { continue };
        extend_unique(&mut own_terms, written);
        extend_unique(&mut lacking, anchor.lacking.iter().cloned());
        anchors.push(anchor);
    }
    let (Some(own), Some(lack)) = (super::fts::match_expr(&own_terms), super::fts::match_expr(&lacking)) else {
        return Ok(Vec::new());
    };
    let rows: Vec<(Match, HashSet<String>)> = index
        .top(conn, q, &format!("({own}) AND ({lack})"))?
        .into_iter()
        .filter(|m| m.visible)
        .map(|m| {
            let held = index.keys(&m.mem.content);
            (m, held)
        })
        .collect();
    let min_share = super::knob("CMP_BRIDGE_SHARE", BRIDGE_MIN_SHARE);
    let taken = |rid: i64, a: &Anchor, pool: &Pool, out: &[Bridge]| {
        pool.index_of(rid).is_some_and(|i| i == a.item || out.iter().any(|b| b.item == i || b.anchor == i))
    };
    let mut out: Vec<Bridge> = Vec::new();
    for a in &anchors {
        let found =
            rows.iter().find(|(m, held)| a.bridged_by(index, held, min_share) && !taken(m.mem.rid, a, pool, &out));
        if let Some((m, _)) = found {
            out.push(Bridge { anchor: a.item, item: pool.add(m.mem.clone()) });
        }
    }
    Ok(out)
}

/// Appends the entries of `more` that `v` does not hold yet.
fn extend_unique(v: &mut Vec<String>, more: impl IntoIterator<Item = String>) {
    for t in more {
        if !v.contains(&t) {
            v.push(t);
        }
    }
}

/// The term keys held by more than [`BRIDGE_COMMON`] of the full-text matches `fts` (and by more
/// than two): what the matches have in common with each other (the task's subject, a place many
/// facts share) names no one thing.
fn common_terms(index: Index, fts: &[usize], pool: &Pool) -> HashSet<String> {
    let mut df: HashMap<String, usize> = HashMap::default();
    for &i in fts {
        for k in index.keys(&pool.mems[i].content) {
            *df.entry(k).or_default() += 1;
        }
    }
    let limit = (super::knob("CMP_BRIDGE_COMMON", BRIDGE_COMMON) * fts.len() as f64).max(2.0);
    df.into_iter().filter(|(_, n)| *n as f64 > limit).map(|(k, _)| k).collect()
}

/// `fts` with each bridge right after its anchor, unless it already ranks above it. A bridge that is
/// itself an anchor brings its own bridge along; every entry of `fts` and every bridge is kept once.
pub fn place(fts: &[usize], bridges: &[Bridge]) -> Ranking {
    let at = |i: usize| fts.iter().position(|&x| x == i);
    let moved: Vec<&Bridge> = bridges.iter().filter(|b| at(b.item).is_none_or(|p| Some(p) > at(b.anchor))).collect();
    let mut out = Vec::with_capacity(fts.len() + moved.len());
    let mut stack: Vec<usize> = Vec::new();
    for &i in fts.iter().filter(|&&i| !moved.iter().any(|b| b.item == i)) {
        stack.push(i);
        while let Some(j) = stack.pop() {
            if !out.contains(&j) {
                out.push(j);
                stack.extend(moved.iter().rev().filter(|b| b.anchor == j).map(|b| b.item));
            }
        }
    }
    // Only an anchor outside `fts` could leave a bridge out; none is, but nothing is dropped.
    for b in moved {
        if !out.contains(&b.item) {
            out.push(b.item);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::retrieve::testdb::{add, ids, open, query};
    use crate::retrieve::{fts, Terms};

    const AT: &str = "2026-05-01T10:00:00Z";

    /// The full-text ranking and the bridges of `task`, as ids: (anchor, bridge).
    fn bridges(conn: &Connection, task: &str) -> (Vec<String>, Vec<(String, String)>) {
        let q = query(task);
        let terms = Terms::of(task);
        let mut pool = Pool::default();
        let lex = fts::rank(conn, &q, &terms, &mut pool).expect("fts");
        let found = rank(conn, &q, &terms, &lex.ranking, &mut pool).expect("bridges");
        let pairs = found.iter().map(|b| (pool.id(b.anchor).to_string(), pool.id(b.item).to_string())).collect();
        (ids(&pool, &lex.ranking), pairs)
    }

    #[test]
    fn a_bridge_names_what_its_anchor_names_and_holds_what_it_lacks() {
        let conn = open();
        add(&conn, "mem_anchor", "设计总监项目启动会的地点是广东广州。", AT, "episodic", "[]");
        add(&conn, "mem_answer", "我将要参加设计总监项目启动会。", AT, "episodic", "[]");
        add(&conn, "mem_other", "文学创想阅享会的地点是上海。", AT, "episodic", "[]");
        add(&conn, "mem_go", "我将要参加文学创想阅享会。", AT, "episodic", "[]");
        add(&conn, "mem_same", "设计总监项目启动会的规模是三千人。", AT, "episodic", "[]");
        let task = "那个地点是广东广州的活动，我要参加的活动是什么？";
        let (fts, found) = bridges(&conn, task);
        assert_eq!(fts[0], "mem_anchor", "{fts:?}");
        // The answer shares the event's name and holds 参加, which the anchor lacks; the same
        // event's size holds no task term the anchor lacks; the other event's plan shares no name.
        assert_eq!(found[0], ("mem_anchor".to_string(), "mem_answer".to_string()), "{found:?}");
        assert!(found.iter().all(|(_, b)| b != "mem_same" && b != "mem_go"), "{found:?}");
    }

    #[test]
    fn no_bridge_on_one_shared_term_or_for_a_task_in_words() {
        let conn = open();
        add(&conn, "mem_anchor", "我的上司叫刘梓涵。", AT, "episodic", "[]");
        add(&conn, "mem_cousin", "我表姐的名字叫刘伟。", AT, "episodic", "[]");
        // The cousin holds the task's 名字, which the anchor lacks, but shares only 叫刘 of the
        // anchor's five naming pairs: less than half.
        assert!(bridges(&conn, "我的上司名字叫什么？").1.iter().all(|(_, b)| b != "mem_cousin"));
        add(&conn, "mem_en_anchor", "The design kickoff is held in Guangzhou.", AT, "episodic", "[]");
        add(&conn, "mem_en_answer", "I will attend the design kickoff.", AT, "episodic", "[]");
        assert!(bridges(&conn, "Which event in Guangzhou will I attend?").1.is_empty());
    }

    #[test]
    fn place_puts_a_bridge_right_after_its_anchor_unless_it_ranks_above() {
        let b = |anchor, item| Bridge { anchor, item };
        assert_eq!(place(&[1, 2, 3, 4], &[b(1, 9)]), [1, 9, 2, 3, 4], "from outside the ranking");
        assert_eq!(place(&[1, 2, 3, 4], &[b(2, 4)]), [1, 2, 4, 3], "moved up");
        assert_eq!(place(&[1, 2, 3, 4], &[b(3, 1)]), [1, 2, 3, 4], "already above");
        assert_eq!(place(&[1, 2], &[b(1, 7), b(2, 8)]), [1, 7, 2, 8]);
        assert_eq!(place(&[1, 2], &[]), [1, 2]);
        assert_eq!(place(&[1, 2, 3, 4], &[b(1, 3), b(3, 9)]), [1, 3, 9, 2, 4], "a bridge's own bridge follows");
        assert_eq!(place(&[1, 2], &[b(5, 7)]), [1, 2, 7], "nothing dropped");
    }

    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Placing keeps every full-text entry and every bridge exactly once, puts each bridge that
        /// ranked below its anchor (or outside the ranking) after it, and changes nothing else's order.
        #[test]
        fn place_keeps_everything_once(
            n in 1usize..12,
            raw in prop::collection::vec((0usize..12, 0usize..20), 0..6),
        ) {
            let fts: Vec<usize> = (0..n).collect();
            // As rank builds them: one bridge per anchor, anchors in fts, items distinct and not
            // their own anchor.
            let mut bridges: Vec<Bridge> = Vec::new();
            for (a, item) in raw {
                let anchor = a % n;
                if item != anchor && !bridges.iter().any(|b| b.anchor == anchor || b.item == item) {
                    bridges.push(Bridge { anchor, item });
                }
            }
            let out = place(&fts, &bridges);
            let mut want: Vec<usize> = fts.iter().copied().chain(bridges.iter().map(|b| b.item)).collect();
            want.sort_unstable();
            want.dedup();
            let mut got = out.clone();
            got.sort_unstable();
            prop_assert_eq!(&got, &want, "{:?}", out);
            let pos = |i: usize| out.iter().position(|&x| x == i).unwrap();
            for b in &bridges {
                prop_assert!(pos(b.item) > pos(b.anchor) || b.item < n && b.item < b.anchor, "{:?} {:?}", b, out);
            }
            let rest: Vec<usize> = out.iter().copied().filter(|i| !bridges.iter().any(|b| b.item == *i)).collect();
            let fts_rest: Vec<usize> = fts.iter().copied().filter(|i| !bridges.iter().any(|b| b.item == *i)).collect();
            prop_assert_eq!(rest, fts_rest);
        }
    }
}
