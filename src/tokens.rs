//! Counting tokens the way the reading model does. A pack's budget bounds what the model reads, so
//! every cost in packing and the envelope's `budget.used` come from a [`Counter`]:
//!
//! - gpt-family models are counted exactly with OpenAI's own tables (`o200k_base` for gpt-4o, o1, o3,
//!   gpt-4.1, gpt-5 and bare "gpt"/"openai"; `cl100k_base` for gpt-4 and gpt-3.5), laid out from
//!   `tiktoken-rs` at build time and byte-pair encoded by `bpe`;
//! - every other model (claude, cursor, generic) gets an estimate: its tokenizer is not public, so
//!   the count is `o200k_base`'s, the table the project calibrates against (it never undercounts
//!   `o200k_base`; an earlier heuristic overcounted chat text by 14-18 % and Chinese by 21 %, which
//!   cost budget). The envelope says `counted_by: "estimate"`.
//!
//! Counts are cached per thread by text hash (randomly keyed per process): the same memory is counted once, not on every call
//! (or every packing round) that considers it. A text not seen before is counted piece by piece
//! (`pieces`): its words are looked up, and only a piece no text had before is byte-pair encoded.
//! A text that differs from call to call only in a number is counted as parts cut around it
//! ([`Counter::count_parts`]), each cached on its own.

mod bpe;
mod pieces;

use bpe::Table;
use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::BuildHasher;

/// How a profile counts tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counter {
    /// OpenAI `o200k_base`, exact.
    O200k,
    /// OpenAI `cl100k_base`, exact.
    Cl100k,
    /// An estimate for a model whose tokenizer is not public: `o200k_base`'s count.
    Estimate,
}

/// Counts in each of the cache's two generations (a bound on memory, not a tuning knob).
const CACHE_ENTRIES: usize = 1 << 16;

/// Bytes per allowed token of the first prefix a long text is counted on (then doubled up to
/// [`MAX_BYTES_PER_TOKEN`]): a speed knob, not a bound.
const FIRST_BYTES_PER_TOKEN: usize = 8;

/// Texts longer than this many bytes per allowed token are counted on a prefix only: they cannot fit.
const MAX_BYTES_PER_TOKEN: usize = 64;

impl Counter {
    /// The counter for a model string: exact for gpt-family names, the estimate otherwise.
    pub fn for_model(model: Option<&str>, profile_name: &str) -> Counter {
        if profile_name != "gpt" {
            return Counter::Estimate;
        }
        let lower = model.unwrap_or("").to_lowercase();
        let tokens: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).filter(|t| !t.is_empty()).collect();
        // gpt-4 / gpt-3.5 (gpt-35) families use cl100k_base; gpt-4o, gpt-4.1, o1, o3, gpt-5 use o200k.
        for (i, t) in tokens.iter().enumerate() {
            if *t == "gpt" || *t == "chatgpt" {
                let next = tokens.get(i + 1).copied().unwrap_or("");
                let after = tokens.get(i + 2).copied().unwrap_or("");
                let cl = match next {
                    "3" | "35" => true,
                    "4" => !(after == "1" || after.starts_with('o') || after == "5"),
                    _ => next.starts_with("35") || next.starts_with("3"),
                };
                if cl && next != "4o" {
                    return Counter::Cl100k;
                }
            }
        }
        Counter::O200k
    }

    /// The name the envelope reports in `budget.counted_by`.
    pub fn name(self) -> &'static str {
        match self {
            Counter::O200k => "o200k_base",
            Counter::Cl100k => "cl100k_base",
            Counter::Estimate => "estimate",
        }
    }

    /// The table that counts: the estimate counts with `o200k_base`'s.
    fn encoding(self) -> pieces::Encoding {
        match self {
            Counter::Cl100k => pieces::Encoding::Cl100k,
            Counter::O200k | Counter::Estimate => pieces::Encoding::O200k,
        }
    }

    fn bpe(self) -> &'static Table {
        match self.encoding() {
            pieces::Encoding::O200k => bpe::o200k(),
            pieces::Encoding::Cl100k => bpe::cl100k(),
        }
    }

    /// Tokens of `text` (0 for the empty text).
    pub fn count(self, text: &str) -> usize {
        let (enc, bpe) = (self.encoding(), self.bpe());
        cached(enc, text, || pieces::count(enc, text, |p| bpe.encode(p).len()))
    }

    /// Tokens of `parts` written one after another. When every junction is one no piece crosses
    /// (`pieces::splits_between`) this is the sum of the parts' counts, each cached on its own, so a
    /// text that differs from one call to the next only in a number costs lookups, not a count;
    /// otherwise it is the whole's count.
    pub fn count_parts(self, parts: &[&str]) -> usize {
        if parts.windows(2).all(|w| pieces::splits_between(w[0], w[1])) {
            return parts.iter().map(|p| self.count(p)).sum();
        }
        self.count(&parts.concat())
    }

    /// Tokens of `text`, or any number above `cap` when it has more: a text far longer than any
    /// budget is only counted on a prefix.
    pub fn count_capped(self, text: &str, cap: usize) -> usize {
        let limit = quantised(cap.saturating_add(1).saturating_mul(MAX_BYTES_PER_TOKEN));
        // Ordinary text has a few bytes per token: count growing prefixes first, so a long text is
        // not counted on 64 bytes per allowed token every time it is cut.
        let mut bytes = quantised(cap.saturating_add(1).saturating_mul(FIRST_BYTES_PER_TOKEN));
        while bytes < limit && bytes < text.len() {
            let n = self.count(&text[..floor_boundary(text, bytes)]);
            if n > cap {
                return n;
            }
            bytes = bytes.saturating_mul(2);
        }
        if text.len() <= limit {
            return self.count(text);
        }
        self.count(&text[..floor_boundary(text, limit)]).max(cap + 1)
    }

    /// The longest prefix of `text` that costs at most `max` tokens, ending in `…` when cut (the
    /// ellipsis is counted).
    pub fn truncate(self, text: &str, max: usize) -> String {
        if self.count_capped(text, max) <= max {
            return text.to_string();
        }
        let room = max.saturating_sub(1);
        if room == 0 {
            return String::new();
        }
        let mut cut = bpe_prefix(self.encoding(), self.bpe(), text, room);
        // Re-encoding a cut can merge differently: shorten until the cut and its ellipsis fit.
        loop {
            let with = format!("{cut}…");
            if self.count(&with) <= max || cut.is_empty() {
                return if cut.is_empty() { String::new() } else { with };
            }
            let mut end = cut.len() - 1;
            while !cut.is_char_boundary(end) {
                end -= 1;
            }
            cut.truncate(end);
        }
    }
}

/// `bytes` rounded up to a power of two. The prefixes a long text is counted or cut on are then the
/// same for every cap and room, so a piece of megabytes (a run without spaces) is byte-pair encoded
/// once per length and then found in the recent pieces' cache, not once per growth step of a pack
/// (94 steps of 128 tokens up to claude's 12,000 took 46 s for one such memory).
fn quantised(bytes: usize) -> usize {
    bytes.checked_next_power_of_two().unwrap_or(usize::MAX)
}

/// The largest char boundary of `text` at or below `i`.
fn floor_boundary(text: &str, i: usize) -> usize {
    let mut end = i.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    end
}

/// The longest prefix of `text` that holds at most `room` tokens, cut between tokens.
fn bpe_prefix(enc: pieces::Encoding, bpe: &Table, text: &str, room: usize) -> String {
    let limit = floor_boundary(text, quantised(room.saturating_add(1).saturating_mul(MAX_BYTES_PER_TOKEN)));
    pieces::prefix(enc, &text[..limit], room, |p| bpe.encode(p).len(), |p| bpe.encode(p), |t| bpe.decode(t))
}

/// The count cache of one thread: two generations. A new count goes into the current one; when it is
/// full it becomes the old one and the older is dropped, and a count found in the old one moves back
/// into the current one. Texts counted once and never again (a unit holding one call's relevance)
/// pass through, while the texts every call meets (a memory's content, its ref) stay: with one map
/// emptied when full, every few hundred calls lost those too, and the next calls counted them again.
#[derive(Default)]
struct Counts {
    current: HashMap<(u8, u64), u32, rustc_hash::FxBuildHasher>,
    old: HashMap<(u8, u64), u32, rustc_hash::FxBuildHasher>,
}

impl Counts {
    fn get(&mut self, key: (u8, u64)) -> Option<u32> {
        if let Some(&n) = self.current.get(&key) {
            return Some(n);
        }
        let n = self.old.remove(&key)?;
        self.put(key, n);
        Some(n)
    }

    fn put(&mut self, key: (u8, u64), n: u32) {
        if self.current.len() >= CACHE_ENTRIES {
            self.old = std::mem::take(&mut self.current);
        }
        self.current.insert(key, n);
    }
}

thread_local! {
    /// Counts by (encoding, text hash), one cache per thread: no lock on the hot path. The key is
    /// already a keyed hash, so the maps hash it with Fx rather than SipHash a second time.
    static CACHE: RefCell<Counts> = RefCell::new(Counts::default());
}

/// The cache's text hash: SipHash with keys drawn at random once per process (`DefaultHasher::new()`
/// has fixed, public keys, so stored texts could be crafted to share a hash, and so a count).
fn text_hash(text: &str) -> u64 {
    static KEYS: std::sync::OnceLock<std::collections::hash_map::RandomState> = std::sync::OnceLock::new();
    KEYS.get_or_init(Default::default).hash_one(text)
}

fn cached(enc: pieces::Encoding, text: &str, count: impl FnOnce() -> usize) -> usize {
    let key = (enc as u8, text_hash(text));
    if let Some(n) = CACHE.with(|c| c.borrow_mut().get(key)) {
        return n as usize;
    }
    let n = count();
    CACHE.with(|c| c.borrow_mut().put(key, n.min(u32::MAX as usize) as u32));
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpt_names_pick_their_encoding() {
        for (model, want) in [
            ("gpt-4o", Counter::O200k),
            ("gpt-4o-mini", Counter::O200k),
            ("gpt-4.1", Counter::O200k),
            ("gpt-5", Counter::O200k),
            ("o1-preview", Counter::O200k),
            ("o3", Counter::O200k),
            ("openai", Counter::O200k),
            ("gpt-4", Counter::Cl100k),
            ("gpt-4-turbo", Counter::Cl100k),
            ("gpt-3.5-turbo", Counter::Cl100k),
            ("gpt-35-turbo", Counter::Cl100k),
            ("chatgpt-4o-latest", Counter::O200k),
        ] {
            assert_eq!(Counter::for_model(Some(model), "gpt"), want, "{model}");
        }
        assert_eq!(Counter::for_model(Some("claude-3-5-sonnet"), "claude"), Counter::Estimate);
        assert_eq!(Counter::for_model(None, "generic"), Counter::Estimate);
    }

    #[test]
    fn exact_counts_match_the_tables() {
        assert_eq!(Counter::O200k.count(""), 0);
        assert_eq!(Counter::O200k.count("hello world"), 2);
        assert_eq!(Counter::Cl100k.count("hello world"), 2);
    }

    #[test]
    fn truncation_fits_and_marks_the_cut() {
        let text = "Caroline went to the LGBTQ support group yesterday and it was powerful. ".repeat(20);
        for c in [Counter::O200k, Counter::Cl100k, Counter::Estimate] {
            for max in [1, 2, 5, 17, 60] {
                let t = c.truncate(&text, max);
                assert!(c.count(&t) <= max, "{c:?} {max}: {t:?}");
                assert!(t.is_empty() || t.ends_with('…'));
                assert!(text.starts_with(t.trim_end_matches('…')));
            }
            assert_eq!(c.truncate("short", 50), "short");
        }
    }

    #[test]
    fn parts_count_as_their_whole() {
        let cases: [&[&str]; 4] = [
            &["\"layer\":\"facts\",\"relevance\":", "0.512114", ",\"relevance_basis\":\"rrf\",\"why\":null},\n"],
            &["\"relevance\":", "1", "}"],
            &["a ", "5", "b"],
            &["x  ", "1"],
        ];
        for parts in cases {
            for c in [Counter::O200k, Counter::Cl100k, Counter::Estimate] {
                assert_eq!(c.count_parts(parts), c.count(&parts.concat()), "{c:?} {parts:?}");
            }
        }
    }

    #[test]
    fn the_estimate_counts_with_o200k() {
        for text in ["", "北京出差", "Caroline: I'm going to the LGBTQ support group — it's so powerful!"] {
            assert_eq!(Counter::Estimate.count(text), Counter::O200k.count(text), "{text:?}");
        }
        assert_eq!(
            Counter::Estimate.truncate("one two three four five", 3),
            Counter::O200k.truncate("one two three four five", 3)
        );
    }

    #[test]
    fn the_count_cache_keeps_what_is_met_again_and_bounds_its_size() {
        let mut c = Counts::default();
        c.put((0, 1), 7);
        for k in 2..(CACHE_ENTRIES as u64 + 2) {
            c.put((0, k), 1);
            if k % 1000 == 0 {
                assert_eq!(c.get((0, 1)), Some(7), "a count met again survives the turnover");
            }
        }
        assert!(c.current.len() <= CACHE_ENTRIES && c.old.len() <= CACHE_ENTRIES);
        assert_eq!(c.get((1, 1)), None);
    }

    #[test]
    fn huge_texts_are_counted_on_a_prefix() {
        let big = "word ".repeat(200_000);
        assert!(Counter::O200k.count_capped(&big, 100) > 100);
        assert!(Counter::Estimate.count_capped(&big, 100) > 100);
    }
}
