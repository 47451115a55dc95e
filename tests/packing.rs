//! The packers as property tests, below SQL: candidates of one layer, in retrieval order, costed by
//! the real envelope layout of every format and profile. The longest prefix of the ranking whose
//! full texts fit the room is always in the pack (at whatever rung: head sentence, summary, cut or
//! full text), whichever packer the profile uses: a pack never trades a better-ranked memory that
//! fits for a worse-ranked one.

use cmp::envelope::{Layout, Legend};
use cmp::options::Format;
use cmp::pack::intent::Intent;
use cmp::pack::{self, Item, Layer, Meter, Params};
use cmp::profile;
use cmp::tokens::Counter;
use proptest::prelude::*;
use std::collections::{HashMap, HashSet};

const WORDS: &[&str] = &[
    "atlas",
    "launch",
    "budget",
    "review",
    "friday",
    "the",
    "a",
    "moved",
    "to",
    "June",
    "vendor",
    "contract",
    "Caroline",
    "said",
    "ok!",
    "haha",
    "yes.",
    "北京",
    "出差",
    "café",
    "2026-05-04",
    "#42",
    "🙂",
    "and",
    "then",
];

/// One sentence (a text of several makes a head-sentence rung possible).
fn sentence(words: &[usize]) -> String {
    let s = words.iter().map(|&w| WORDS[w % WORDS.len()]).collect::<Vec<_>>().join(" ");
    if s.ends_with(['.', '!']) {
        s
    } else {
        format!("{s}.")
    }
}

fn item(i: usize, sentences: &[Vec<usize>], summary: bool) -> Item {
    let content: String = sentences.iter().map(|s| sentence(s)).collect::<Vec<_>>().join(" ");
    let content = if content.is_empty() { format!("memory {i}") } else { content };
    Item {
        r#ref: format!("mem_{i:012x}"),
        summary: summary.then(|| content.chars().take(40).collect()),
        content,
        layer: Layer::Facts,
        kind: Some("semantic".into()),
        relevance: Some(1.0 / (i as f64 + 1.0)),
        basis: None,
        retrievers: Vec::new(),
        matched_terms: Vec::new(),
        fused_rank: Some(i + 1),
        source_url: None,
        confidence: None,
        trust: 0.5,
        occurred_at: Some(format!("2026-05-{:02}T10:00:00Z", i % 28 + 1)),
        age_days: i as f64,
        entities: Vec::new(),
        conflict: false,
    }
}

fn items() -> impl Strategy<Value = Vec<Item>> {
    let sentences = prop::collection::vec(prop::collection::vec(0usize..100, 1..40), 1..8);
    prop::collection::vec((sentences, any::<bool>()), 1..30)
        .prop_map(|v| v.iter().enumerate().map(|(i, (s, summary))| item(i, s, *summary)).collect())
}

/// The longest prefix of `items` whose full texts, with the shared units they open, fit `room`
/// (near-duplicates folded into a packed item are skipped; the item they fold into names them).
fn fitting_prefix(items: &[Item], meter: &dyn Meter, room: usize, folds: &HashMap<String, Vec<String>>) -> Vec<String> {
    let folded: HashSet<&String> = folds.values().flatten().collect();
    let none = Vec::new();
    let mut used = 0;
    let mut opened: HashSet<String> = HashSet::new();
    let mut out = Vec::new();
    for it in items.iter().filter(|it| !folded.contains(&it.r#ref)) {
        let groups: usize = meter.groups(it).into_iter().filter(|(k, _)| !opened.contains(k)).map(|(_, t)| t).sum();
        used += meter.cost(it, &it.content, None, folds.get(&it.r#ref).unwrap_or(&none)) + groups;
        if used > room {
            break;
        }
        opened.extend(meter.groups(it).into_iter().map(|(k, _)| k));
        out.push(it.r#ref.clone());
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(64),
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_longest_fitting_prefix_of_the_ranking_is_packed(
        items in items(),
        budget in 300usize..9_000,
        reserve in 100usize..400,
        p in 0usize..4,
        f in 0usize..3,
    ) {
        let name = ["generic", "claude", "gpt", "cursor"][p];
        let profile = profile::resolve(Some(name));
        let format = [Format::Smp, Format::Json, Format::Markdown][f];
        let layout = Layout {
            format,
            counter: Counter::for_model(Some(name), profile.name),
            audit: false,
            legend: Legend::Compact,
            session: false,
        };
        let budget = budget.min(profile.pack_token_budget as usize);
        let params = Params { profile, budget, reserve, intent: Intent::Answer, meter: &layout };
        let room = params.room();
        // Which memories fold into which does not depend on the budget: read it off a pack that
        // holds everything.
        let all = pack::pack(&items, Params { budget: 1 << 40, reserve: 0, ..params });
        let folds: HashMap<String, Vec<String>> =
            all.items.iter().map(|x| (x.item.r#ref.clone(), x.folded_refs.clone())).collect();
        let pack = pack::pack(&items, params);
        let packed: HashSet<String> = pack.items.into_iter().map(|x| x.item.r#ref).collect();
        let want = fitting_prefix(&items, &layout, room, &folds);
        for r in &want {
            prop_assert!(packed.contains(r), "{} ({}, {:?}) fits in ranking order but was not packed", r, name, format);
        }
    }
}
