//! The generic packer (model NULL or unknown): per-layer shares of the budget in proportion to the
//! intent's weights, each layer filled in retrieval order, the top constraint always placed, and the
//! facts layer never left empty when it has candidates (its top item is shortened to fit).
//!
//! **ours**: the shares are realised as a weighted interleaving of the layers (the layer whose
//! consumption per unit of weight is lowest goes next), so what a layer cannot use flows to the
//! others and a larger budget always packs a superset of a smaller one's refs.

use super::{floor_step, take_prefix, utility, Item, Layer, Pack, Packed, Params, Step, FLOOR_ROOM};
use std::collections::VecDeque;

/// Packs with the per-layer greedy.
pub fn pack(items: Vec<Item>, p: Params) -> Pack {
    let weights = p.intent.weights();
    let sum: f64 = weights.iter().sum();
    let max_cost = p.profile.pack_token_budget as usize;
    let mut queues: Vec<VecDeque<usize>> = vec![VecDeque::new(); 8];
    for (i, it) in items.iter().enumerate() {
        if weights[it.layer as usize] > 0.0 {
            queues[it.layer as usize].push_back(i);
        }
    }
    let mut steps: Vec<Step> = Vec::new();
    let mut consumed = [0usize; 8];
    let mut room = FLOOR_ROOM;
    for layer in [Layer::Constraints, Layer::Facts] {
        if let Some(&i) = queues[layer as usize].front() {
            if let Some(s) = floor_step(i, &items[i], &p.profile, room) {
                queues[layer as usize].pop_front();
                room -= s.cost;
                consumed[layer as usize] += s.cost;
                steps.push(s);
            }
        }
    }
    let seq = std::iter::from_fn(|| loop {
        let mut best: Option<(f64, usize)> = None;
        for l in 0..8 {
            if let Some(&i) = queues[l].front() {
                let v = (consumed[l] + p.profile.item_cost(&items[i].content)) as f64 / weights[l];
                if best.is_none_or(|(bv, _)| v < bv) {
                    best = Some((v, l));
                }
            }
        }
        let (_, l) = best?;
        let i = queues[l].pop_front()?;
        let cost = p.profile.item_cost(&items[i].content);
        if cost > max_cost {
            continue; // can never fit any budget of this profile
        }
        consumed[l] += cost;
        return Some(Step { item: i, content: items[i].content.clone(), compressed: None, cost });
    });
    let (mut state, used, order) = take_prefix(items.len(), steps.into_iter().chain(seq), p.budget);
    let prior = |l: Layer| weights[l as usize] / sum;
    let mut packed_idx = order;
    packed_idx.sort_by_key(|&i| items[i].layer);
    let items_out: Vec<Packed> = packed_idx
        .iter()
        .filter_map(|&i| {
            let (content, compressed) = state[i].take()?;
            Some(Packed {
                item: items[i].clone(),
                content,
                compressed,
                folded_refs: Vec::new(),
                utility: utility(&items[i], prior(items[i].layer), &p.profile),
            })
        })
        .collect();
    let packed: std::collections::HashSet<&str> = items_out.iter().map(|x| x.item.r#ref.as_str()).collect();
    let excluded = items.iter().filter(|it| !packed.contains(it.r#ref.as_str())).cloned().collect();
    Pack { items: items_out, budget: p.budget, used, excluded, deduped: 0, intent: p.intent }
}
