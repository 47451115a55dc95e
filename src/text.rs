//! Text primitives shared by retrieval and packing: a tokenizer that mirrors FTS5's
//! `unicode61 remove_diacritics 2` for space-separated scripts and cuts scripts written without
//! spaces (Han, Hiragana/Katakana, Hangul, Thai) into overlapping character pairs, the Porter
//! stemmer FTS5's `porter` wrapper uses, stopwords, the other forms of irregular English words,
//! word sets for Jaccard similarity, the terms of the character-pair index, and sentence/character
//! cuts for the compression ladder.

use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

/// True for a character of a script written without spaces between words: Thai, Hangul (jamo and
/// syllables), Hiragana, Katakana and CJK ideographs. Such text has no word boundaries a tokenizer
/// can see, so it is matched by overlapping character pairs (most Chinese words are two characters).
/// The ranges are the ones the `cmp_memories_grams` view of the schema tests.
pub fn is_spaceless(c: char) -> bool {
    matches!(u32::from(c),
        0x0E00..=0x0E7F     // Thai
        | 0x1100..=0x11FF   // Hangul jamo
        | 0x3040..=0x30FF   // Hiragana, Katakana
        | 0x3130..=0x318F   // Hangul compatibility jamo
        | 0x31F0..=0x31FF   // Katakana phonetic extensions
        | 0x3400..=0x4DBF   // CJK extension A
        | 0x4E00..=0x9FFF   // CJK unified ideographs
        | 0xAC00..=0xD7AF   // Hangul syllables
        | 0xF900..=0xFAFF   // CJK compatibility ideographs
        | 0xFF66..=0xFF9F   // halfwidth Katakana
        | 0x20000..=0x3FFFF // CJK extensions B and later
    )
}

/// True when `s` holds a character of a script written without spaces ([`is_spaceless`]).
pub fn has_spaceless(s: &str) -> bool {
    !s.is_ascii() && s.chars().any(is_spaceless)
}

/// Passes the words of a run of spaceless-script characters to `f`: its overlapping pairs, or the
/// character itself when the run is one character long (through `buf`, so no word is allocated).
fn flush_run(run: &mut Vec<char>, buf: &mut String, f: &mut impl FnMut(&str)) {
    match run.len() {
        0 => {}
        1 => {
            buf.clear();
            buf.push(run[0]);
            f(buf);
        }
        _ => {
            for p in run.windows(2) {
                buf.clear();
                buf.extend(p);
                f(buf);
            }
        }
    }
    run.clear();
}

/// Lowercased, diacritic-free alphanumeric words of `s`, in order. A run of a script written
/// without spaces ([`is_spaceless`]) becomes its overlapping character pairs ("北京出差" → 北京, 京出,
/// 出差) and is a word boundary for the text around it ("用Python写" → 用, python, 写). Such text
/// is not decomposed: NFD would split Hangul syllables into jamo and strip the voicing marks of kana.
pub fn words(s: &str) -> Vec<String> {
    map_words(s, str::to_string)
}

/// `f` of each of [`words`]'s words, in order, without building the words first: an ASCII text's
/// words are passed as slices of it (lowercased through one buffer only when they hold a capital).
pub fn map_words<T>(s: &str, mut f: impl FnMut(&str) -> T) -> Vec<T> {
    if s.is_ascii() {
        let mut buf = String::new();
        return s
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(|w| {
                if !w.bytes().any(|b| b.is_ascii_uppercase()) {
                    return f(w);
                }
                buf.clear();
                buf.push_str(w);
                buf.make_ascii_lowercase();
                f(&buf)
            })
            .collect();
    }
    let mut out = Vec::new();
    unicode_words(s, |w| out.push(f(w)));
    out
}

/// True when `word` is a pair of spaceless-script characters (one of [`words`]'s pairs) that is
/// among the words of `s` exactly where `s` holds it as a substring: the case for every such pair
/// unless a combining mark (a Thai vowel sign, a kana voicing mark) sits inside one of `s`'s runs,
/// where [`words`] pairs the letters around it. `plain` is [`is_plain`] of `s`.
pub fn is_substring_pair(word: &str, plain: bool) -> bool {
    plain && word.chars().count() == 2 && word.chars().all(is_spaceless)
}

/// True when `s` holds no combining mark (see [`is_substring_pair`]).
pub fn is_plain(s: &str) -> bool {
    !s.chars().any(is_combining_mark)
}

/// [`map_words`] of the first `limit` words of `s`, and how many words `s` has in all.
pub fn map_words_upto<T>(s: &str, limit: usize, mut f: impl FnMut(&str) -> T) -> (Vec<T>, usize) {
    let mut n = 0;
    let out = map_words(s, |w| {
        n += 1;
        (n <= limit).then(|| f(w))
    });
    (out.into_iter().flatten().collect(), n)
}

/// Passes [`words`] of a text that is not all ASCII to `f`, each through one reused buffer (an
/// ASCII text has no diacritics to strip and folds its case by ASCII, [`map_words`]).
fn unicode_words(s: &str, mut f: impl FnMut(&str)) {
    let (mut cur, mut buf) = (String::new(), String::new());
    let mut run: Vec<char> = Vec::new();
    for c in s.chars() {
        if is_spaceless(c) {
            if !cur.is_empty() {
                f(&cur);
                cur.clear();
            }
            if c.is_alphanumeric() {
                run.push(c);
            } else if !is_combining_mark(c) {
                // Punctuation inside the block (the Katakana middle dot) ends the run; vowel
                // signs (Thai) do not.
                flush_run(&mut run, &mut buf, &mut f);
            }
            continue;
        }
        flush_run(&mut run, &mut buf, &mut f);
        for d in c.nfd() {
            if is_combining_mark(d) {
                continue;
            }
            if d.is_alphanumeric() {
                cur.extend(d.to_lowercase());
            } else if !cur.is_empty() {
                f(&cur);
                cur.clear();
            }
        }
    }
    flush_run(&mut run, &mut buf, &mut f);
    if !cur.is_empty() {
        f(&cur);
    }
}

/// True for a character the character-pair index pairs up: ASCII letters and digits, Latin-1 and
/// Latin Extended-A/B letters, and the spaceless scripts. The `cmp_memories_grams` view of the schema
/// applies the same test in SQL; [`gram_terms`] must agree with it character for character.
fn is_gram_char(c: char) -> bool {
    let u = u32::from(c);
    c.is_ascii_alphanumeric() || ((0xC0..=0x24F).contains(&u) && u != 0xD7 && u != 0xF7) || is_spaceless(c)
}

/// Characters of a memory the character-pair index reads (the view's cut): pairs past it are not
/// indexed, which bounds the cost of indexing one row.
pub const GRAM_MAX_CHARS: usize = 2048;

/// The terms of `s` in the character-pair index (`cmp_memories_ngram`): every pair of adjacent
/// characters that both pass the index's character test (letters, digits, spaceless scripts), so
/// "61岁" gives 61 and 1岁, and "用Python" gives 用p, py, yt, th, ho, on. Distinct (case-folded), in
/// first-seen order, at most `cap`. FTS5 folds case and diacritics of these the same way on both
/// sides, so they match the view's pairs exactly.
pub fn gram_terms(s: &str, cap: usize) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for p in chars.windows(2) {
        if out.len() == cap {
            break;
        }
        if is_gram_char(p[0]) && is_gram_char(p[1]) {
            let g: String = p.iter().flat_map(|c| c.to_lowercase()).collect();
            if seen.insert(g.clone()) {
                out.push(g);
            }
        }
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
    STEMS.with(|c| memo(&mut c.borrow_mut(), word, STEM_CACHE_WORDS, || porter_stemmer::stem(word)))
}

/// `make()` for `key` through a thread's bounded cache: the kept value, else the new one, kept; a
/// cache holding `cap` entries starts over.
pub fn memo<V: Clone>(
    cache: &mut std::collections::HashMap<String, V, FnvBuild>,
    key: &str,
    cap: usize,
    make: impl FnOnce() -> V,
) -> V {
    if let Some(v) = cache.get(key) {
        return v.clone();
    }
    if cache.len() >= cap {
        cache.clear();
    }
    let v = make();
    cache.insert(key.to_string(), v.clone());
    v
}

/// Most words whose stems a thread keeps; the cache starts over when it is full.
const STEM_CACHE_WORDS: usize = 1 << 16;

thread_local! {
    /// Stems already computed on this thread: a word's stem never changes, and stemming is the
    /// slowest step of analysing a candidate's text.
    static STEMS: std::cell::RefCell<std::collections::HashMap<String, String, FnvBuild>> = Default::default();
}

/// [`fnv1a`] as a `Hasher`, for maps keyed by short words (faster than the default SipHash there;
/// the keys come from stored text, and a collision only costs a comparison).
#[derive(Default)]
pub struct Fnv(u64);

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 { 0xcbf2_9ce4_8422_2325 } else { self.0 };
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

/// Builds [`Fnv`] hashers.
pub type FnvBuild = std::hash::BuildHasherDefault<Fnv>;

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

/// The inflected forms of English irregular verbs (and a few irregular plurals) that a stemmer cannot
/// join: a question asks "what did Caroline go to?" and the message says "I went to the support
/// group". Each line is one word's forms; a task word found on a line is searched with the others too.
const IRREGULAR_FORMS: &[&[&str]] = &[
    &["become", "became"],
    &["begin", "began", "begun"],
    &["break", "broke", "broken"],
    &["bring", "brought"],
    &["build", "built"],
    &["buy", "bought"],
    &["catch", "caught"],
    &["choose", "chose", "chosen"],
    &["come", "came"],
    &["draw", "drew", "drawn"],
    &["dream", "dreamt"],
    &["drink", "drank", "drunk"],
    &["drive", "drove", "driven"],
    &["eat", "ate", "eaten"],
    &["fall", "fell", "fallen"],
    &["feed", "fed"],
    &["feel", "felt"],
    &["fight", "fought"],
    &["find", "found"],
    &["fly", "flew", "flown"],
    &["forget", "forgot", "forgotten"],
    &["forgive", "forgave", "forgiven"],
    &["freeze", "froze", "frozen"],
    &["give", "gave", "given"],
    &["go", "went", "gone"],
    &["grow", "grew", "grown"],
    &["hang", "hung"],
    &["hear", "heard"],
    &["hide", "hid", "hidden"],
    &["hold", "held"],
    &["keep", "kept"],
    &["know", "knew", "known"],
    &["lead", "led"],
    &["learn", "learnt"],
    &["leave", "left"],
    &["lend", "lent"],
    &["lose", "lost"],
    &["make", "made"],
    &["mean", "meant"],
    &["meet", "met"],
    &["pay", "paid"],
    &["ride", "rode", "ridden"],
    &["ring", "rang", "rung"],
    &["run", "ran"],
    &["say", "said"],
    &["see", "saw", "seen"],
    &["sell", "sold"],
    &["send", "sent"],
    &["shake", "shook", "shaken"],
    &["shine", "shone"],
    &["shoot", "shot"],
    &["show", "shown"],
    &["sing", "sang", "sung"],
    &["sink", "sank", "sunk"],
    &["sit", "sat"],
    &["sleep", "slept"],
    &["speak", "spoke", "spoken"],
    &["spend", "spent"],
    &["stand", "stood"],
    &["steal", "stole", "stolen"],
    &["stick", "stuck"],
    &["swim", "swam", "swum"],
    &["take", "took", "taken"],
    &["teach", "taught"],
    &["tear", "tore", "torn"],
    &["tell", "told"],
    &["think", "thought"],
    &["throw", "threw", "thrown"],
    &["understand", "understood"],
    &["wake", "woke", "woken"],
    &["wear", "wore", "worn"],
    &["win", "won"],
    &["write", "wrote", "written"],
    &["child", "children"],
    &["man", "men"],
    &["woman", "women"],
    &["person", "people"],
    &["foot", "feet"],
    &["tooth", "teeth"],
    &["mouse", "mice"],
];

/// The other forms of an irregular English word (see `IRREGULAR_FORMS`); empty for any other word.
pub fn irregular_forms(word: &str) -> impl Iterator<Item = &'static str> + '_ {
    static BY_WORD: std::sync::OnceLock<std::collections::HashMap<&'static str, usize, FnvBuild>> =
        std::sync::OnceLock::new();
    let by_word = BY_WORD.get_or_init(|| {
        let mut m = std::collections::HashMap::default();
        for (i, forms) in IRREGULAR_FORMS.iter().enumerate() {
            for f in forms.iter() {
                m.insert(*f, i);
            }
        }
        m
    });
    let forms: &[&str] = by_word.get(word).map_or(&[], |&i| IRREGULAR_FORMS[i]);
    forms.iter().copied().filter(move |f| *f != word)
}

/// True for a word that carries no retrieval signal.
pub fn is_stopword(w: &str) -> bool {
    static SET: std::sync::OnceLock<std::collections::HashSet<&'static str, FnvBuild>> = std::sync::OnceLock::new();
    SET.get_or_init(|| STOPWORDS.iter().copied().collect()).contains(w)
}

/// Task terms for the word index: distinct, non-stopword words of space-separated scripts, in
/// first-seen order, at most `cap`. Text in scripts written without spaces goes to the
/// character-pair index instead ([`gram_terms`]).
pub fn query_terms(task: &str, cap: usize) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for w in words(task) {
        if is_stopword(&w) || w.chars().count() > 64 || has_spaceless(&w) {
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

/// Function characters of Chinese and Japanese (particles, pronouns, question words): a character
/// pair holding one says little about what a task is about ("我的", "是什", "什么"), like an English
/// stopword.
const SPACELESS_STOP_CHARS: &str =
    "的了是我你他她它们在有和与及或吗呢吧啊呀么什啥哪谁几怎这那个也都就还又很被把给让着不没嘛哦呃儿\
     のはがをにでともへやかなだ";

/// True for a character pair (a word of a spaceless script, or a pair of [`gram_terms`]) that holds
/// a function character.
pub fn is_stop_pair(w: &str) -> bool {
    w.chars().any(|c| SPACELESS_STOP_CHARS.contains(c))
}

/// Task terms of scripts written without spaces: the distinct character pairs of [`words`] that hold
/// no function character, at most `cap`. When every pair holds one, all of them.
pub fn spaceless_terms(task: &str, cap: usize) -> Vec<String> {
    let pairs: Vec<String> = words(task).into_iter().filter(|w| has_spaceless(w)).collect();
    let mut out: Vec<String> = Vec::new();
    for keep_stop in [false, true] {
        for w in &pairs {
            if out.len() == cap {
                break;
            }
            if (keep_stop || !is_stop_pair(w)) && !out.contains(w) {
                out.push(w.clone());
            }
        }
        if !out.is_empty() {
            break;
        }
    }
    out
}

/// The terms a task sends to the character-pair index, at most `cap`, each a quoted-string body
/// for FTS5: a pair of a spaceless script ("北京", or "1岁" across a script boundary) unless it holds a
/// function character (all of them are kept when every pair does), and for a run of letters or
/// digits of three or more, the phrase of its pairs ("at tl la as"), which matches the word where it
/// is glued to text of a spaceless script ("和Atlas项目"). A run shorter than three that touches no
/// spaceless script, and a stopword, give nothing.
pub fn task_gram_terms(task: &str, cap: usize) -> Vec<String> {
    let chars: Vec<char> = task.chars().collect();
    let lower = |cs: &[char]| -> String { cs.iter().flat_map(|c| c.to_lowercase()).collect() };
    let mut pairs: Vec<String> = Vec::new();
    let mut phrases: Vec<String> = Vec::new();
    // Enough candidates for the function-character filter to choose from; a long task stops here.
    let enough = cap.saturating_mul(4);
    // Runs of characters the index pairs up.
    for run in chars.split(|&c| !is_gram_char(c)).filter(|r| r.len() >= 2) {
        if pairs.len() + phrases.len() >= enough {
            break;
        }
        let mixed = run.iter().any(|&c| is_spaceless(c));
        for p in run.windows(2).take(enough) {
            if is_spaceless(p[0]) || is_spaceless(p[1]) {
                pairs.push(lower(p));
            }
        }
        // Words of letters and digits inside the run: a phrase of their pairs, or the one pair of
        // a two-character word glued to a spaceless script ("61岁"). Like the word index's terms,
        // a word longer than 64 characters is not searched.
        for word in run.split(|&c| is_spaceless(c)).take(enough) {
            if word.len() > 64 {
                continue;
            }
            let w = lower(word);
            if word.len() >= 3 && !is_stopword(&w) {
                phrases.push(word.windows(2).map(lower).collect::<Vec<_>>().join(" "));
            } else if word.len() == 2 && mixed {
                pairs.push(w);
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    pairs.retain(|g| seen.insert(g.clone()));
    phrases.retain(|g| seen.insert(g.clone()));
    let kept: Vec<String> = pairs.iter().filter(|g| !is_stop_pair(g)).cloned().collect();
    let pairs = if kept.is_empty() { pairs } else { kept };
    pairs.into_iter().chain(phrases).take(cap).collect()
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
    let mut v: Vec<u64> = map_words(s, |w| fnv1a(w.as_bytes()));
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
    fn every_irregular_form_is_on_one_line_and_finds_the_others() {
        let mut seen = std::collections::HashSet::new();
        for forms in IRREGULAR_FORMS {
            for f in forms.iter() {
                assert!(seen.insert(*f), "{f} is on two lines");
                assert!(!is_stopword(f), "{f} is a stopword: no task term ever holds it");
                assert_eq!(words(f), [f.to_string()], "{f} is one lower-case word");
                let others: Vec<&str> = irregular_forms(f).collect();
                assert_eq!(others.len(), forms.len() - 1, "{f}");
                assert!(!others.contains(f));
            }
        }
        assert_eq!(irregular_forms("bought").collect::<Vec<_>>(), ["buy"]);
        assert_eq!(irregular_forms("walked").count(), 0);
    }

    #[test]
    fn tokenizes_like_unicode61() {
        assert_eq!(words("Zoë's café, AND (NEAR) x*"), vec!["zoe", "s", "cafe", "and", "near", "x"]);
        assert!(words("🙂 — ").is_empty());
    }

    #[test]
    fn spaceless_scripts_become_character_pairs() {
        assert_eq!(
            words("我下周二要去北京出差"),
            vec!["我下", "下周", "周二", "二要", "要去", "去北", "北京", "京出", "出差"]
        );
        assert_eq!(words("我用Python写代码。"), vec!["我用", "python", "写代", "代码"]);
        assert_eq!(words("北 京"), vec!["北", "京"]);
        // Hangul stays in syllables; kana keeps its voicing marks.
        assert_eq!(words("서울에서"), vec!["서울", "울에", "에서"]);
        assert_eq!(words("がっこう"), vec!["がっ", "っこ", "こう"]);
        // Thai vowel signs do not cut a run.
        assert_eq!(words("กิน"), vec!["กิ", "ิน"]);
        assert_eq!(words("Zoë 🙂 東京"), vec!["zoe", "東京"]);
    }

    #[test]
    fn gram_terms_pair_letters_digits_and_spaceless_scripts() {
        assert_eq!(gram_terms("61岁的人", 10), vec!["61", "1岁", "岁的", "的人"]);
        assert_eq!(gram_terms("Ab-c 北", 10), vec!["ab"]);
        assert_eq!(gram_terms("北京北京", 10), vec!["北京", "京北"]);
        assert_eq!(task_gram_terms("the plain English", 10), vec!["pl la ai in", "en ng gl li is sh"]);
        assert_eq!(task_gram_terms("我的上司叫什么", 10), vec!["上司", "司叫"]);
        assert_eq!(task_gram_terms("是什么", 10), vec!["是什", "什么"]);
        assert_eq!(task_gram_terms("那个61岁的人和Atlas", 10), vec!["1岁", "61", "at tl la as"]);
        assert_eq!(spaceless_terms("我的上司的生日", 10), vec!["上司", "生日"]);
        assert!(query_terms("我用Python写代码", 10) == vec!["python"]);
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
