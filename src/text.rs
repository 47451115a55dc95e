//! Text primitives shared by retrieval and packing: a tokenizer that mirrors FTS5's
//! `unicode61 remove_diacritics 2`, the Porter stemmer FTS5's `porter` wrapper uses, stopwords,
//! word sets for Jaccard similarity, and sentence/character cuts for the compression ladder.

use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

/// Lowercased, diacritic-free alphanumeric words of `s`, in order.
pub fn words(s: &str) -> Vec<String> {
    if s.is_ascii() {
        // Fast path: no diacritics to strip, ASCII case folding.
        return s
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_ascii_lowercase)
            .collect();
    }
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in s.nfd() {
        if is_combining_mark(c) {
            continue;
        }
        if c.is_alphanumeric() {
            cur.extend(c.to_lowercase());
        } else if !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Words longer than this are not stemmed.
pub const MAX_STEM_BYTES: usize = 64;

/// Porter stem of one lowercase word (the algorithm FTS5's `porter` tokenizer applies).
pub fn stem(word: &str) -> String {
    // Longer than FTS5's porter stemmer handles (it leaves such words alone too); the stemmer's
    // cost grows with the square of the word's length.
    if word.chars().count() <= 2 || word.len() > MAX_STEM_BYTES || !word.is_ascii() {
        return word.to_string();
    }
    porter_stemmer::stem(word)
}

/// English function words that carry no retrieval signal. Dropping them keeps OR-queries selective.
const STOPWORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "nor",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
    "s",
    "t",
    "d",
    "ll",
    "m",
    "re",
    "ve",
    "also",
    "did",
    "does",
    "get",
    "got",
    "let",
    "may",
    "might",
    "must",
    "shall",
    "us",
];

/// True for a word that carries no retrieval signal.
pub fn is_stopword(w: &str) -> bool {
    STOPWORDS.contains(&w)
}

/// Task terms for retrieval: distinct, non-stopword words in first-seen order, at most `cap`.
pub fn query_terms(task: &str, cap: usize) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for w in words(task) {
        if is_stopword(&w) || w.chars().count() > 64 {
            continue;
        }
        if seen.insert(w.clone()) {
            out.push(w);
            if out.len() == cap {
                break;
            }
        }
    }
    out
}

/// 64-bit FNV-1a: a stable hash (identical on every platform and run) for word sets and the
/// hashing embedder.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Sorted, deduplicated hashes of the lowercase alphanumeric words of `s` (Jaccard input).
pub fn word_set(s: &str) -> Vec<u64> {
    let mut v: Vec<u64> = words(s).iter().map(|w| fnv1a(w.as_bytes())).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// Jaccard similarity of two sorted word sets.
pub fn jaccard(a: &[u64], b: &[u64]) -> f64 {
    if a.is_empty() && b.is_empty() {
        return 0.0;
    }
    let (mut i, mut j, mut inter) = (0, 0, 0usize);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                inter += 1;
                i += 1;
                j += 1;
            }
        }
    }
    inter as f64 / (a.len() + b.len() - inter) as f64
}

/// The text up to and including the first `.`, `!` or `?` that is followed by white space; None when
/// there is no such boundary (the whole text is one sentence).
pub fn head_sentence(s: &str) -> Option<&str> {
    let mut it = s.char_indices().peekable();
    while let Some((i, c)) = it.next() {
        if matches!(c, '.' | '!' | '?') {
            if let Some((_, n)) = it.peek() {
                if n.is_whitespace() {
                    let head = s[..i + c.len_utf8()].trim();
                    return if head.is_empty() { None } else { Some(head) };
                }
            }
        }
    }
    None
}

/// The first `max_chars` Unicode scalar values of `s`, ending in `…` when cut.
pub fn truncate_chars(s: &str, max_chars: usize) -> String {
    // Only the first max_chars + 1 characters are looked at, however long `s` is.
    if max_chars == 0 {
        return String::new();
    }
    // Byte offsets of the characters at positions max_chars - 1 and max_chars.
    let mut ends = s.char_indices().map(|(i, _)| i).skip(max_chars - 1);
    let (Some(keep), Some(_)) = (ends.next(), ends.next()) else {
        return s.to_string();
    };
    let mut out = s[..keep].to_string();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizes_like_unicode61() {
        assert_eq!(words("Zoë's café, AND (NEAR) x*"), vec!["zoe", "s", "cafe", "and", "near", "x"]);
        assert!(words("🙂 — ").is_empty());
    }

    #[test]
    fn stems_like_porter() {
        assert_eq!(stem("atlas"), "atla");
        assert_eq!(stem("launching"), "launch");
        assert_eq!(stem("readiness"), "readi");
    }

    #[test]
    fn query_terms_drop_stopwords_and_repeats() {
        assert_eq!(query_terms("What is the Atlas launch? the atlas", 10), vec!["atlas", "launch"]);
    }

    #[test]
    fn jaccard_and_heads() {
        let a = word_set("the cat sat");
        let b = word_set("The cat sat!");
        assert!((jaccard(&a, &b) - 1.0).abs() < 1e-12);
        assert_eq!(head_sentence("One. Two."), Some("One."));
        assert_eq!(head_sentence("v1.2 is out"), None);
        assert_eq!(truncate_chars("abcdef", 4), "abc…");
        assert_eq!(truncate_chars("abcde", 4), "abc…");
        assert_eq!(truncate_chars("abcd", 4), "abcd");
        assert_eq!(truncate_chars("ééééé", 3), "éé…");
        assert_eq!(truncate_chars("abc", 0), "");
    }
}
