//! The knapsack packer (claude, gpt, cursor): each step of the sequence is the admission or upgrade
//! with the highest MMR-adjusted utility per token, with one rule the reference does not have:
//! within a layer, memories are admitted in retrieval order. Utility per token alone favours short,
//! weakly matching memories ("haha yes", "ok!") over strong matches; ranking order within a layer
//! means a cheap weak memory can never displace a stronger one, so the pack always holds at least
//! what a greedy fill of cmp's own ranking would.
//!
//! The ladder is part of the sequence: an item with a shorter rung (summary, head sentence, or a cut
//! of a very long text) is admitted at that rung, carrying a share of its utility (`rung_share`:
//! the share of the text a short text's head sentence shows, [`SHORT_RUNG_VALUE`] otherwise), and
//! grows back to its full text through upgrade steps that compete on their own density. The pack is
//! the longest prefix of the sequence that fits the budget: compress, don't drop, and budget
//! monotonicity holds exactly. The memory the prefix stopped at enters the room left at its first
//! ladder rung that fits, or truncated, as in the generic packer.

use super::{
    collect, floor_plan, fold, plan, take_prefix, utility, Compression, Item, Layer, Pack, Params, Step,
    MAX_STEP_TOKENS,
};
use crate::text;
use std::collections::{HashMap, VecDeque};

/// MMR redundancy penalty: utility × (1 − MMR_PENALTY × max Jaccard with items already taken).
pub const MMR_PENALTY: f64 = 0.35;
/// Share of an item's utility its shortest rung is taken to carry when it is a stored summary or the
/// first rung of a text longer than one step: a summary states the claim; the rest adds detail. (A
/// short text's head sentence carries the share of the text it shows, `rung_share`.)
pub const SHORT_RUNG_VALUE: f64 = 0.6;

/// Share of an item's utility its admission step carries when the item can still grow. A head
/// sentence of a text that fits one step ([`MAX_STEP_TOKENS`]: a chat message, a note) carries the
/// share of the text's tokens it shows: which part of a short text holds what a task needs is
/// unknown, a message's first sentence is often only its greeting ("Thanks, Caroline!"), and a head
/// sentence no denser than its text lets a strong match grow before a weaker one's first sentence
/// enters. A stored summary, and the first rung of a longer text, carry [`SHORT_RUNG_VALUE`]: a
/// summary is written to state the claim, and a long text's growth must not hold back the rest.
fn rung_share(item: &Item, admit: &Step, p: &Params<'_>) -> f64 {
    let fixed = crate::retrieve::knob("CMP_SHORT_RUNG", SHORT_RUNG_VALUE);
    if admit.compressed != Some(Compression::Head) || crate::retrieve::knob("CMP_HEAD_SHARE", 1.0) == 0.0 {
        return fixed;
    }
    let full = p.meter.content_tokens(&item.content);
    if full > MAX_STEP_TOKENS {
        return fixed;
    }
    (p.meter.content_tokens(&admit.content) as f64 / full.max(1) as f64).min(1.0)
}

struct Entry {
    util: f64,
    /// Admission step, until taken.
    admit: Option<Step>,
    /// Share of the utility the admission carries (1 when it is the full text).
    share: f64,
    /// Upgrade steps left, and their density per token (fixed when the item is admitted).
    upgrades: VecDeque<Step>,
    up_density: f64,
    /// Highest word-set Jaccard with an admitted item (kept current while the item waits).
    max_sim: f64,
    /// Admitted as its full text: its one upgrade is that text again at no cost, a step that changes
    /// nothing, so the item never waits among the growing ones.
    full: bool,
}

/// The word sets of admitted items, indexed by word. The highest Jaccard of a set with any of them
/// is computed from the sets that share a word with it (a set that shares none scores 0), the same
/// value [`text::jaccard`] gives, without comparing the set with every admitted one.
#[derive(Default)]
struct Taken {
    /// Word → the admitted sets that hold it (indexes into `lens`).
    by_word: HashMap<u64, Vec<u32>, text::FnvBuild>,
    /// The size of each admitted set.
    lens: Vec<usize>,
    /// Words each admitted set shares with the set being scored (all zero between calls).
    shared: Vec<u32>,
    /// The admitted sets that share a word with the set being scored (empty between calls).
    touched: Vec<u32>,
}

impl Taken {
    /// Adds the word set of an admitted item (sorted and deduplicated, as [`text::word_set`] gives).
    fn push(&mut self, set: &[u64]) {
        let k = self.lens.len() as u32;
        for &w in set {
            self.by_word.entry(w).or_default().push(k);
        }
        self.lens.push(set.len());
        self.shared.push(0);
    }

    /// The highest [`text::jaccard`] of `set` with an admitted set; 0 when there is none.
    fn max_jaccard(&mut self, set: &[u64]) -> f64 {
        for w in set {
            for &k in self.by_word.get(w).map_or(&[][..], Vec::as_slice) {
                if self.shared[k as usize] == 0 {
                    self.touched.push(k);
                }
                self.shared[k as usize] += 1;
            }
        }
        let mut best = 0.0f64;
        for k in self.touched.drain(..) {
            let inter = std::mem::take(&mut self.shared[k as usize]) as usize;
            best = best.max(inter as f64 / (self.lens[k as usize] + set.len() - inter) as f64);
        }
        best
    }
}

struct Sequence<'a> {
    items: &'a [Item],
    p: Params<'a>,
    util: &'a [f64],
    folded: &'a HashMap<usize, Vec<String>>,
    entries: Vec<Option<Entry>>,
    /// Per layer, items waiting for admission, in retrieval order.
    queues: Vec<VecDeque<usize>>,
    /// Admitted items that still have upgrades.
    growing: Vec<usize>,
    /// Word sets of admitted items.
    taken: Taken,
    /// Word sets, computed when an item is first compared.
    sets: Vec<Option<Vec<u64>>>,
    first: Option<Step>,
}

impl<'a> Sequence<'a> {
    /// The sequence over `pool` (retrieval order, folded members left out): every item waits in
    /// its layer's queue, except the top constraint `floor`, which comes first at its floor rung
    /// when one fits [`Params::floor_room`].
    fn new(
        items: &'a [Item],
        p: Params<'a>,
        util: &'a [f64],
        folded: &'a HashMap<usize, Vec<String>>,
        pool: &[usize],
        floor: Option<usize>,
    ) -> Self {
        let mut seq = Sequence {
            items,
            p,
            util,
            folded,
            entries: (0..items.len()).map(|_| None).collect(),
            queues: vec![VecDeque::new(); 8],
            growing: Vec::new(),
            taken: Taken::default(),
            sets: vec![None; items.len()],
            first: None,
        };
        let no_folds: Vec<String> = Vec::new();
        for &i in pool {
            let it = &items[i];
            let fl = (Some(i) == floor)
                .then(|| floor_plan(i, it, &p, p.floor_room(), folded.get(&i).unwrap_or(&no_folds)))
                .flatten();
            let Some(fl) = fl else {
                seq.queues[it.layer as usize].push_back(i);
                continue;
            };
            let share = if fl.upgrades.is_empty() { 1.0 } else { rung_share(it, &fl.admit, &p) };
            seq.first = Some(fl.admit);
            seq.entries[i] = Some(Entry {
                util: util[i],
                admit: None,
                share,
                upgrades: fl.upgrades,
                up_density: 0.0,
                max_sim: 0.0,
                full: false,
            });
        }
        seq
    }

    fn set(&mut self, i: usize) -> &[u64] {
        let items = self.items;
        self.sets[i].get_or_insert_with(|| text::word_set(&items[i].content))
    }

    /// `f` of item `i`'s word set and the sequence (the set is lent out, not copied).
    fn with_set<T>(&mut self, i: usize, f: impl FnOnce(&mut Self, &[u64]) -> T) -> T {
        let set = self.sets[i].take().unwrap_or_else(|| text::word_set(&self.items[i].content));
        let out = f(self, &set);
        self.sets[i] = Some(set);
        out
    }

    /// Plans an item when it first reaches the head of its queue: items never reached cost nothing.
    fn ensure(&mut self, i: usize) {
        if self.entries[i].is_some() {
            return;
        }
        let no_folds = Vec::new();
        let f = self.folded.get(&i).unwrap_or(&no_folds);
        let pl = plan(i, &self.items[i], &self.p, true, f);
        let share = if pl.upgrades.is_empty() { 1.0 } else { rung_share(&self.items[i], &pl.admit, &self.p) };
        let full = pl.admit.compressed.is_none();
        self.entries[i] = Some(Entry {
            util: self.util[i],
            admit: Some(pl.admit),
            share,
            upgrades: pl.upgrades,
            up_density: 0.0,
            max_sim: 0.0,
            full,
        });
        self.refresh(i);
    }

    /// A newly admitted item: fix its upgrade density, and lower the value of waiting items that
    /// repeat it (only queue heads can be admitted next; the others catch up when they get there).
    fn admitted(&mut self, idx: usize) {
        self.with_set(idx, |seq, set| {
            for l in 0..seq.queues.len() {
                let Some(j) = seq.queues[l].front().copied().filter(|&j| j != idx) else { continue };
                let sim = text::jaccard(set, seq.set(j));
                if let Some(e) = seq.entries[j].as_mut() {
                    e.max_sim = e.max_sim.max(sim);
                }
            }
            seq.taken.push(set);
        });
        let Some(e) = self.entries[idx].as_mut() else { return };
        let full_left: usize = e.upgrades.iter().map(|s| s.cost).sum();
        let m = 1.0 - MMR_PENALTY * e.max_sim;
        e.up_density = if full_left == 0 { 0.0 } else { (1.0 - e.share) * e.util * m / full_left as f64 };
        if !e.upgrades.is_empty() && !e.full {
            self.growing.push(idx);
        }
    }

    /// Brings a waiting item up to date with everything admitted before it became a queue head.
    fn refresh(&mut self, j: usize) {
        let sim = self.with_set(j, |seq, own| seq.taken.max_jaccard(own));
        if let Some(e) = self.entries[j].as_mut() {
            e.max_sim = e.max_sim.max(sim);
        }
    }
}

impl Iterator for Sequence<'_> {
    type Item = Step;

    fn next(&mut self) -> Option<Step> {
        if let Some(s) = self.first.take() {
            self.admitted(s.item);
            return Some(s);
        }
        // (density, is_upgrade, ref, idx, layer); ties: lower ref, then admissions before upgrades.
        let items = self.items;
        let mut best: Option<(f64, bool, &str, usize, usize)> = None;
        let mut consider = |d: f64, up: bool, i: usize, layer: usize| {
            let r = items[i].r#ref.as_str();
            let better = match &best {
                None => true,
                Some((bd, bup, bref, _, _)) => d > *bd || (d == *bd && (r < *bref || (r == *bref && !up && *bup))),
            };
            if better {
                best = Some((d, up, r, i, layer));
            }
        };
        for l in 0..self.queues.len() {
            if let Some(&i) = self.queues[l].front() {
                self.ensure(i);
            }
        }
        for (l, q) in self.queues.iter().enumerate() {
            let Some(&i) = q.front() else { continue };
            let Some(e) = &self.entries[i] else { continue };
            let Some(a) = &e.admit else { continue };
            let d = e.share * e.util * (1.0 - MMR_PENALTY * e.max_sim) / a.cost.max(1) as f64;
            consider(d, false, i, l);
        }
        for &i in &self.growing {
            if let Some(e) = &self.entries[i] {
                consider(e.up_density, true, i, 0);
            }
        }
        let (_, up, _, i, layer) = best?;
        if up {
            let e = self.entries[i].as_mut()?;
            let step = e.upgrades.pop_front();
            if e.upgrades.is_empty() {
                self.growing.retain(|&j| j != i);
            }
            return step;
        }
        self.queues[layer].pop_front();
        let step = self.entries[i].as_mut()?.admit.take();
        self.admitted(i);
        step
    }
}

/// Folds near-duplicate facts into their most useful member: (members folded away, folded refs per
/// survivor, how many were folded).
fn fold_facts(items: &[Item], pool: &[usize]) -> (Vec<bool>, HashMap<usize, Vec<String>>, usize) {
    let facts: Vec<usize> = pool.iter().copied().filter(|&i| items[i].layer == Layer::Facts).collect();
    let mut folded: HashMap<usize, Vec<String>> = HashMap::new();
    let mut deduped = 0;
    let mut gone = vec![false; items.len()];
    for g in fold::groups(items, &facts) {
        if g.len() > 1 {
            for &m in &g[1..] {
                gone[m] = true;
                deduped += 1;
            }
            folded.insert(g[0], g[1..].iter().map(|&m| items[m].r#ref.clone()).collect());
        }
    }
    (gone, folded, deduped)
}

/// Packs with the knapsack.
pub fn pack(items: &[Item], p: Params<'_>) -> Pack {
    let weights = p.intent.weights();
    let sum: f64 = weights.iter().sum();
    let prior = |l: Layer| weights[l as usize] / sum;
    let util: Vec<f64> = items.iter().map(|it| utility(it, prior(it.layer), &p.profile)).collect();
    let by_util =
        |a: &usize, b: &usize| util[*b].total_cmp(&util[*a]).then_with(|| items[*a].r#ref.cmp(&items[*b].r#ref));

    // Layers the intent gives no weight get nothing; the rest wait in retrieval order.
    let mut pool: Vec<usize> = (0..items.len()).filter(|&i| prior(items[i].layer) > 0.0).collect();
    let mut by_value = pool.clone();
    by_value.sort_by(by_util);
    let (gone, folded, deduped) = fold_facts(items, &by_value);
    pool.retain(|&i| !gone[i]);

    let floor = by_value.iter().copied().find(|&i| !gone[i] && items[i].layer == Layer::Constraints);
    let seq = Sequence::new(items, p, &util, &folded, &pool, floor);
    let mut prefix = take_prefix(items, p.meter, seq, p.room());
    let stopped_folds = prefix.stopped.as_ref().and_then(|s| folded.get(&s.item)).cloned().unwrap_or_default();
    prefix.fill_last(items, p.meter, p.room(), &stopped_folds);
    let mut folded = folded;

    let mut packed_idx: Vec<usize> = (0..items.len()).filter(|&i| prefix.state[i].is_some()).collect();
    packed_idx.sort_by(|a, b| items[*a].layer.cmp(&items[*b].layer).then_with(|| by_util(a, b)));
    let mut excluded: Vec<usize> =
        by_value.iter().copied().filter(|&i| !gone[i] && prefix.state[i].is_none()).collect();
    excluded.extend((0..items.len()).filter(|&i| prior(items[i].layer) == 0.0));
    let out = collect(items, &mut prefix.state, &packed_idx, |i| folded.remove(&i).unwrap_or_default(), |i| util[i]);
    Pack {
        items: out,
        budget: p.budget,
        used: p.reserve + prefix.used,
        items_used: prefix.used,
        excluded,
        deduped,
        intent: p.intent,
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{in_layer, item, params, refs, words, Words};
    use super::*;
    use crate::profile;
    use proptest::prelude::*;

    fn claude() -> crate::profile::Profile {
        profile::resolve(Some("claude"))
    }

    #[test]
    fn within_a_layer_a_cheap_weak_memory_never_displaces_a_stronger_one() {
        // "ok!" has by far the best utility per token, but it was retrieved after the strong match.
        let items = vec![
            Item { relevance: Some(0.9), ..item("strong", &words("s", 20)) },
            Item { relevance: Some(0.2), ..item("weak", "ok!") },
        ];
        let p = pack(&items, params(claude(), 20 + Words::FRAMING));
        assert_eq!(refs(&p), vec!["strong"]);
        assert_eq!(items[p.excluded[0]].r#ref, "weak");
    }

    #[test]
    fn near_duplicate_facts_fold_into_the_most_useful() {
        let text = "the atlas launch moved to friday after the security review";
        let items = vec![
            Item { relevance: Some(0.4), ..item("dup", &format!("We decided that {text}")) },
            Item { relevance: Some(0.9), ..item("best", text) },
            item("other", "the budget for the offsite is twelve thousand euros"),
        ];
        let p = pack(&items, params(claude(), 1000));
        assert_eq!(p.deduped, 1);
        let best = p.items.iter().find(|x| x.item.r#ref == "best").expect("the survivor is packed");
        assert_eq!(best.folded_refs, vec!["dup".to_string()]);
        assert!(!refs(&p).contains(&"dup") && !p.excluded.iter().any(|&i| items[i].r#ref == "dup"));
    }

    #[test]
    fn contradicting_facts_never_fold() {
        let items = vec![
            item("yes", "the atlas launch moved to friday after the security review"),
            item("no", "the atlas launch never moved to friday after the security review"),
        ];
        let p = pack(&items, params(claude(), 1000));
        assert_eq!((p.deduped, p.items.len()), (0, 2));
    }

    #[test]
    fn the_top_constraint_comes_first_and_layers_stay_in_envelope_order() {
        let items = vec![
            item("fact", "a fact"),
            in_layer("recent", "yesterday we met", Layer::Recency),
            in_layer("rule", "never deploy on fridays", Layer::Constraints),
        ];
        let p = pack(&items, params(claude(), 1000));
        assert_eq!(refs(&p), vec!["rule", "fact", "recent"]);
    }

    #[test]
    fn a_shorter_rung_is_admitted_before_the_full_text() {
        let text = format!("Atlas ships on Friday. {}", words("detail", 60));
        let items = vec![item("m", &text)];
        let tight = pack(&items, params(claude(), 4 + Words::FRAMING));
        assert_eq!(
            (tight.items[0].content.as_str(), tight.items[0].compressed),
            ("Atlas ships on Friday.", Some(Compression::Head))
        );
        let roomy = pack(&items, params(claude(), 1000));
        assert_eq!((roomy.items[0].content.as_str(), roomy.items[0].compressed), (text.as_str(), None));
    }

    #[test]
    fn a_strong_match_grows_before_a_weaker_ones_first_sentence_enters() {
        // A chat message's first sentence is often its greeting; a head sentence is worth the share
        // of the text it shows, so it is no denser than the text it cuts.
        let strong = format!("Thanks, Caroline! {}", words("s", 30));
        let items = vec![
            Item { relevance: Some(0.9), ..item("strong", &strong) },
            Item { relevance: Some(0.5), ..item("weak", &format!("Hey Mel! {}", words("w", 30))) },
        ];
        // Room for the strong text (32 + 3) and not also the weak head sentence (2 + 3).
        let p = pack(&items, params(claude(), 38));
        assert_eq!(refs(&p), vec!["strong"]);
        assert_eq!((p.items[0].content.as_str(), p.items[0].compressed), (strong.as_str(), None));
        // With room for both, the weak one enters at its head sentence.
        let p = pack(&items, params(claude(), 40));
        assert_eq!(refs(&p), vec!["strong", "weak"]);
        assert_eq!(p.items[1].compressed, Some(Compression::Head));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// The indexed highest Jaccard is the one a comparison with every admitted set gives.
        #[test]
        fn taken_scores_as_comparing_with_every_set(
            sets in prop::collection::vec(prop::collection::btree_set(0u64..40, 0..12), 0..20),
            probe in prop::collection::btree_set(0u64..40, 0..12),
        ) {
            let sets: Vec<Vec<u64>> = sets.into_iter().map(|s| s.into_iter().collect()).collect();
            let probe: Vec<u64> = probe.into_iter().collect();
            let mut taken = Taken::default();
            for (n, s) in sets.iter().enumerate() {
                taken.push(s);
                let all = sets[..=n].iter().map(|t| text::jaccard(t, &probe)).fold(0.0, f64::max);
                prop_assert_eq!(taken.max_jaccard(&probe).to_bits(), all.to_bits());
            }
        }

        /// The knapsack never exceeds its room, whatever the candidates and the reserve.
        #[test]
        fn never_exceeds_the_budget(
            sizes in prop::collection::vec((1usize..300, 0.0f64..1.0), 0..25),
            budget in 0usize..800,
            reserve in 0usize..200,
        ) {
            let items: Vec<Item> = sizes
                .iter()
                .enumerate()
                .map(|(i, (n, rel))| Item { relevance: Some(*rel), ..item(&format!("m{i}"), &words(&format!("x{i}y"), *n)) })
                .collect();
            let n = items.len();
            let p = pack(&items, Params { reserve, ..params(claude(), budget) });
            prop_assert!(p.items_used <= budget.saturating_sub(reserve));
            prop_assert_eq!(p.used, reserve + p.items_used);
            prop_assert_eq!(p.items.len() + p.excluded.len() + p.deduped, n);
        }
    }
}
