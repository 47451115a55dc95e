//! The candidate pool of one retrieval: every memory any retriever found, once, by rid. Rankings are
//! lists of pool indexes, best first. The pool caches what several retrievers need per memory (its
//! analysed words and word count, its hashing-embedder cosine to the task) so each is computed once
//! per call.

use super::vector::{self, Word};
use crate::store::Memory;
use crate::text;
use std::collections::HashMap;
use std::rc::Rc;

/// Pool indexes, best first: what every retriever returns.
pub type Ranking = Vec<usize>;

/// Words of a memory the pool analyses (what the hashing embedder and the time prior read): its
/// first 256, as the sentence model reads a text's first 256 word pieces. Analysing a word is the
/// costly step of a call over long texts (300 memories of 2000 random Han characters, 2000 words
/// each: about 0.6 s a call before the cut); chat messages and notes are far shorter, and a long
/// text's matched terms are still read from all of it (`fuse::matched_terms`).
pub const ANALYSED_WORDS: usize = 256;

/// A memory's analysed words ([`ANALYSED_WORDS`] at most), and how many words its text has in all.
#[derive(Debug)]
struct Analysis {
    words: Vec<Rc<Word>>,
    total: usize,
}

impl Analysis {
    fn of(content: &str) -> Analysis {
        let (words, total) = text::map_words_upto(content, ANALYSED_WORDS, Word::cached);
        Analysis { words, total }
    }
}

/// The memories found so far, with per-call caches.
#[derive(Debug, Default)]
pub struct Pool {
    /// The memories, in the order they were first found.
    pub mems: Vec<Memory>,
    by_rid: HashMap<i64, usize>,
    /// The analysis of each memory's content, computed once per call.
    analysed: Vec<Option<Analysis>>,
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

    /// The analysed words of memory `i`'s content, in order: its first [`ANALYSED_WORDS`].
    pub fn analysed(&mut self, i: usize) -> &[Rc<Word>] {
        self.text_of(i).0
    }

    /// How many words memory `i`'s content has (all of them, analysed or not).
    pub fn word_count(&mut self, i: usize) -> usize {
        self.text_of(i).1
    }

    /// Memory `i`'s analysed words, its word count and its content (analysed on first use).
    pub fn text_of(&mut self, i: usize) -> (&[Rc<Word>], usize, &str) {
        let content = self.mems[i].content.as_str();
        let a = self.analysed[i].get_or_insert_with(|| Analysis::of(content));
        (&a.words, a.total, content)
    }

    /// Hashing-embedder cosine of memory `i` to the task embedding `task`.
    pub fn cosine(&mut self, i: usize, task: &[f32]) -> f32 {
        if let Some(c) = self.cos[i] {
            return c;
        }
        let c = vector::cosine(task, &vector::embed_words(self.analysed(i)));
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
