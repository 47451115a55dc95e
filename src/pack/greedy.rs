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
    let sum: f64 = weights.iter().sum();
    // Each layer's queue of steps: every item's admission followed by its upgrades, in retrieval order.
    let mut queues: Vec<VecDeque<Step>> = vec![VecDeque::new(); 8];
    let mut floors: Vec<Step> = Vec::new();
    let mut room = p.floor_room();
    let mut consumed = [0usize; 8];
    for layer in [Layer::Constraints, Layer::Facts] {
        if weights[layer as usize] == 0.0 {
            continue;
        }
        if let Some(i) = items.iter().position(|it| it.layer == layer) {
            if let Some(f) = floor_plan(i, &items[i], &p, room, &[]) {
                room -= f.admit.cost;
                consumed[layer as usize] += f.admit.cost;
                floors.push(f.admit);
                queues[layer as usize].extend(f.upgrades);
            }
        }
    }
    // Items are planned when their layer's queue reaches them: what is never reached costs nothing.
    let mut waiting: Vec<VecDeque<usize>> = vec![VecDeque::new(); 8];
    for (i, it) in items.iter().enumerate() {
        let l = it.layer as usize;
        if weights[l] > 0.0 && !floors.iter().any(|f| f.item == i) {
            waiting[l].push_back(i);
        }
    }
    let seq = std::iter::from_fn(|| {
        for l in 0..8 {
            if queues[l].is_empty() {
                if let Some(i) = waiting[l].pop_front() {
                    let pl = plan(i, &items[i], &p, false, &[]);
                    queues[l].push_back(pl.admit);
                    queues[l].extend(pl.upgrades);
                }
            }
        }
        let mut best: Option<(f64, usize)> = None;
        for l in 0..8 {
            if let Some(s) = queues[l].front() {
                let v = (consumed[l] + s.cost) as f64 / weights[l];
                if best.is_none_or(|(bv, _)| v < bv) {
                    best = Some((v, l));
                }
            }
        }
        let (_, l) = best?;
        let s = queues[l].pop_front()?;
        consumed[l] += s.cost;
        Some(s)
    });
    let mut prefix = take_prefix(items, p.meter, floors.into_iter().chain(seq), p.room());
    prefix.fill_last(items, p.meter, p.room(), &[]);
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
    let packed: std::collections::HashSet<&str> = items_out.iter().map(|x| x.item.r#ref.as_str()).collect();
    let excluded = items.iter().filter(|it| !packed.contains(it.r#ref.as_str())).cloned().collect();
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

#[cfg(test)]
mod tests {
    use super::super::testing::{in_layer, item, params, refs, words, Words};
    use super::*;
    use crate::pack::MAX_STEP_TOKENS;
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
        assert_eq!(p.excluded.iter().map(|i| i.r#ref.as_str()).collect::<Vec<_>>(), vec!["f2"]);
    }

    #[test]
    fn a_long_memory_is_admitted_shortened_then_grows() {
        let long = words("w", 5 * MAX_STEP_TOKENS);
        let items = vec![item("short", "a short fact"), item("long", &long)];
        let admitted = (3 + Words::FRAMING) + (MAX_STEP_TOKENS + Words::FRAMING);
        let p = pack(&items, params(GENERIC, admitted));
        assert_eq!(refs(&p), vec!["short", "long"]);
        assert_eq!(p.items[1].compressed, Some("truncated"));
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
