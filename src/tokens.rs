//! Counting tokens the way the reading model does. A pack's budget bounds what the model reads, so
//! every cost in packing and the envelope's `budget.used` come from a [`Counter`]:
//!
//! - gpt-family models are counted exactly with OpenAI's own tables (`o200k_base` for gpt-4o, o1, o3,
//!   gpt-4.1, gpt-5 and bare "gpt"/"openai"; `cl100k_base` for gpt-4 and gpt-3.5), embedded by
//!   `tiktoken-rs`;
//! - every other model gets a calibrated estimate ([`estimate`]): a one-pass count of the pieces a
//!   byte-pair tokenizer splits text into (words, digit groups, punctuation runs, CJK characters),
//!   scaled so that on real chat text and on rendered packs it does not undercount `o200k_base` by
//!   more than 2 % (BENCHMARKS.md, "Token counting").
//!
//! Counts are cached per thread by text hash: the same memory is counted once, not on every call
//! (or every packing round) that considers it. A text not seen before is counted piece by piece ([`pieces`]): its words
//! are looked up, and only a piece no text had before is byte-pair encoded.

mod pieces;

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use tiktoken_rs::CoreBPE;

/// How a profile counts tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counter {
    /// OpenAI `o200k_base`, exact.
    O200k,
    /// OpenAI `cl100k_base`, exact.
    Cl100k,
    /// The calibrated estimate.
    Estimate,
}

/// Multiplier of the raw piece count (see [`estimate`]). Calibrated on LoCoMo, realtalk-dev and
/// memdaily-dev text and on rendered packs of all three formats: the smallest ratio estimate/o200k
/// over every harness pack stays above 0.98 (BENCHMARKS.md, "Token counting").
pub const ESTIMATE_SCALE: f64 = 1.12;

/// Cached counts before the cache is cleared (a bound on memory, not a tuning knob).
const CACHE_ENTRIES: usize = 1 << 16;

/// Raw weight of a character of a script written without spaces (o200k: about 0.8 tokens each on
/// Chinese chat text).
const DENSE_WEIGHT: f64 = 0.85;

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

    fn bpe(self) -> Option<&'static CoreBPE> {
        match self {
            Counter::O200k => Some(tiktoken_rs::o200k_base_singleton()),
            Counter::Cl100k => Some(tiktoken_rs::cl100k_base_singleton()),
            Counter::Estimate => None,
        }
    }

    /// Tokens of `text` (0 for the empty text).
    pub fn count(self, text: &str) -> usize {
        match self.bpe() {
            None => cached(self, text, || estimate(text)),
            Some(bpe) => cached(self, text, || pieces::count(self.encoding(), text, |p| bpe.encode_ordinary(p).len())),
        }
    }

    fn encoding(self) -> pieces::Encoding {
        match self {
            Counter::Cl100k => pieces::Encoding::Cl100k,
            _ => pieces::Encoding::O200k,
        }
    }

    /// Tokens of `text`, or any number above `cap` when it has more: a text far longer than any
    /// budget is only counted on a prefix.
    pub fn count_capped(self, text: &str, cap: usize) -> usize {
        let limit = cap.saturating_add(1).saturating_mul(MAX_BYTES_PER_TOKEN);
        // Ordinary text has a few bytes per token: count growing prefixes first, so a long text is
        // not counted on 64 bytes per allowed token every time it is cut.
        let mut bytes = cap.saturating_add(1).saturating_mul(FIRST_BYTES_PER_TOKEN);
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
        let mut cut = match self.bpe() {
            None => estimate_prefix(text, room).to_string(),
            Some(bpe) => bpe_prefix(bpe, text, room),
        };
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

/// The largest char boundary of `text` at or below `i`.
fn floor_boundary(text: &str, i: usize) -> usize {
    let mut end = i.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    end
}

fn bpe_prefix(bpe: &CoreBPE, text: &str, room: usize) -> String {
    let limit = text.len().min(room.saturating_add(1).saturating_mul(MAX_BYTES_PER_TOKEN));
    // Encode growing prefixes until one holds more than `room` tokens (or the limit is reached).
    let mut bytes = room.saturating_add(1).saturating_mul(FIRST_BYTES_PER_TOKEN);
    let toks = loop {
        let end = floor_boundary(text, bytes.min(limit));
        let toks = bpe.encode_ordinary(&text[..end]);
        if toks.len() > room || end >= limit {
            break toks;
        }
        bytes = bytes.saturating_mul(2);
    };
    let bytes = bpe.decode_bytes(&toks[..room.min(toks.len())]).unwrap_or_default();
    let valid = match std::str::from_utf8(&bytes) {
        Ok(s) => s.len(),
        Err(e) => e.valid_up_to(),
    };
    String::from_utf8_lossy(&bytes[..valid]).into_owned()
}

thread_local! {
    /// Counts by (counter, text hash), one map per thread: no lock on the hot path.
    static CACHE: RefCell<HashMap<(u8, u64), u32>> = RefCell::new(HashMap::new());
}

fn cached(counter: Counter, text: &str, count: impl FnOnce() -> usize) -> usize {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    let key = (counter as u8, h.finish());
    if let Some(n) = CACHE.with(|c| c.borrow().get(&key).copied()) {
        return n as usize;
    }
    let n = count();
    CACHE.with(|c| {
        let mut map = c.borrow_mut();
        if map.len() >= CACHE_ENTRIES {
            map.clear();
        }
        map.insert(key, n.min(u32::MAX as usize) as u32);
    });
    n
}

/// What a character is to a byte-pair pre-tokenizer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Letter,
    Digit,
    Space,
    Newline,
    /// Han, kana, Hangul, Thai and similar: text written without spaces, about a token a character.
    Dense,
    /// Emoji and other symbols outside the Basic Multilingual Plane's letters: several bytes each.
    Symbol,
    Punct,
}

fn class(c: char) -> Class {
    if c == '\n' || c == '\r' {
        Class::Newline
    } else if c.is_whitespace() {
        Class::Space
    } else if c.is_ascii_digit() {
        Class::Digit
    } else if c.is_ascii_alphabetic() {
        Class::Letter
    } else if c.is_ascii() {
        Class::Punct
    } else if is_dense(c) {
        Class::Dense
    } else if c.is_alphabetic() || c.is_numeric() {
        Class::Letter
    } else if (c as u32) >= 0x2000 {
        Class::Symbol
    } else {
        Class::Punct
    }
}

/// Scripts written without spaces between words (Han, kana, Hangul, Thai, Lao, Khmer, Myanmar).
fn is_dense(c: char) -> bool {
    matches!(c as u32,
        0x0E00..=0x0EFF | 0x1000..=0x109F | 0x1780..=0x17FF | 0x1100..=0x11FF | 0x2E80..=0x2FDF
        | 0x3040..=0x30FF | 0x3100..=0x31FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xA960..=0xA97F
        | 0xAC00..=0xD7FF | 0xF900..=0xFAFF | 0xFF00..=0xFFEF | 0x20000..=0x3134F)
}

/// Raw piece weights, in tokens, modelled on how a byte-pair tokenizer splits text: a word (with the
/// space or the single punctuation mark before it) is one piece, plus a little for long words,
/// case changes inside a word (identifiers, base64) and letters outside ASCII; digits go in groups
/// of three; punctuation runs merge in threes (`","`, `":"`); an apostrophe inside a word starts
/// its suffix (`'re`, `'s`).
#[derive(Default)]
struct Tally {
    total: f64,
    prev: Option<Class>,
    prev_char: char,
    run: usize,
}

impl Tally {
    fn push(&mut self, c: char) {
        let k = class(c);
        let same = self.prev == Some(k);
        let prev_run = self.run;
        self.run = if same { self.run + 1 } else { 1 };
        self.total += match k {
            Class::Letter if same => {
                let mut w = if !c.is_ascii() {
                    0.45
                } else if self.run > 8 {
                    0.2
                } else {
                    0.0
                };
                let switch = (c.is_ascii_uppercase() && self.prev_char.is_ascii_lowercase())
                    || (c.is_ascii_alphabetic() && self.prev_char.is_ascii_digit());
                if switch {
                    w += 0.7;
                }
                w
            }
            // A word right after one punctuation mark shares its piece ("ref, 'Caroline).
            Class::Letter if self.prev == Some(Class::Punct) && prev_run == 1 => 0.5,
            Class::Letter => 1.0,
            Class::Digit if same => {
                if self.run % 3 == 1 {
                    1.0
                } else {
                    0.0
                }
            }
            Class::Digit => 1.0,
            Class::Space if same => {
                if self.run % 4 == 0 {
                    1.0
                } else {
                    0.0
                }
            }
            Class::Space => 0.0,
            Class::Newline if same => 0.0,
            Class::Newline => 1.0,
            Class::Dense => DENSE_WEIGHT,
            Class::Symbol => 2.0,
            Class::Punct if same => {
                if self.run % 3 == 1 {
                    1.0
                } else {
                    0.0
                }
            }
            Class::Punct => 1.0,
        };
        self.prev = Some(k);
        self.prev_char = c;
    }

    fn tokens(&self) -> usize {
        (self.total * ESTIMATE_SCALE).ceil() as usize
    }
}

/// The calibrated estimate of `text`'s tokens (0 for the empty text): the sum over its lines (each
/// with its newline), so the estimate of texts joined by newlines is the sum of their estimates, as
/// a byte-pair count is.
pub fn estimate(text: &str) -> usize {
    let mut sum = 0;
    let mut t = Tally::default();
    for c in text.chars() {
        t.push(c);
        if c == '\n' {
            sum += t.tokens();
            t = Tally::default();
        }
    }
    sum + t.tokens()
}

/// The longest prefix of `text` whose estimate is at most `max`.
fn estimate_prefix(text: &str, max: usize) -> &str {
    let mut sum = 0;
    let mut t = Tally::default();
    for (i, c) in text.char_indices() {
        t.push(c);
        if sum + t.tokens() > max {
            return &text[..i];
        }
        if c == '\n' {
            sum += t.tokens();
            t = Tally::default();
        }
    }
    text
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
    fn estimate_grows_with_text() {
        assert_eq!(estimate(""), 0);
        assert!(estimate("北京出差") >= 4);
        assert!(estimate("a much longer sentence than that") > estimate("short"));
    }

    #[test]
    fn huge_texts_are_counted_on_a_prefix() {
        let big = "word ".repeat(200_000);
        assert!(Counter::O200k.count_capped(&big, 100) > 100);
        assert!(Counter::Estimate.count_capped(&big, 100) > 100);
    }
}
