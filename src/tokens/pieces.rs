//! Exact byte-pair counts without a backtracking regex. An OpenAI encoding splits text into pieces
//! with a regex and byte-pair encodes each piece on its own, so a text's count is the sum of its
//! pieces' counts. Their patterns need `fancy-regex` for one look-ahead, `\s+(?!\S)` (a run of spaces
//! leaves its last space to the word after it), and matching them was most of the time of counting.
//! Here the pattern has `\s+` in that place, matched by the `regex` crate's automata, and such a run
//! is shortened by hand; each distinct piece (up to 64 bytes) is encoded once per thread and then
//! looked up.
//!
//! Possessive quantifiers in `cl100k_base` (`?+`, `++`, `*+`, `{1,3}+`) are plain greedy ones here:
//! in that pattern no match a possessive quantifier refuses is one a greedy one would find.

use regex::Regex;
use rustc_hash::FxHasher;
use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::sync::OnceLock;

/// `o200k_base`'s pattern, look-ahead removed (its `\s+(?!\S)|\s+` is `\s+`).
const O200K: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|\p{N}{1,3}",
    r"| ?[^\s\p{L}\p{N}]+[\r\n/]*",
    r"|\s*[\r\n]+",
    r"|\s+",
);

/// `cl100k_base`'s pattern, look-ahead removed (its `\s+(?!\S)|\s` is `\s+`), quantifiers greedy.
const CL100K: &str =
    r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s+$|\s*[\r\n]|\s+";

/// The most memory the patterns' lazy DFA may keep per thread (the `regex` crate's default is 2 MiB),
/// a bound, not a knob: it grows only with the states a text needs. A long run of letters of many
/// scripts (Latin, Cyrillic, Han mixed at random) needs more states than 2 MiB holds, and the DFA then
/// clears its memory and builds them again at every few bytes: 1 MB of such text took 7.7 s to count
/// and 16 s to pack for claude, 0.04 s and 0.7 s with this bound (SECURITY.md, section 5).
const DFA_CACHE_BYTES: usize = 16 << 20;

/// Distinct pieces remembered per thread before the memory is cleared (a bound, not a knob).
const PIECES: usize = 1 << 17;

/// The two encodings counted exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    O200k,
    Cl100k,
}

impl Encoding {
    fn pattern(self) -> &'static Regex {
        static O: OnceLock<Regex> = OnceLock::new();
        static C: OnceLock<Regex> = OnceLock::new();
        let (cell, src) = match self {
            Encoding::O200k => (&O, O200K),
            Encoding::Cl100k => (&C, CL100K),
        };
        cell.get_or_init(|| {
            regex::RegexBuilder::new(src)
                .dfa_size_limit(DFA_CACHE_BYTES)
                .build()
                .expect("the encoding's pattern compiles")
        })
    }
}

/// Calls `f` with each piece of `text`, in order, while it returns true; the pieces concatenate to
/// `text`.
pub fn each_piece(enc: Encoding, text: &str, mut f: impl FnMut(&str) -> bool) {
    let re = enc.pattern();
    let mut at = 0;
    while at < text.len() {
        if enc == Encoding::O200k {
            if let Some(end) = ascii::piece(text.as_bytes(), at) {
                if !f(&text[at..end]) {
                    return;
                }
                at = end;
                continue;
            }
        }
        let (start, end) = re.find_at(text, at).map_or((text.len(), text.len()), |m| (m.start(), m.end()));
        if start > at {
            // Every character matches some branch; this only keeps the pieces whole if one did not.
            if !f(&text[at..start]) {
                return;
            }
            at = start;
            continue;
        }
        let end = end.max(at + text[at..].chars().next().map_or(1, char::len_utf8));
        let end = look_ahead(&text[at..end], &text[end..]).map_or(end, |cut| at + cut);
        if !f(&text[at..end]) {
            return;
        }
        at = end;
    }
}

/// Where `\s+(?!\S)` ends a run of spaces that `\s+` matched: before its last space when a
/// non-space follows and the run has two or more (a lone space stays a piece, as `\s` gives it).
/// Runs that hold a line break were taken by an earlier branch.
fn look_ahead(piece: &str, rest: &str) -> Option<usize> {
    let mut chars = piece.chars();
    let last = chars.next_back()?;
    let spaces = chars.clone().next().is_some() && piece.chars().all(char::is_whitespace);
    let next_is_text = rest.chars().next().is_some_and(|c| !c.is_whitespace());
    (spaces && next_is_text && last != '\n' && last != '\r').then(|| piece.len() - last.len_utf8())
}

/// `o200k_base`'s pattern by hand, for pieces whose every character the pattern looks at is ASCII
/// (most of English text and of the envelope): the regex is only asked about the others.
mod ascii {
    fn is_lower(b: u8) -> bool {
        b.is_ascii_lowercase()
    }
    fn is_upper(b: u8) -> bool {
        b.is_ascii_uppercase()
    }
    fn is_letter(b: u8) -> bool {
        b.is_ascii_alphabetic()
    }
    /// `\s` (ASCII's white space: tab, line feed, vertical tab, form feed, carriage return, space).
    fn is_space(b: u8) -> bool {
        matches!(b, b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ')
    }
    /// `[^\s\p{L}\p{N}]`.
    fn is_punct(b: u8) -> bool {
        !is_space(b) && !b.is_ascii_alphanumeric()
    }
    /// `[^\r\n\p{L}\p{N}]`.
    fn is_prefix(b: u8) -> bool {
        b != b'\r' && b != b'\n' && !b.is_ascii_alphanumeric()
    }
    fn run(b: &[u8], from: usize, class: impl Fn(u8) -> bool) -> usize {
        run_upto(b, from, class, usize::MAX)
    }
    /// [`run`], counting at most `max` bytes (a long run of digits is cut every three: reading the
    /// whole run for each cut made counting quadratic in its length).
    fn run_upto(b: &[u8], from: usize, class: impl Fn(u8) -> bool, max: usize) -> usize {
        b[from..].iter().take(max).take_while(|&&c| c.is_ascii() && class(c)).count()
    }

    /// The end of the piece that starts at `at`, or None when the pattern would look at a byte
    /// outside ASCII (up to four past the piece: the contraction suffix and the look-ahead).
    pub fn piece(b: &[u8], at: usize) -> Option<usize> {
        let end = end(b, at)?;
        b[at..b.len().min(end + 4)].is_ascii().then_some(end)
    }

    fn end(b: &[u8], at: usize) -> Option<usize> {
        let byte = |i: usize| b.get(i).copied().filter(u8::is_ascii);
        let c = byte(at)?;
        // Branches 1 and 2: an optional prefix character, capitals, small letters, a contraction.
        let letters = if is_letter(c) {
            Some(at)
        } else if is_prefix(c) && byte(at + 1).is_some_and(is_letter) {
            Some(at + 1)
        } else {
            None
        };
        if let Some(s) = letters {
            let upper = run(b, s, is_upper);
            let lower = run(b, s + upper, is_lower);
            return Some(contraction(b, s + upper + lower));
        }
        if c.is_ascii_digit() {
            return Some(at + run_upto(b, at, |d| d.is_ascii_digit(), 3));
        }
        // Branch 4: an optional space, punctuation, then line breaks and slashes.
        let p = if c == b' ' && byte(at + 1).is_some_and(is_punct) { at + 1 } else { at };
        if is_punct(byte(p)?) {
            let q = p + run(b, p, is_punct);
            return Some(q + run(b, q, |x| matches!(x, b'\r' | b'\n' | b'/')));
        }
        // Branches 5-7: white space through its last line break; else a run that leaves its last
        // space to what follows.
        let e = at + run(b, at, is_space);
        if let Some(last) = (at..e).rev().find(|&i| b[i] == b'\r' || b[i] == b'\n') {
            return Some(last + 1);
        }
        Some(if e == b.len() || e - at == 1 { e } else { e - 1 })
    }

    /// Past `'s 't 're 've 'm 'll 'd` (any case) at `i`, when one is there.
    fn contraction(b: &[u8], i: usize) -> usize {
        if b.get(i) != Some(&b'\'') {
            return i;
        }
        let at = |k: usize| b.get(i + k).map(u8::to_ascii_lowercase);
        match (at(1), at(2)) {
            (Some(b's' | b't' | b'm' | b'd'), _) => i + 2,
            (Some(b'r' | b'v'), Some(b'e')) | (Some(b'l'), Some(b'l')) => i + 3,
            _ => i,
        }
    }
}

/// Tokens per piece: keyed by the piece itself (a hash only picks the bucket, so no text can make
/// two pieces share a count).
type Seen = HashMap<Box<str>, u32, BuildHasherDefault<FxHasher>>;

thread_local! {
    static SEEN: RefCell<[Seen; 2]> = RefCell::new([Seen::default(), Seen::default()]);
}

/// Longest piece the table keeps: a longer one (a run of letters with no space in it, rare in text)
/// is encoded each time, so the table's memory stays bounded whatever the stored texts are.
const MAX_KEPT_BYTES: usize = 64;

/// Most characters of a run of white space handed to `encode` whole; a longer run is counted in
/// parts of this many characters, and equal parts are merged once: a run of megabytes of one
/// character costs one part's merge (and its memory, a few hundred kilobytes), not a merge of the
/// whole run. (It was first a guard: tiktoken-rs's pattern overflowed its backtracking stack on a
/// run of about a million and panicked; cmp no longer runs that pattern, see [`super::bpe`].) A run
/// of one repeated character (what text holds: spaces, tabs, newlines, no-break or ideographic
/// spaces) encodes from its start as a repeating pattern of tokens of 2^k characters, and its end on
/// its own, so whole parts of 2^14 characters from the start, the last one with the rest of the run,
/// add up to the whole run's count, as a test checks against the encoder.
const MAX_SPACE_RUN: usize = 1 << 14;

/// Tokens of one piece: looked up, or encoded by `encode` the first time this thread meets it.
fn piece_tokens(enc: Encoding, seen: &mut Seen, piece: &str, encode: &impl Fn(&str) -> usize) -> usize {
    if piece.len() > MAX_KEPT_BYTES {
        return RECENT_COUNTS.with(|r| r.borrow_mut()[enc as usize].get_or(piece, || long_piece_tokens(piece, encode)));
    }
    if let Some(&n) = seen.get(piece) {
        return n as usize;
    }
    let n = encode(piece).min(u32::MAX as usize);
    seen.insert(piece.into(), n as u32);
    n
}

/// Tokens of a piece longer than [`MAX_KEPT_BYTES`].
fn long_piece_tokens(piece: &str, encode: &impl Fn(&str) -> usize) -> usize {
    long_piece_parts(piece).into_iter().map(|(part, times)| encode(part) * times).sum()
}

/// The tokens of a piece longer than [`MAX_KEPT_BYTES`] (`tokens` encodes a piece).
fn long_piece_encoding(piece: &str, tokens: &impl Fn(&str) -> Vec<u32>) -> std::rc::Rc<[u32]> {
    let mut out = Vec::new();
    for (part, times) in long_piece_parts(piece) {
        let t = tokens(part);
        for _ in 0..times {
            out.extend_from_slice(&t);
        }
    }
    out.into()
}

/// Tokens of a long piece's first part that holds `want` tokens and [`HEAD_SLACK`] more (or of the
/// whole piece): the first part of a power of two bytes that does, so a cut of a run of megabytes
/// without spaces encodes a few times what it keeps, and the cuts of a pack's growth steps share
/// their parts (the recent pieces' cache). Past the kept tokens the part's end can merge
/// differently; the slack keeps that away from the cut.
fn long_piece_head(enc: Encoding, piece: &str, want: usize, tokens: &impl Fn(&str) -> Vec<u32>) -> std::rc::Rc<[u32]> {
    let mut bytes = super::quantised(want.saturating_add(HEAD_SLACK).saturating_mul(HEAD_BYTES_PER_TOKEN));
    loop {
        let end = super::floor_boundary(piece, bytes);
        let part = &piece[..end];
        let t = RECENT_TOKENS.with(|r| r.borrow_mut()[enc as usize].get_or(part, || long_piece_encoding(part, tokens)));
        if end == piece.len() || t.len() >= want.saturating_add(HEAD_SLACK) {
            return t;
        }
        bytes = bytes.saturating_mul(2);
    }
}

/// Tokens a long piece's encoded part holds beyond those a cut keeps (see [`long_piece_head`]).
const HEAD_SLACK: usize = 16;
/// Bytes per token of the first part of a long piece a cut encodes (then doubled).
const HEAD_BYTES_PER_TOKEN: usize = 8;

/// The parts a long piece is encoded in, each with how many times it repeats in a row: the whole
/// piece once, or a long run of white space in parts of [`MAX_SPACE_RUN`] characters (a run of one
/// character is then one part, repeated).
fn long_piece_parts(piece: &str) -> Vec<(&str, usize)> {
    if !is_long_space_run(piece) {
        return vec![(piece, 1)];
    }
    let mut cut: Vec<&str> = char_parts(piece, MAX_SPACE_RUN).collect();
    // The end of a run encodes on its own (16,386 newlines end in tokens of 16, 8 and 10 newlines in
    // `cl100k_base`, not 32 and 2; 16,385 tabs in one of 17): the last whole part takes the shorter
    // rest with it, so only whole parts are cut from the start of the run.
    if let [.., whole, rest] = cut.as_slice() {
        if rest.chars().count() < MAX_SPACE_RUN {
            let tail = &piece[piece.len() - whole.len() - rest.len()..];
            cut.truncate(cut.len() - 2);
            cut.push(tail);
        }
    }
    let mut parts: Vec<(&str, usize)> = Vec::new();
    for part in cut {
        match parts.last_mut() {
            Some((p, times)) if *p == part => *times += 1,
            _ => parts.push((part, 1)),
        }
    }
    parts
}

/// A run of white space longer than [`MAX_SPACE_RUN`] characters may hold: counted in parts.
fn is_long_space_run(piece: &str) -> bool {
    piece.len() > MAX_SPACE_RUN && piece.chars().all(char::is_whitespace)
}

/// Long pieces the recent-piece memory keeps at most, and their bytes at most.
const RECENT_PIECES: usize = 8;
const RECENT_BYTES: usize = 8 << 20;

/// The last few long pieces (longer than [`MAX_KEPT_BYTES`]) a thread encoded, with what they gave
/// (a count, or tokens). A pack that grows a long memory cuts it again at every step, and encoding
/// its long piece again each time was most of the cost (seconds for a 100 KB run of letters).
struct Recent<V> {
    items: std::collections::VecDeque<(Box<str>, V)>,
    bytes: usize,
}

impl<V> Default for Recent<V> {
    fn default() -> Self {
        Recent { items: Default::default(), bytes: 0 }
    }
}

impl<V: Clone> Recent<V> {
    /// What `piece` gave, or `make`'s value, kept.
    fn get_or(&mut self, piece: &str, make: impl FnOnce() -> V) -> V {
        if let Some(i) = self.items.iter().position(|(k, _)| &**k == piece) {
            let hit = self.items[i].1.clone();
            if let Some(e) = self.items.remove(i) {
                self.items.push_front(e);
            }
            return hit;
        }
        let v = make();
        self.bytes += piece.len();
        self.items.push_front((piece.into(), v.clone()));
        while self.items.len() > RECENT_PIECES || (self.bytes > RECENT_BYTES && self.items.len() > 1) {
            let Some((k, _)) = self.items.pop_back() else { break };
            self.bytes -= k.len();
        }
        v
    }
}

thread_local! {
    static RECENT_COUNTS: RefCell<[Recent<usize>; 2]> = RefCell::default();
    static RECENT_TOKENS: RefCell<[Recent<std::rc::Rc<[u32]>>; 2]> = RefCell::default();
}

/// `s` cut into consecutive parts of `n` characters (the last one shorter).
fn char_parts(s: &str, n: usize) -> impl Iterator<Item = &str> {
    let mut rest = s;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = rest.char_indices().nth(n).map_or(rest.len(), |(i, _)| i);
        let (head, tail) = rest.split_at(end);
        rest = tail;
        Some(head)
    })
}

fn with_seen<T>(enc: Encoding, f: impl FnOnce(&mut Seen) -> T) -> T {
    SEEN.with(|seen| {
        let seen = &mut seen.borrow_mut()[enc as usize];
        if seen.len() >= PIECES {
            seen.clear();
        }
        f(seen)
    })
}

/// Whether `left` followed by `right` splits into `left`'s pieces, then `right`'s, in both encodings,
/// so that the whole's count is the sum of theirs: true when one side of the junction is an ASCII
/// digit and the other is neither a number (`\p{N}`) nor white space. In both patterns a piece that
/// holds a number character holds nothing else, so no piece crosses the junction; and the pieces
/// before it are matched the same without what follows, since only the white-space branches look
/// past a piece (`\s+(?!\S)`, `\s+$`) and neither side is white space.
pub fn splits_between(left: &str, right: &str) -> bool {
    let (Some(a), Some(b)) = (left.chars().next_back(), right.chars().next()) else {
        return false;
    };
    let other = |c: char| !c.is_numeric() && !c.is_whitespace();
    (a.is_ascii_digit() && other(b)) || (other(a) && b.is_ascii_digit())
}

/// The tokens of `text`: the sum over its pieces (`encode` counts a piece not met before).
pub fn count(enc: Encoding, text: &str, encode: impl Fn(&str) -> usize) -> usize {
    with_seen(enc, |seen| {
        let mut total = 0usize;
        each_piece(enc, text, |piece| {
            total += piece_tokens(enc, seen, piece, &encode);
            true
        });
        total
    })
}

/// The longest prefix of `text` whose tokens are the first `room` of `text`'s (cut back to a
/// character boundary): whole pieces while they fit, then the first tokens of the next piece
/// (`tokens` encodes a piece, `bytes` decodes tokens).
pub fn prefix(
    enc: Encoding,
    text: &str,
    room: usize,
    count: impl Fn(&str) -> usize,
    tokens: impl Fn(&str) -> Vec<u32>,
    bytes: impl Fn(&[u32]) -> Vec<u8>,
) -> String {
    let (mut used, mut end, mut partial) = (0usize, 0usize, Vec::new());
    with_seen(enc, |seen| {
        each_piece(enc, text, |piece| {
            let n = piece_tokens(enc, seen, piece, &count);
            if used + n <= room {
                used += n;
                end += piece.len();
                return true;
            }
            let t: std::rc::Rc<[u32]> = if piece.len() > MAX_KEPT_BYTES {
                long_piece_head(enc, piece, room - used, &tokens)
            } else {
                tokens(piece).into()
            };
            partial = bytes(&t[..(room - used).min(t.len())]);
            false
        })
    });
    let valid = match std::str::from_utf8(&partial) {
        Ok(s) => s.len(),
        Err(e) => e.valid_up_to(),
    };
    format!("{}{}", &text[..end], std::str::from_utf8(&partial[..valid]).unwrap_or(""))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn full(enc: Encoding, text: &str) -> usize {
        match enc {
            Encoding::O200k => tiktoken_rs::o200k_base_singleton().encode_ordinary(text).len(),
            Encoding::Cl100k => tiktoken_rs::cl100k_base_singleton().encode_ordinary(text).len(),
        }
    }

    fn pieces(enc: Encoding, text: &str) -> Vec<String> {
        let mut v = Vec::new();
        each_piece(enc, text, |p| {
            v.push(p.to_string());
            true
        });
        v
    }

    #[test]
    fn a_run_of_spaces_leaves_one_to_the_next_word() {
        assert_eq!(pieces(Encoding::O200k, "a   b"), ["a", "  ", " b"]);
        assert_eq!(pieces(Encoding::O200k, "a \n  b  "), ["a", " \n", " ", " b", "  "]);
        assert_eq!(pieces(Encoding::Cl100k, "x  1"), ["x", " ", " ", "1"]);
    }

    #[test]
    fn counts_equal_the_full_encoder_on_mixed_text() {
        for text in [
            "",
            "hello world",
            "Caroline: I'm going to the LGBTQ support group—it's   so powerful!!\n\n  See you @ 5:30pm?",
            "我下周二要去北京出差，順便見見老朋友。東京の天気は？ 서울에 가요. สวัสดีครับ",
            "emoji 😀👍🏽 and 1234567 digits, tabs\t\tand\r\nCRLF   \n   end   ",
            "{\"ref\":\"mem_3f9a\",\"content\":\"Emi: For sure!\",\"why\":[0.91,\"fts\"]}\n- [mem_1] x",
            "e\u{301}te\u{301} Straße naïve  ÀÖØ  \u{a0}\u{a0}word \u{2003}x",
        ] {
            for enc in [Encoding::O200k, Encoding::Cl100k] {
                let got = count(enc, text, |p| full(enc, p));
                assert_eq!(got, full(enc, text), "{enc:?} {text:?}");
                assert_eq!(pieces(enc, text).concat(), text);
            }
        }
    }

    #[test]
    fn only_a_digit_beside_a_word_or_a_sign_splits() {
        for (l, r, want) in [
            ("\"relevance\":", "0.53", true),
            ("0.53", ",\"why\":null}", true),
            ("mem_", "00af", true),
            ("12", "34", false),
            ("a ", "5", false),
            ("5", " a", false),
            ("5", "\u{b2}", false),
            ("", "5", false),
            ("a", "b", false),
        ] {
            assert_eq!(splits_between(l, r), want, "{l:?} {r:?}");
        }
        // White space before a digit is where a split would go wrong (`"x  1"` in cl100k_base).
        assert_ne!(full(Encoding::Cl100k, "x  ") + full(Encoding::Cl100k, "1"), full(Encoding::Cl100k, "x  1"));
    }

    #[test]
    fn long_pieces_are_counted_without_being_kept() {
        let word = "x".repeat(100_000);
        let text = format!("a {word} b {word}");
        for enc in [Encoding::O200k, Encoding::Cl100k] {
            assert_eq!(count(enc, &text, |p| full(enc, p)), full(enc, &text));
            with_seen(enc, |seen| assert!(seen.keys().all(|k| k.len() <= MAX_KEPT_BYTES)));
        }
    }

    #[test]
    fn long_runs_of_white_space_count_as_the_encoder_counts_them() {
        // Runs of one repeated character past the part size, each between words, as text holds them;
        // the encoder itself fails (a panic) on runs of about a million characters.
        for c in [' ', '\t', '\n', '\u{b}', '\u{a0}', '\u{2003}', '\u{3000}'] {
            for n in [MAX_SPACE_RUN + 1, 2 * MAX_SPACE_RUN + 77, 300_001] {
                let text = format!("a{}b", c.to_string().repeat(n));
                for enc in [Encoding::O200k, Encoding::Cl100k] {
                    assert_eq!(count(enc, &text, |p| full(enc, p)), full(enc, &text), "{enc:?} {c:?} × {n}");
                }
            }
            // A run that is the whole text, its last part shorter than the others (a red-team pass
            // found 16,386 newlines counted 513 for cl100k's 514, and 16,385 tabs 1025 for 1024).
            for n in [MAX_SPACE_RUN + 1, MAX_SPACE_RUN + 2, 2 * MAX_SPACE_RUN + 34, 3 * MAX_SPACE_RUN + 17] {
                let text = c.to_string().repeat(n);
                for enc in [Encoding::O200k, Encoding::Cl100k] {
                    assert_eq!(count(enc, &text, |p| full(enc, p)), full(enc, &text), "{enc:?} {c:?} × {n} alone");
                }
            }
        }
        let huge = format!("a{}b", " ".repeat(1 << 21));
        let n = count(Encoding::O200k, &huge, |p| full(Encoding::O200k, p));
        assert!(n > (1 << 21) / 128, "{n}");
    }

    #[test]
    fn a_long_run_of_digits_counts_in_linear_time() {
        let digits = "7".repeat(1 << 20);
        let t0 = std::time::Instant::now();
        assert_eq!(count(Encoding::O200k, &digits, |p| full(Encoding::O200k, p)), (1 << 20) / 3 + 1);
        // A guard against the quadratic scan (93 s before), with room for a debug build.
        assert!(t0.elapsed() < std::time::Duration::from_secs(20), "{:?}", t0.elapsed());
    }

    fn mixed() -> impl Strategy<Value = String> {
        let alphabet: Vec<char> =
            "aZé1 9  \t\n\r'sStTrReEvVlLmMdD/.,!-_\u{b}\u{c}\u{a0}\u{301}\u{17f}\u{212a}中文字한국ไทยカ😀\u{2003}\"{}:"
                .chars()
                .collect();
        proptest::collection::vec(proptest::sample::select(alphabet), 0..60).prop_map(|v| v.into_iter().collect())
    }

    proptest! {
        #[test]
        fn a_prefix_is_the_first_tokens_of_the_text(text in mixed(), room in 0usize..40) {
            let bpe = tiktoken_rs::o200k_base_singleton();
            let enc = Encoding::O200k;
            let got = prefix(enc, &text, room, |p| full(enc, p), |p| bpe.encode_ordinary(p), |t| bpe.decode_bytes(t).unwrap());
            let all = bpe.encode_ordinary(&text);
            let bytes = bpe.decode_bytes(&all[..room.min(all.len())]).unwrap();
            let valid = std::str::from_utf8(&bytes).map_or_else(|e| e.valid_up_to(), str::len);
            prop_assert_eq!(got.as_str(), std::str::from_utf8(&bytes[..valid]).unwrap());
        }

        #[test]
        fn a_split_junction_adds_the_counts(
            left in mixed(),
            right in mixed(),
            digit_left in any::<bool>(),
            beside in proptest::sample::select(vec!["", " ", "  ", "\t\t", "\n", "\u{a0}\u{a0}", "a", "'", ".", ":\"", "\u{b2}", "7", "中"]),
        ) {
            let (left, right) = if digit_left {
                (format!("{left}4"), format!("{beside}{right}"))
            } else {
                (format!("{left}{beside}"), format!("4{right}"))
            };
            let whole = format!("{left}{right}");
            if splits_between(&left, &right) {
                for enc in [Encoding::O200k, Encoding::Cl100k] {
                    prop_assert_eq!(full(enc, &left) + full(enc, &right), full(enc, &whole), "{:?}", enc);
                }
            }
        }

        #[test]
        fn counts_equal_the_full_encoder(text in mixed()) {
            for enc in [Encoding::O200k, Encoding::Cl100k] {
                prop_assert_eq!(count(enc, &text, |p| full(enc, p)), full(enc, &text), "{:?}", enc);
                prop_assert_eq!(pieces(enc, &text).concat(), text.clone());
            }
        }
    }
}
