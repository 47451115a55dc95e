//! Claim folding (docs/protocol.md, "Packing"): facts that restate each other, near-duplicates too
//! (the reference protocol folds exact duplicates only), are folded into one survivor, so the budget
//! buys distinct claims.
//!
//! Two facts fold when their normalised word sets have Jaccard ≥ 0.8, both have at least 6 words,
//! they share polarity (both or neither negated) and neither is flagged `conflict`.

use super::Item;
use crate::text;

/// Minimum Jaccard similarity of normalised word sets for a fold.
pub const FOLD_JACCARD: f64 = 0.8;
/// Claims shorter than this (in normalised words) never fold.
pub const FOLD_MIN_WORDS: usize = 6;

const LEAD_INS: &[&[&str]] = &[
    &["we", "decided", "that"],
    &["we", "agreed", "that"],
    &["it", "was", "decided", "that"],
    &["note", "that"],
    &["remember", "that"],
    &["fyi"],
];
const NEGATIONS: &[&str] = &["not", "no", "never", "without", "none", "nobody", "nothing", "cannot"];

/// The normalised words of a claim: casefolded, URLs and e-mail addresses removed, a leading label
/// (`Note:`, `Decision:`) or lead-in (`we decided that`) removed, punctuation collapsed.
pub fn normalise(s: &str) -> Vec<String> {
    let mut kept: Vec<&str> = Vec::new();
    for tok in s.split_whitespace() {
        let t = tok.to_lowercase();
        if t.contains("://") || t.starts_with("www.") || (t.contains('@') && t.contains('.')) {
            continue;
        }
        kept.push(tok);
    }
    let mut joined = kept.join(" ");
    // A leading label: one or two words followed by a colon.
    if let Some(pos) = joined.find(':') {
        let label = &joined[..pos];
        if !label.is_empty()
            && label.split_whitespace().count() <= 2
            && label.chars().all(|c| c.is_alphanumeric() || c == ' ')
        {
            joined = joined[pos + 1..].to_string();
        }
    }
    let mut words = text::words(&joined);
    for lead in LEAD_INS {
        if words.len() > lead.len() && words.iter().zip(lead.iter()).all(|(a, b)| a == b) {
            words.drain(..lead.len());
            break;
        }
    }
    words
}

/// True when the claim is negated.
pub fn negated(s: &str) -> bool {
    let lower = s.to_lowercase();
    lower.contains("n't")
        || lower.contains("n’t")
        || text::words(&lower).iter().any(|w| NEGATIONS.contains(&w.as_str()))
}

struct Claim {
    set: Vec<u64>,
    len: usize,
    neg: bool,
    conflict: bool,
}

fn claim(item: &Item) -> Claim {
    let (mut set, len, neg) = plain_claim(&item.content).unwrap_or_else(|| {
        let words = normalise(&item.content);
        let hashes = words.iter().map(|w| text::fnv1a(w.as_bytes())).collect();
        (hashes, words.len(), negated(&item.content))
    });
    set.sort_unstable();
    set.dedup();
    Claim { set, len, neg, conflict: item.conflict }
}

/// [`normalise`]'s word hashes, their number and [`negated`] of an ASCII text that holds no colon, no
/// `@` and no `www.` (most memories), in one pass over its words: such a text has no URL, address or
/// label to remove, so its normalised words are its words less a lead-in. None for any other text.
fn plain_claim(s: &str) -> Option<(Vec<u64>, usize, bool)> {
    let b = s.as_bytes();
    let has = |pat: &[u8]| b.windows(pat.len()).any(|w| w.eq_ignore_ascii_case(pat));
    if !s.is_ascii() || b.iter().any(|&c| c == b':' || c == b'@') || has(b"www.") {
        return None;
    }
    let longest_lead = LEAD_INS.iter().map(|l| l.len()).max().unwrap_or(0);
    let (mut first, mut neg) = (Vec::new(), has(b"n't"));
    let mut hashes = text::map_words(s, |w| {
        if first.len() < longest_lead {
            first.push(w.to_string());
        }
        neg |= NEGATIONS.contains(&w);
        text::fnv1a(w.as_bytes())
    });
    if let Some(lead) =
        LEAD_INS.iter().find(|l| hashes.len() > l.len() && first.iter().zip(l.iter()).all(|(a, b)| a == b))
    {
        hashes.drain(..lead.len());
    }
    let len = hashes.len();
    Some((hashes, len, neg))
}

impl Claim {
    /// Whether this claim can fold with any other at all.
    fn foldable(&self) -> bool {
        !self.conflict && self.len >= FOLD_MIN_WORDS
    }
}

fn folds(a: &Claim, b: &Claim) -> bool {
    if !a.foldable() || !b.foldable() || a.neg != b.neg {
        return false;
    }
    // Jaccard is at most the smaller set's size over the larger's: sets too unequal in size are
    // apart without comparing their words.
    let (small, large) = (a.set.len().min(b.set.len()), a.set.len().max(b.set.len()));
    (small as f64) >= FOLD_JACCARD * large as f64 && text::jaccard(&a.set, &b.set) >= FOLD_JACCARD
}

/// Groups `members` (indexes into `items`, already sorted most useful first) into fold groups; the
/// first index of each group is its survivor: a member joins the first group, in the order the
/// groups were opened, whose survivor it folds with.
pub fn groups(items: &[Item], members: &[usize]) -> Vec<Vec<usize>> {
    let claims: Vec<Claim> = members.iter().map(|&i| claim(&items[i])).collect();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    // (claim index of the survivor, its group) of the groups a later member can join, in order.
    let mut open: Vec<(usize, usize)> = Vec::new();
    for (ci, &i) in members.iter().enumerate() {
        let c = &claims[ci];
        if !c.foldable() {
            groups.push(vec![i]);
            continue;
        }
        match open.iter().find(|(s, _)| folds(&claims[*s], c)) {
            Some(&(_, g)) => groups[g].push(i),
            None => {
                open.push((ci, groups.len()));
                groups.push(vec![i]);
            }
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalises_labels_and_lead_ins() {
        assert_eq!(
            normalise("Decision: we decided that Atlas ships Friday, see https://x.y"),
            vec!["atlas", "ships", "friday", "see"]
        );
        assert!(negated("We don't ship on Fridays"));
        assert!(!negated("We ship on Fridays"));
    }

    #[test]
    fn folds_restatements_not_contradictions() {
        let a = Claim { set: vec![1, 2, 3, 4, 5, 6], len: 6, neg: false, conflict: false };
        let b = Claim { set: vec![1, 2, 3, 4, 5, 6], len: 6, neg: true, conflict: false };
        let c = Claim { set: vec![1, 2, 3, 4, 5, 6], len: 6, neg: false, conflict: true };
        let short = Claim { set: vec![1, 2], len: 2, neg: false, conflict: false };
        assert!(folds(&a, &a));
        assert!(!folds(&a, &b));
        assert!(!folds(&a, &c));
        assert!(!folds(&short, &short));
    }

    fn fact(content: &str) -> Item {
        crate::pack::testing::item("m", content)
    }

    #[test]
    fn groups_keep_the_first_member_as_survivor() {
        let items = vec![
            fact("Note: the atlas launch moved to friday after review"),
            fact("the budget for the offsite is twelve thousand euros"),
            fact("we agreed that the atlas launch moved to friday after review"),
            fact("the atlas launch moved to friday after review"),
        ];
        // Members in usefulness order: 3 first, so 3 survives and absorbs 0 and 2.
        assert_eq!(groups(&items, &[3, 1, 0, 2]), vec![vec![3, 0, 2], vec![1]]);
        assert_eq!(groups(&items, &[]), Vec::<Vec<usize>>::new());
    }

    /// The grouping without pruning: each member against every survivor, in order.
    fn groups_unpruned(items: &[Item], members: &[usize]) -> Vec<Vec<usize>> {
        let claims: Vec<Claim> = members.iter().map(|&i| claim(&items[i])).collect();
        let mut groups: Vec<(usize, Vec<usize>)> = Vec::new();
        for (ci, &i) in members.iter().enumerate() {
            let c = &claims[ci];
            let fold = |a: &Claim| {
                a.foldable() && c.foldable() && a.neg == c.neg && text::jaccard(&a.set, &c.set) >= FOLD_JACCARD
            };
            match groups.iter_mut().find(|(s, _)| fold(&claims[*s])) {
                Some((_, g)) => g.push(i),
                None => groups.push((ci, vec![i])),
            }
        }
        groups.into_iter().map(|g| g.1).collect()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// Skipping claims that cannot fold and sets too unequal in size changes no group.
        #[test]
        fn pruning_changes_no_group(
            texts in proptest::collection::vec(
                (proptest::collection::vec(0usize..9, 1..12), proptest::bool::weighted(0.1), proptest::bool::weighted(0.2)),
                0..24,
            ),
        ) {
            const WORDS: [&str; 9] = ["atlas", "launch", "moved", "friday", "review", "budget", "offsite", "euros", "team"];
            let items: Vec<Item> = texts
                .iter()
                .map(|(ws, conflict, neg)| {
                    let mut t: Vec<&str> = ws.iter().map(|&w| WORDS[w]).collect();
                    if *neg {
                        t.push("not");
                    }
                    Item { conflict: *conflict, ..fact(&t.join(" ")) }
                })
                .collect();
            let members: Vec<usize> = (0..items.len()).collect();
            proptest::prop_assert_eq!(groups(&items, &members), groups_unpruned(&items, &members));
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

        /// The one-pass claim of a plain ASCII text is the claim [`normalise`] and [`negated`] give.
        #[test]
        fn a_plain_claim_is_the_normalised_one(
            words in proptest::collection::vec(
                proptest::sample::select(vec![
                    "We", "we", "decided", "agreed", "that", "It", "was", "note", "Remember", "FYI", "fyi",
                    "not", "NEVER", "don't", "DON'T", "won’t", "atlas", "Friday,", "ships", "x.y", "a@b.c",
                    "https://x.y", "WWW.site", "Decision:", "label:", "café", "v2", "--", "no.", "ok!",
                ]),
                0..12,
            ),
            sep in proptest::sample::select(vec![" ", "  ", "\n", " \t"]),
        ) {
            let s = words.join(sep);
            if let Some((mut set, len, neg)) = plain_claim(&s) {
                let want = normalise(&s);
                let mut want_set: Vec<u64> = want.iter().map(|w| text::fnv1a(w.as_bytes())).collect();
                want_set.sort_unstable();
                want_set.dedup();
                set.sort_unstable();
                set.dedup();
                proptest::prop_assert_eq!((set, len, neg), (want_set, want.len(), negated(&s)));
            }
        }
    }

    #[test]
    fn flagged_conflicts_and_short_claims_stay_apart() {
        let flagged = Item { conflict: true, ..fact("the atlas launch moved to friday after review") };
        let items = vec![fact("the atlas launch moved to friday after review"), flagged, fact("ok"), fact("ok")];
        assert_eq!(groups(&items, &[0, 1, 2, 3]), vec![vec![0], vec![1], vec![2], vec![3]]);
    }
}
