//! Marginal-utility knapsack (reference §4, FACTS.md "Knapsack"): one global pool; each step takes
//! the item (or upgrade) with the highest MMR-adjusted utility per token.
//!
//! **ours**: the ladder is part of the sequence. An item whose text has a shorter rung (summary,
//! head sentence) may be admitted at that rung first and upgraded to its full text by a later step,
//! when the upgrade's own density earns it; the pack is the longest prefix of the sequence that fits
//! the budget. This keeps "compress, don't drop" and makes budget monotonicity exact.

use super::{floor_step, fold, ladder, take_prefix, utility, Item, Layer, Pack, Packed, Params, Step, FLOOR_ROOM};
use crate::text;
use std::collections::HashMap;

/// MMR redundancy penalty: utility × (1 − MMR_PENALTY × max Jaccard with items already taken).
pub const MMR_PENALTY: f64 = 0.35;
/// Share of an item's utility its shortest rung is taken to carry (**ours**): a head sentence or a
/// summary usually states the claim, the rest adds detail.
pub const SHORT_RUNG_VALUE: f64 = 0.6;

struct Entry {
    util: f64,
    set: Vec<u64>,
    max_sim: f64,
    /// Admission: content, tag, cost, share of utility it carries.
    admit: Option<(String, Option<&'static str>, usize, f64)>,
    /// Pending upgrade to full text: (cost, value share, MMR factor frozen at admission).
    upgrade: Option<(usize, f64, f64)>,
}

struct Sequence<'a> {
    items: &'a [Item],
    entries: HashMap<usize, Entry>,
    order: Vec<usize>, // pool indexes, for deterministic iteration
    first: Option<Step>,
}

impl Sequence<'_> {
    fn admitted(&mut self, idx: usize) {
        let set = match self.entries.get(&idx) {
            Some(e) => e.set.clone(),
            None => return,
        };
        for (&j, e) in self.entries.iter_mut() {
            if j != idx && e.admit.is_some() {
                e.max_sim = e.max_sim.max(text::jaccard(&set, &e.set));
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
        // (density, is_upgrade, ref, idx)
        let mut best: Option<(f64, bool, &str, usize)> = None;
        for &i in &self.order {
            let e = &self.entries[&i];
            let r = self.items[i].r#ref.as_str();
            let cand = if let Some((_, _, cost, share)) = &e.admit {
                Some((share * e.util * (1.0 - MMR_PENALTY * e.max_sim) / *cost as f64, false))
            } else {
                e.upgrade.map(|(cost, share, m)| (share * e.util * m / cost.max(1) as f64, true))
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
        let e = self.entries.get_mut(&i)?;
        if up {
            let (cost, _, _) = e.upgrade.take()?;
            Some(Step { item: i, content: self.items[i].content.clone(), compressed: None, cost })
        } else {
            let (content, tag, cost, _) = e.admit.take()?;
            let m = 1.0 - MMR_PENALTY * e.max_sim;
            if let Some((ucost, ushare, _)) = e.upgrade {
                e.upgrade = Some((ucost, ushare, m));
            }
            self.admitted(i);
            Some(Step { item: i, content, compressed: tag, cost })
        }
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

    let max_cost = p.profile.pack_token_budget as usize;
    let floor = pool
        .iter()
        .copied()
        .find(|&i| items[i].layer == Layer::Constraints)
        .and_then(|i| floor_step(i, &items[i], &p.profile, FLOOR_ROOM));
    let mut entries = HashMap::new();
    for &i in &pool {
        let it = &items[i];
        let full = p.profile.item_cost(&it.content);
        let set = text::word_set(&it.content);
        if let Some(f) = floor.as_ref().filter(|f| f.item == i) {
            let upgrade = (f.compressed.is_some() && full <= max_cost)
                .then(|| (full.saturating_sub(f.cost).max(1), 1.0 - SHORT_RUNG_VALUE, 1.0));
            entries.insert(i, Entry { util: util[i], set, max_sim: 0.0, admit: None, upgrade });
            continue;
        }
        let (short, tag) = ladder::shortest(it);
        let short_cost = p.profile.item_cost(&short);
        if short_cost > max_cost {
            continue; // can never fit any budget of this profile
        }
        let combined = tag.is_none() || {
            let up = full - short_cost;
            (1.0 - SHORT_RUNG_VALUE) * short_cost as f64 >= SHORT_RUNG_VALUE * up as f64
        };
        let entry = if combined {
            if full > max_cost {
                continue;
            }
            Entry {
                util: util[i],
                set,
                max_sim: 0.0,
                admit: Some((it.content.clone(), None, full, 1.0)),
                upgrade: None,
            }
        } else {
            Entry {
                util: util[i],
                set,
                max_sim: 0.0,
                admit: Some((short, tag, short_cost, SHORT_RUNG_VALUE)),
                upgrade: (full <= max_cost).then(|| (full - short_cost, 1.0 - SHORT_RUNG_VALUE, 1.0)),
            }
        };
        entries.insert(i, entry);
    }
    let order: Vec<usize> = pool.iter().copied().filter(|i| entries.contains_key(i)).collect();
    let seq = Sequence { items: &items, entries, order, first: floor };
    let (state, used, _) = take_prefix(items.len(), seq, p.budget);

    let mut packed_idx: Vec<usize> = (0..items.len()).filter(|&i| state[i].is_some()).collect();
    packed_idx.sort_by(|a, b| items[*a].layer.cmp(&items[*b].layer).then_with(|| by_util(a, b)));
    let excluded: Vec<Item> = pool.iter().filter(|&&i| state[i].is_none()).map(|&i| items[i].clone()).collect();
    let mut state = state;
    let out: Vec<Packed> = packed_idx
        .iter()
        .filter_map(|&i| {
            let (content, compressed) = state[i].take()?;
            Some(Packed {
                item: items[i].clone(),
                content,
                compressed,
                folded_refs: folded.remove(&i).unwrap_or_default(),
                utility: util[i],
            })
        })
        .collect();
    let zero_weight = items.iter().filter(|it| prior(it.layer) == 0.0).cloned();
    let mut excluded = excluded;
    excluded.extend(zero_weight);
    Pack { items: out, budget: p.budget, used, excluded, deduped, intent: p.intent }
}
