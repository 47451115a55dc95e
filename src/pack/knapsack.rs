//! Marginal-utility knapsack (reference §4, FACTS.md "Knapsack"): one global pool; each step takes
//! the admission (or upgrade) with the highest MMR-adjusted utility per token.
//!
//! **ours**: the ladder is part of the sequence. An item with a shorter rung (summary, head
//! sentence, or a cut of a very long text) is admitted at that rung, carrying
//! [`SHORT_RUNG_VALUE`] of its utility, and grows back to its full text through upgrade steps that
//! compete on their own density. The pack is the longest prefix of the sequence that fits the
//! budget: compress, don't drop, and budget monotonicity holds exactly.

use super::{collect, floor_plan, fold, plan, take_prefix, utility, Item, Layer, Pack, Params, Step, FLOOR_ROOM};
use crate::text;
use std::collections::{HashMap, VecDeque};

/// MMR redundancy penalty: utility × (1 − MMR_PENALTY × max Jaccard with items already taken).
pub const MMR_PENALTY: f64 = 0.35;
/// Share of an item's utility its shortest rung is taken to carry (**ours**): a head sentence or a
/// summary usually states the claim; the rest adds detail.
pub const SHORT_RUNG_VALUE: f64 = 0.6;

struct Entry {
    util: f64,
    set: Vec<u64>,
    max_sim: f64,
    /// The admission step, until taken.
    admit: Option<Step>,
    /// Share of the utility the admission carries (1 when it is the full text).
    share: f64,
    /// Upgrade steps left, and their density per token (fixed when the item is admitted).
    upgrades: VecDeque<Step>,
    up_density: f64,
}

struct Sequence<'a> {
    items: &'a [Item],
    /// Entry of each item (None outside the pool), indexed like `items`.
    entries: Vec<Option<Entry>>,
    /// Pool indexes still holding a step, in a fixed order, so iteration is deterministic.
    order: Vec<usize>,
    first: Option<Step>,
}

impl Sequence<'_> {
    fn admitted(&mut self, idx: usize) {
        let Some(e) = self.entries.get_mut(idx).and_then(Option::as_mut) else { return };
        let full_left: usize = e.upgrades.iter().map(|s| s.cost).sum();
        let m = 1.0 - MMR_PENALTY * e.max_sim;
        e.up_density = if full_left == 0 { 0.0 } else { (1.0 - e.share) * e.util * m / full_left as f64 };
        let set = std::mem::take(&mut e.set);
        for &j in &self.order {
            if j == idx {
                continue;
            }
            if let Some(other) = self.entries[j].as_mut().filter(|o| o.admit.is_some()) {
                other.max_sim = other.max_sim.max(text::jaccard(&set, &other.set));
            }
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
        // (density, is_upgrade, ref, idx); ties: lower ref, then admissions before upgrades.
        let mut best: Option<(f64, bool, &str, usize)> = None;
        for &i in &self.order {
            let Some(e) = &self.entries[i] else { continue };
            let r = self.items[i].r#ref.as_str();
            let cand = match (&e.admit, e.upgrades.front()) {
                (Some(a), _) => {
                    Some((e.share * e.util * (1.0 - MMR_PENALTY * e.max_sim) / a.cost.max(1) as f64, false))
                }
                (None, Some(_)) => Some((e.up_density, true)),
                (None, None) => None,
            };
            let Some((d, up)) = cand else { continue };
            let better = match &best {
                None => true,
                Some((bd, bup, bref, _)) => d > *bd || (d == *bd && (r < *bref || (r == *bref && !up && *bup))),
            };
            if better {
                best = Some((d, up, r, i));
            }
        }
        let (_, up, _, i) = best?;
        let e = self.entries[i].as_mut()?;
        let step = if up {
            e.upgrades.pop_front()
        } else {
            let s = e.admit.take();
            self.admitted(i);
            s
        };
        // Items with nothing left to give leave the scan.
        if self.entries[i].as_ref().is_some_and(|e| e.admit.is_none() && e.upgrades.is_empty()) {
            self.order.retain(|&j| j != i);
        }
        step
    }
}

/// Packs with the knapsack.
pub fn pack(items: Vec<Item>, p: Params) -> Pack {
    let weights = p.intent.weights();
    let sum: f64 = weights.iter().sum();
    let prior = |l: Layer| weights[l as usize] / sum;
    let util: Vec<f64> = items.iter().map(|it| utility(it, prior(it.layer), &p.profile)).collect();
    let by_util =
        |a: &usize, b: &usize| util[*b].total_cmp(&util[*a]).then_with(|| items[*a].r#ref.cmp(&items[*b].r#ref));

    // Layers the intent gives no weight get nothing.
    let mut pool: Vec<usize> = (0..items.len()).filter(|&i| prior(items[i].layer) > 0.0).collect();
    pool.sort_by(by_util);

    // Fold near-duplicate facts into their most useful member.
    let facts: Vec<usize> = pool.iter().copied().filter(|&i| items[i].layer == Layer::Facts).collect();
    let mut folded: HashMap<usize, Vec<String>> = HashMap::new();
    let mut deduped = 0;
    let mut gone = vec![false; items.len()];
    for g in fold::groups(&items, &facts) {
        if g.len() > 1 {
            for &m in &g[1..] {
                gone[m] = true;
                deduped += 1;
            }
            folded.insert(g[0], g[1..].iter().map(|&m| items[m].r#ref.clone()).collect());
        }
    }
    pool.retain(|&i| !gone[i]);

    let floor_idx = pool.iter().copied().find(|&i| items[i].layer == Layer::Constraints);
    let mut first = None;
    let mut entries: Vec<Option<Entry>> = (0..items.len()).map(|_| None).collect();
    for &i in &pool {
        let it = &items[i];
        let pl = if Some(i) == floor_idx {
            match floor_plan(i, it, &p.profile, FLOOR_ROOM) {
                Some(f) => {
                    first = Some(f.admit.clone());
                    f
                }
                None => plan(i, it, &p.profile, true),
            }
        } else {
            plan(i, it, &p.profile, true)
        };
        let share = if pl.upgrades.is_empty() { 1.0 } else { SHORT_RUNG_VALUE };
        let admit = if first.as_ref().is_some_and(|f| f.item == i) { None } else { Some(pl.admit) };
        entries[i] = Some(Entry {
            util: util[i],
            set: text::word_set(&it.content),
            max_sim: 0.0,
            admit,
            share,
            upgrades: pl.upgrades,
            up_density: 0.0,
        });
    }
    let seq = Sequence { items: &items, entries, order: pool.clone(), first };
    let (mut state, used, _) = take_prefix(items.len(), seq, p.budget);

    let mut packed_idx: Vec<usize> = (0..items.len()).filter(|&i| state[i].is_some()).collect();
    packed_idx.sort_by(|a, b| items[*a].layer.cmp(&items[*b].layer).then_with(|| by_util(a, b)));
    let mut excluded: Vec<Item> = pool.iter().filter(|&&i| state[i].is_none()).map(|&i| items[i].clone()).collect();
    excluded.extend(items.iter().filter(|it| prior(it.layer) == 0.0).cloned());
    let out = collect(&items, &mut state, &packed_idx, |i| folded.remove(&i).unwrap_or_default(), |i| util[i]);
    Pack { items: out, budget: p.budget, used, excluded, deduped, intent: p.intent }
}
