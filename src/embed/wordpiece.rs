//! BERT's tokenizer: the "basic" pass (clean, space out CJK ideographs, lowercase, strip accents,
//! split on whitespace and punctuation) and WordPiece (greedy longest match against `vocab.txt`,
//! continuations prefixed `##`), as Hugging Face's `BertTokenizer` with `do_lower_case` does it.

use crate::error::{Error, Result};
use std::collections::HashMap;
use unicode_general_category::get_general_category;
use unicode_normalization::UnicodeNormalization;

/// A word longer than this many characters is one `[UNK]` (BERT's `max_input_chars_per_word`).
const MAX_WORD_CHARS: usize = 100;

/// A WordPiece vocabulary and the ids of its special tokens.
#[derive(Debug)]
pub struct WordPiece {
    ids: HashMap<String, u32>,
    id_bound: usize,
    /// `[CLS]`, `[SEP]`, `[UNK]`.
    pub cls: u32,
    /// See `cls`.
    pub sep: u32,
    /// See `cls`.
    pub unk: u32,
}

impl WordPiece {
    /// The vocabulary of a `vocab.txt` (one token a line, the line number its id).
    pub fn parse(vocab: &str) -> Result<WordPiece> {
        let ids: HashMap<String, u32> =
            vocab.lines().enumerate().map(|(i, t)| (t.trim_end_matches('\r').to_string(), i as u32)).collect();
        let special = |t: &str| {
            ids.get(t).copied().ok_or_else(|| Error::invalid("embedder", format!("vocab.txt has no {t} token")))
        };
        let id_bound = vocab.lines().count();
        Ok(WordPiece { cls: special("[CLS]")?, sep: special("[SEP]")?, unk: special("[UNK]")?, ids, id_bound })
    }

    /// One more than the largest id (the lines of `vocab.txt`).
    pub fn id_bound(&self) -> usize {
        self.id_bound
    }

    /// The ids of `text` framed by `[CLS]` … `[SEP]`, at most `max` ids in all.
    pub fn encode(&self, text: &str, max: usize) -> Vec<u32> {
        let mut out = vec![self.cls];
        'words: for word in basic_tokens(text) {
            for id in self.pieces(&word) {
                if out.len() + 1 >= max {
                    break 'words;
                }
                out.push(id);
            }
        }
        out.push(self.sep);
        out
    }

    /// WordPiece of one basic token: the longest vocabulary prefix, then `##` continuations; a word
    /// that cannot be split so is one `[UNK]`.
    fn pieces(&self, word: &str) -> Vec<u32> {
        let chars: Vec<(usize, char)> = word.char_indices().collect();
        if chars.len() > MAX_WORD_CHARS {
            return vec![self.unk];
        }
        let mut out = Vec::new();
        let mut start = 0;
        while start < chars.len() {
            let from = chars[start].0;
            let found = (start + 1..=chars.len()).rev().find_map(|end| {
                let to = chars.get(end).map_or(word.len(), |c| c.0);
                let piece = &word[from..to];
                let id = if start == 0 { self.ids.get(piece) } else { self.ids.get(&format!("##{piece}")) };
                id.map(|id| (end, *id))
            });
            match found {
                Some((end, id)) => {
                    out.push(id);
                    start = end;
                }
                None => return vec![self.unk],
            }
        }
        out
    }
}

/// BERT's basic tokens of `text`: control characters dropped, CJK ideographs and punctuation each a
/// token of their own, lowercased, accents (nonspacing marks after NFD) removed.
pub fn basic_tokens(text: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut word = String::new();
    let flush = |word: &mut String, tokens: &mut Vec<String>| {
        if !word.is_empty() {
            tokens.push(std::mem::take(word));
        }
    };
    for c in text.chars() {
        let cat = get_general_category(c).abbreviation();
        if is_whitespace(c, cat) {
            flush(&mut word, &mut tokens);
        } else if c == '\0' || c == '\u{fffd}' || cat.starts_with('C') {
            continue;
        } else if is_cjk(c) || c.is_ascii_punctuation() || cat.starts_with('P') {
            flush(&mut word, &mut tokens);
            tokens.push(c.to_string());
        } else {
            word.push(c);
        }
    }
    flush(&mut word, &mut tokens);
    tokens.into_iter().map(|t| fold(&t)).filter(|t| !t.is_empty()).collect()
}

/// Lowercase, then NFD without nonspacing marks.
fn fold(token: &str) -> String {
    token.to_lowercase().nfd().filter(|c| get_general_category(*c).abbreviation() != "Mn").collect()
}

/// Whitespace as BERT reads it: space, tab, newline, carriage return and category Zs.
fn is_whitespace(c: char, cat: &str) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r') || cat == "Zs"
}

/// The CJK Unified Ideographs blocks BERT spaces out (not kana, not hangul).
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x20000..=0x2A6DF | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F | 0x2B820..=0x2CEAF | 0xF900..=0xFAFF | 0x2F800..=0x2FA1F)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vocab() -> WordPiece {
        let v = "[PAD]\n[UNK]\n[CLS]\n[SEP]\nun\n##aff\n##able\nhello\n!\n東\ncafe\n";
        WordPiece::parse(v).unwrap()
    }

    #[test]
    fn basic_tokens_split_fold_and_drop() {
        assert_eq!(basic_tokens("Héllo,\tWORLD!\u{7}"), ["hello", ",", "world", "!"]);
        assert_eq!(basic_tokens("東京タワー"), ["東", "京", "タワー"]);
        assert_eq!(basic_tokens("  "), Vec::<String>::new());
    }

    #[test]
    fn wordpiece_longest_match_and_unknown() {
        let wp = vocab();
        assert_eq!(wp.encode("Unaffable hello!", 64), [2, 4, 5, 6, 7, 8, 3]);
        assert_eq!(wp.encode("Café xyz", 64), [2, 10, 1, 3]);
        assert_eq!(wp.encode("hello hello hello", 4), [2, 7, 7, 3]);
        assert_eq!(wp.encode("", 8), [2, 3]);
        assert_eq!(wp.encode(&"a".repeat(101), 8), [2, 1, 3]);
    }

    #[test]
    fn a_vocabulary_without_special_tokens_is_refused() {
        let e = WordPiece::parse("hello\n").unwrap_err().to_string();
        assert!(e.contains("[CLS]"), "{e}");
    }
}
