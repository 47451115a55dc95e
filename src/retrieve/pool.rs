//! The candidate pool of one retrieval: every memory any retriever found, once, by rid. Rankings are
//! lists of pool indexes, best first. The pool caches what several retrievers need per memory (its
//! analysed words, its hashing-embedder cosine to the task) so each is computed once per call; a
//! memory's analysis, which depends on its text alone, is also kept across calls ([`Analysis`]).

use super::vector::{self, Word};
use crate::store::Memory;
use crate::text;
use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;

/// What retrieval derives from a memory's text alone: its analysed words, in order, and its
/// hashing embedding (computed when first asked for). The same text gets the same analysis on every
/// call, so a thread keeps the analyses of the texts it met last ([`Analysis::of`]): a memory that
/// is a candidate again is not split, looked up word by word and embedded again.
#[derive(Debug)]
pub struct Analysis {
    words: Vec<Rc<Word>>,
    embedding: OnceCell<Vec<f32>>,
}

/// Analyses in each of the cache's two generations (a bound on memory, not a tuning knob).
const ANALYSIS_ENTRIES: usize = 1 << 12;
/// Texts longer than this are analysed on every call, not kept (the cache's bound on memory).
const ANALYSIS_MAX_BYTES: usize = 4096;

/// The analyses a thread keeps, by text: two generations, as the count cache (`tokens.rs`): a new
/// analysis goes into the current one; when it is full it becomes the old one and the older is
/// dropped, and an analysis found in the old one moves back. Keyed by the text itself, hashed with a
/// randomly keyed SipHash (stored texts could otherwise be crafted to share a bucket).
#[derive(Default)]
struct Analyses {
    current: HashMap<String, Rc<Analysis>>,
    old: HashMap<String, Rc<Analysis>>,
}

thread_local! {
    static ANALYSES: RefCell<Analyses> = RefCell::default();
}

impl Analysis {
    fn new(content: &str) -> Analysis {
        Analysis { words: text::map_words(content, Word::cached), embedding: OnceCell::new() }
    }

    /// The analysis of `content`: kept from an earlier call, or made now (and kept).
    pub fn of(content: &str) -> Rc<Analysis> {
        if content.len() > ANALYSIS_MAX_BYTES {
            return Rc::new(Analysis::new(content));
        }
        ANALYSES.with(|c| {
            let mut c = c.borrow_mut();
            if let Some(a) = c.current.get(content) {
                return a.clone();
            }
            let a = c.old.remove(content).unwrap_or_else(|| Rc::new(Analysis::new(content)));
            if c.current.len() >= ANALYSIS_ENTRIES {
                c.old = std::mem::take(&mut c.current);
            }
            c.current.insert(content.to_string(), a.clone());
            a
        })
    }

    /// The analysed words, in order.
    pub fn words(&self) -> &[Rc<Word>] {
        &self.words
    }

    /// The hashing embedding of the words ([`vector::embed_words`]).
    pub fn embedding(&self) -> &[f32] {
        self.embedding.get_or_init(|| vector::embed_words(&self.words))
    }
}

/// Pool indexes, best first: what every retriever returns.
pub type Ranking = Vec<usize>;

/// The memories found so far, with per-call caches.
#[derive(Debug, Default)]
pub struct Pool {
    /// The memories, in the order they were first found.
    pub mems: Vec<Memory>,
    by_rid: HashMap<i64, usize>,
    /// The analysis of each memory's content, looked up once per call.
    analysed: Vec<Option<Rc<Analysis>>>,
    /// Hashing-embedder cosine to the task, computed once per call.
    cos: Vec<Option<f32>>,
}

impl Pool {
    /// Adds `m` (or finds it, by rid) and returns its index.
    pub fn add(&mut self, m: Memory) -> usize {
        if let Some(&i) = self.by_rid.get(&m.rid) {
            return i;
        }
        self.by_rid.insert(m.rid, self.mems.len());
        self.mems.push(m);
        self.analysed.push(None);
        self.cos.push(None);
        self.mems.len() - 1
    }

    /// The index of the memory with this rid, if pooled.
    pub fn index_of(&self, rid: i64) -> Option<usize> {
        self.by_rid.get(&rid).copied()
    }

    /// Number of pooled memories.
    pub fn len(&self) -> usize {
        self.mems.len()
    }

    /// True when nothing was found.
    pub fn is_empty(&self) -> bool {
        self.mems.is_empty()
    }

    /// The analysis of memory `i`'s content.
    fn analysis(&mut self, i: usize) -> &Analysis {
        let mems = &self.mems;
        self.analysed[i].get_or_insert_with(|| Analysis::of(&mems[i].content))
    }

    /// The analysed words of memory `i`'s content, in order.
    pub fn analysed(&mut self, i: usize) -> &[Rc<Word>] {
        self.analysis(i).words()
    }

    /// Hashing-embedder cosine of memory `i` to the task embedding `task`.
    pub fn cosine(&mut self, i: usize, task: &[f32]) -> f32 {
        if let Some(c) = self.cos[i] {
            return c;
        }
        let c = vector::cosine(task, self.analysis(i).embedding());
        self.cos[i] = Some(c);
        c
    }

    /// The id of memory `i` (the tie-break of every ranking).
    pub fn id(&self, i: usize) -> &str {
        &self.mems[i].id
    }

    /// When memory `i` happened (occurred_at, else captured_at): the recency order.
    pub fn when(&self, i: usize) -> &str {
        self.mems[i].occurred_at.as_deref().unwrap_or(&self.mems[i].captured_at)
    }

    /// The pooled memories, by index.
    pub fn into_memories(self) -> Vec<Memory> {
        self.mems
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_analysis_is_the_texts_and_is_kept() {
        let text = "Melanie painted a sunrise at the lake";
        let a = Analysis::of(text);
        assert!(Rc::ptr_eq(&a, &Analysis::of(text)), "the same text is analysed once");
        let words: Vec<Rc<Word>> = text::map_words(text, Word::cached);
        assert_eq!(a.words(), &words[..]);
        assert_eq!(a.embedding(), &vector::hash_embed(text)[..]);
        let long = "word ".repeat(ANALYSIS_MAX_BYTES);
        assert!(!Rc::ptr_eq(&Analysis::of(&long), &Analysis::of(&long)), "a long text is not kept");
    }

    #[test]
    fn the_analysis_cache_is_bounded_and_keeps_what_is_met_again() {
        let kept = Analysis::of("a text asked for on every call");
        for k in 0..3 * ANALYSIS_ENTRIES {
            Analysis::of(&format!("text number {k}"));
            if k % 1000 == 0 {
                assert!(Rc::ptr_eq(&kept, &Analysis::of("a text asked for on every call")));
            }
        }
        ANALYSES.with(|c| {
            let c = c.borrow();
            assert!(c.current.len() <= ANALYSIS_ENTRIES && c.old.len() <= ANALYSIS_ENTRIES);
        });
    }
}
