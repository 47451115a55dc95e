//! The generic packer (model NULL or unknown): per-layer shares of the budget in proportion to the
//! intent's weights, each layer filled in retrieval order, the top constraint always placed, and the
//! facts layer never left empty when it has candidates (its top item is shortened to fit).
//!
//! The shares are realised as a weighted interleaving of the layers (the layer whose consumption per
//! unit of weight is lowest goes next), so what a layer cannot use flows to the others and a larger
//! budget always packs a superset of a smaller one's refs. The item the fill stopped at enters the
//! room left at its first ladder rung that fits, or truncated. A memory longer than
//! [`super::MAX_STEP_TOKENS`] enters as its stored summary or truncated, and grows step by step, so
//! it cannot block the rest.

use super::{collect, floor_plan, plan, take_prefix, utility, Item, Layer, Pack, Params, Step};
use std::collections::VecDeque;

/// Packs with the per-layer greedy.
pub fn pack(items: &[Item], p: Params<'_>) -> Pack {
    let weights = p.intent.weights();
    let mut fill = Interleave::new(items, p, weights);
    let floors = fill.place_floors();
    let mut prefix = take_prefix(items, p.meter, floors.into_iter().chain(fill), p.room());
    prefix.fill_last(items, p.meter, p.room(), &[]);
    let sum: f64 = weights.iter().sum();
    let prior = |l: Layer| weights[l as usize] / sum;
    let mut packed_idx = prefix.order.clone();
    packed_idx.sort_by_key(|&i| items[i].layer);
    let items_out = collect(
        items,
        &mut prefix.state,
        &packed_idx,
        |_| Vec::new(),
        |i| utility(&items[i], prior(items[i].layer), &p.profile),
    );
    let mut packed = vec![false; items.len()];
    packed_idx.iter().for_each(|&i| packed[i] = true);
    let excluded = (0..items.len()).filter(|&i| !packed[i]).collect();
    Pack {
        items: items_out,
        budget: p.budget,
        used: p.reserve + prefix.used,
        items_used: prefix.used,
        excluded,
        deduped: 0,
        intent: p.intent,
    }
}

/// The fill's sequence of steps. Each layer has a queue of steps (an item's admission, then its
/// upgrades); an item is planned when its layer's queue reaches it, so what is never reached costs
/// nothing. The next step comes from the layer whose consumption per unit of weight is lowest.
struct Interleave<'a> {
    items: &'a [Item],
    p: Params<'a>,
    weights: [f64; 8],
    /// Per layer, planned steps not yet taken.
    queues: Vec<VecDeque<Step>>,
    /// Per layer, items not yet planned, in retrieval order.
    waiting: Vec<VecDeque<usize>>,
    /// Per layer, tokens its steps have taken.
    consumed: [usize; 8],
}

impl<'a> Interleave<'a> {
    /// Every item of a layer the intent gives weight waits, in retrieval order.
    fn new(items: &'a [Item], p: Params<'a>, weights: [f64; 8]) -> Self {
        let mut waiting: Vec<VecDeque<usize>> = vec![VecDeque::new(); 8];
        for (i, it) in items.iter().enumerate() {
            if weights[it.layer as usize] > 0.0 {
                waiting[it.layer as usize].push_back(i);
            }
        }
        Interleave { items, p, weights, queues: vec![VecDeque::new(); 8], waiting, consumed: [0; 8] }
    }

    /// The floors: the top constraint and the top fact, each at its first rung that fits what is
    /// left of [`Params::floor_room`]; their upgrades wait at the head of their layer's queue.
    fn place_floors(&mut self) -> Vec<Step> {
        let mut floors = Vec::new();
        let mut room = self.p.floor_room();
        for layer in [Layer::Constraints, Layer::Facts] {
            let l = layer as usize;
            if self.weights[l] == 0.0 {
                continue;
            }
            let Some(i) = self.items.iter().position(|it| it.layer == layer) else { continue };
            if let Some(f) = floor_plan(i, &self.items[i], &self.p, room, &[]) {
                room -= f.admit.cost;
                self.consumed[l] += f.admit.cost;
                self.waiting[l].retain(|&j| j != i);
                self.queues[l].extend(f.upgrades);
                floors.push(f.admit);
            }
        }
        floors
    }
}

impl Iterator for Interleave<'_> {
    type Item = Step;

    fn next(&mut self) -> Option<Step> {
        for l in 0..8 {
            if self.queues[l].is_empty() {
                if let Some(i) = self.waiting[l].pop_front() {
                    let pl = plan(i, &self.items[i], &self.p, false, &[]);
                    self.queues[l].push_back(pl.admit);
                    self.queues[l].extend(pl.upgrades);
                }
            }
        }
        let mut best: Option<(f64, usize)> = None;
        for l in 0..8 {
            if let Some(s) = self.queues[l].front() {
                let v = (self.consumed[l] + s.cost) as f64 / self.weights[l];
                if best.is_none_or(|(bv, _)| v < bv) {
                    best = Some((v, l));
                }
            }
        }
        let (_, l) = best?;
        let s = self.queues[l].pop_front()?;
        self.consumed[l] += s.cost;
        Some(s)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{in_layer, item, params, refs, words, Words};
    use super::*;
    use crate::pack::{Compression, MAX_STEP_TOKENS};
    use crate::profile::GENERIC;

    #[test]
    fn each_layer_fills_in_retrieval_order() {
        // Less relevant first in retrieval order: the greedy keeps that order, it does not re-rank.
        let items = vec![
            Item { relevance: Some(0.1), ..item("f0", "first found fact") },
            Item { relevance: Some(0.9), ..item("f1", "second found fact") },
            Item { relevance: Some(0.5), ..item("f2", "third found fact") },
        ];
        let p = pack(&items, params(GENERIC, 2 * (3 + Words::FRAMING)));
        assert_eq!(refs(&p), vec!["f0", "f1"]);
        assert_eq!(p.excluded.iter().map(|&i| items[i].r#ref.as_str()).collect::<Vec<_>>(), vec!["f2"]);
    }

    #[test]
    fn a_long_memory_is_admitted_shortened_then_grows() {
        let long = words("w", 5 * MAX_STEP_TOKENS);
        let items = vec![item("short", "a short fact"), item("long", &long)];
        let admitted = (3 + Words::FRAMING) + (MAX_STEP_TOKENS + Words::FRAMING);
        let p = pack(&items, params(GENERIC, admitted));
        assert_eq!(refs(&p), vec!["short", "long"]);
        assert_eq!(p.items[1].compressed, Some(Compression::Truncated));
        assert_eq!(p.used, admitted);
        let p = pack(&items, params(GENERIC, 6000));
        assert_eq!((p.items[1].content.as_str(), p.items[1].compressed), (long.as_str(), None));
    }

    #[test]
    fn a_growing_memory_does_not_hold_back_other_layers() {
        let items = vec![item("long", &words("w", 5 * MAX_STEP_TOKENS)), in_layer("d", "a decision", Layer::Decisions)];
        let p = pack(&items, params(GENERIC, (MAX_STEP_TOKENS + Words::FRAMING) + (2 + Words::FRAMING)));
        assert_eq!(refs(&p), vec!["d", "long"]);
    }

    #[test]
    fn layers_share_the_budget_by_intent_weight() {
        // Answer: facts weigh 40, decisions 15. With ten of each, facts get more of a tight budget.
        let mut items = Vec::new();
        for i in 0..10 {
            items.push(in_layer(&format!("d{i}"), &words(&format!("d{i}x"), 5), Layer::Decisions));
            items.push(in_layer(&format!("f{i}"), &words(&format!("f{i}x"), 5), Layer::Facts));
        }
        let p = pack(&items, params(GENERIC, 11 * (5 + Words::FRAMING)));
        let facts = p.items.iter().filter(|x| x.item.layer == Layer::Facts).count();
        let decisions = p.items.iter().filter(|x| x.item.layer == Layer::Decisions).count();
        assert_eq!(facts + decisions, 11);
        assert!(facts > 2 * decisions, "{facts} facts, {decisions} decisions");
        // Envelope order: layers in order, decisions before facts.
        assert_eq!(p.items[0].item.layer, Layer::Decisions);
    }

    #[test]
    fn the_top_constraint_is_always_placed_first() {
        let mut items: Vec<Item> = (0..20).map(|i| item(&format!("f{i}"), &words(&format!("f{i}x"), 8))).collect();
        items.push(in_layer("rule", &words("r", 300), Layer::Constraints));
        let p = pack(&items, params(GENERIC, 200));
        assert!(refs(&p).contains(&"rule"), "{:?}", refs(&p));
        assert_eq!(p.items[0].item.r#ref, "rule");
    }

    #[test]
    fn a_layer_without_weight_gets_nothing() {
        // Answer gives procedures no weight.
        let items = vec![in_layer("proc", "how to deploy", Layer::Procedures), item("fact", "a fact")];
        let p = pack(&items, params(GENERIC, 1000));
        assert_eq!(refs(&p), vec!["fact"]);
        assert_eq!(p.excluded.len(), 1);
    }
}
