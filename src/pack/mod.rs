//! Packing: which memories go into the pack, in what form, within the budget.
//!
//! Both packers build a budget-independent *sequence of steps* (admit an item at some rung of the
//! compression ladder, or upgrade an admitted item to its full text) and take the longest prefix
//! that fits the budget. Taking a prefix of a fixed sequence is what makes a larger budget pack a
//! superset of a smaller one's refs (reference §4), with no exception, and `used <= tokens` by
//! construction. The knapsack orders steps by MMR-adjusted utility density; the generic packer
//! interleaves layers in proportion to their intent weights.

pub mod fold;
pub mod greedy;
pub mod intent;
pub mod knapsack;
pub mod ladder;

use crate::profile::{Profile, ITEM_OVERHEAD, MIN_BUDGET};
use intent::Intent;

/// The eight pack layers, in envelope order (FACTS.md weight order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Layer {
    /// negative: hard rules.
    Constraints = 0,
    /// decision.
    Decisions = 1,
    /// semantic.
    Facts = 2,
    /// admitted only through an entity named in the task.
    Entity = 3,
    /// procedural.
    Procedures = 4,
    /// preference, style.
    Identity = 5,
    /// open tasks.
    OpenLoops = 6,
    /// episodic.
    Recency = 7,
}

impl Layer {
    /// All layers in order.
    pub const ALL: [Layer; 8] = [
        Layer::Constraints,
        Layer::Decisions,
        Layer::Facts,
        Layer::Entity,
        Layer::Procedures,
        Layer::Identity,
        Layer::OpenLoops,
        Layer::Recency,
    ];

    /// The layer's name in the envelope.
    pub fn name(self) -> &'static str {
        match self {
            Layer::Constraints => "constraints",
            Layer::Decisions => "decisions",
            Layer::Facts => "facts",
            Layer::Entity => "entity",
            Layer::Procedures => "procedures",
            Layer::Identity => "identity",
            Layer::OpenLoops => "open_loops",
            Layer::Recency => "recency",
        }
    }

    /// Pack layer of a memory kind (SPEC.md "Pack layer of an item"); unknown kinds read as facts.
    pub fn of_kind(kind: &str) -> Layer {
        match kind {
            "negative" => Layer::Constraints,
            "decision" => Layer::Decisions,
            "procedural" => Layer::Procedures,
            "preference" | "style" => Layer::Identity,
            "episodic" => Layer::Recency,
            _ => Layer::Facts,
        }
    }
}

/// A packable candidate (a memory or an open task).
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// Citation ref.
    pub r#ref: String,
    /// Full text.
    pub content: String,
    /// Stored summary.
    pub summary: Option<String>,
    /// Pack layer.
    pub layer: Layer,
    /// Memory kind (None for an open task).
    pub kind: Option<String>,
    /// Relevance in [0, 1] or None.
    pub relevance: Option<f64>,
    /// How relevance was scored.
    pub basis: Option<&'static str>,
    /// Retrievers that found it.
    pub retrievers: Vec<&'static str>,
    /// Stemmed task terms found in it.
    pub matched_terms: Vec<String>,
    /// Fused rank.
    pub fused_rank: Option<usize>,
    /// Source locator.
    pub source_url: Option<String>,
    /// Explicit confidence, else trust (as the envelope shows it).
    pub confidence: Option<f64>,
    /// Author trust used by the utility (default 0.5).
    pub trust: f64,
    /// occurred_at, else captured_at.
    pub occurred_at: Option<String>,
    /// Age in days at `now` (0 when unknown or in the future).
    pub age_days: f64,
    /// Entity names.
    pub entities: Vec<String>,
    /// Flagged as contradicting another memory.
    pub conflict: bool,
}

/// A packed item: the candidate plus what packing did to it.
#[derive(Debug, Clone, PartialEq)]
pub struct Packed {
    /// The candidate.
    pub item: Item,
    /// The text in the pack (full, or a ladder rung).
    pub content: String,
    /// `summary`, `head` or `truncated` when shortened.
    pub compressed: Option<&'static str>,
    /// Near-duplicates folded into this item.
    pub folded_refs: Vec<String>,
    /// Utility (knapsack) used for ordering.
    pub utility: f64,
}

/// The result of packing.
#[derive(Debug, Clone, PartialEq)]
pub struct Pack {
    /// Packed items in envelope order.
    pub items: Vec<Packed>,
    /// Allotted tokens.
    pub budget: usize,
    /// Σ (tokens(content) + 12).
    pub used: usize,
    /// Eligible candidates left out, most useful first (the pack cursor pages through these).
    pub excluded: Vec<Item>,
    /// Near-duplicates folded into survivors.
    pub deduped: usize,
    /// The detected intent.
    pub intent: Intent,
}

/// The packing parameters.
#[derive(Debug, Clone, Copy)]
pub struct Params {
    /// Resolved profile.
    pub profile: Profile,
    /// Allotted tokens (already clamped).
    pub budget: usize,
    /// Detected intent.
    pub intent: Intent,
}

/// Packs candidates (in retrieval order) with the profile's packer.
pub fn pack(items: Vec<Item>, p: Params) -> Pack {
    if p.profile.knapsack {
        knapsack::pack(items, p)
    } else {
        greedy::pack(items, p)
    }
}

/// One step of a packing sequence.
#[derive(Debug, Clone)]
pub(crate) struct Step {
    /// Index of the item in the packer's item vector.
    pub item: usize,
    /// Content after this step.
    pub content: String,
    /// Compression tag after this step.
    pub compressed: Option<&'static str>,
    /// Tokens this step adds (for an admission: its whole cost, overhead included).
    pub cost: usize,
}

/// No step of a packing sequence but the constraint floor adds more than this many content tokens
/// (**ours**): a longer memory is admitted truncated and grows by steps of this size, so one large
/// memory never blocks the rest of the sequence and the prefix rule wastes little budget.
pub const MAX_STEP_TOKENS: usize = 128;

/// An item's packing plan: how it enters the pack, then the steps that grow it to its full text.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// The admission step.
    pub admit: Step,
    /// Upgrade steps, in order; the last one restores the full text.
    pub upgrades: std::collections::VecDeque<Step>,
}

/// `content` cut to fit `tokens` content tokens.
fn cut(content: &str, profile: &Profile, tokens: usize) -> String {
    crate::text::truncate_chars(content, profile.chars_for(tokens.max(1)))
}

/// Steps from a pack cost of `from` (an admitted rung) to the full text, each adding at most
/// [`MAX_STEP_TOKENS`] tokens.
fn upgrades(idx: usize, item: &Item, profile: &Profile, from: usize) -> std::collections::VecDeque<Step> {
    let full = profile.item_cost(&item.content);
    // No step beyond the profile's largest budget can ever be taken: stop there, so a memory of
    // megabytes costs no more steps (and no more copies) than one that fills the largest pack.
    let ceiling = full.min(profile.pack_token_budget as usize + MAX_STEP_TOKENS);
    let mut out = std::collections::VecDeque::new();
    let mut cur = from;
    while cur < ceiling {
        if full - cur <= MAX_STEP_TOKENS {
            out.push_back(Step { item: idx, content: item.content.clone(), compressed: None, cost: full - cur });
            break;
        }
        let content = cut(&item.content, profile, cur + MAX_STEP_TOKENS - ITEM_OVERHEAD);
        let c = profile.item_cost(&content);
        if c <= cur {
            // Cannot grow by cutting (only on absurd profiles): go straight to the full text.
            out.push_back(Step { item: idx, content: item.content.clone(), compressed: None, cost: full - cur });
            break;
        }
        out.push_back(Step { item: idx, content, compressed: Some("truncated"), cost: c - cur });
        cur = c;
    }
    out
}

/// The plan of an item. With `ladder`, admission takes the shortest rung (summary, head sentence);
/// without, the full text. Either way an admission longer than [`MAX_STEP_TOKENS`] is truncated.
pub(crate) fn plan(idx: usize, item: &Item, profile: &Profile, ladder: bool) -> Plan {
    let (content, tag) = if ladder { ladder::shortest(item) } else { (item.content.clone(), None) };
    let (content, tag) = if profile.tokens(&content) > MAX_STEP_TOKENS {
        (cut(&item.content, profile, MAX_STEP_TOKENS), Some("truncated"))
    } else {
        (content, tag)
    };
    let cost = profile.item_cost(&content);
    let admit = Step { item: idx, content, compressed: tag, cost };
    Plan { upgrades: upgrades(idx, item, profile, cost), admit }
}

/// The floor for the top item of a layer that must be present (the top constraint): its first ladder
/// rung that fits the smallest budget any call can have, else its text truncated to that, then steps
/// up to its full text. Judged against MIN_BUDGET, not the call's budget, so its cost is the same at
/// every budget and the superset property survives the floor.
pub(crate) fn floor_plan(idx: usize, item: &Item, profile: &Profile, room: usize) -> Option<Plan> {
    let mut admit = None;
    for (content, tag) in ladder::rungs(item) {
        let cost = profile.item_cost(&content);
        if cost <= room {
            admit = Some(Step { item: idx, content, compressed: tag, cost });
            break;
        }
    }
    let admit = match admit {
        Some(a) => a,
        None => {
            let content_tokens = room.checked_sub(ITEM_OVERHEAD).filter(|t| *t > 0)?;
            let content = cut(&item.content, profile, content_tokens);
            if content.is_empty() {
                return None;
            }
            let cost = profile.item_cost(&content);
            Step { item: idx, content, compressed: Some("truncated"), cost }
        }
    };
    Some(Plan { upgrades: upgrades(idx, item, profile, admit.cost), admit })
}

/// The room the floor is judged against.
pub(crate) const FLOOR_ROOM: usize = MIN_BUDGET as usize;

/// Final content and compression tag of an admitted item.
pub(crate) type Placed = (String, Option<&'static str>);

/// Applies the longest prefix of `steps` that fits `budget`. Returns (per item: final content and
/// tag, or None when not admitted; used tokens).
pub(crate) fn take_prefix(
    n_items: usize,
    steps: impl IntoIterator<Item = Step>,
    budget: usize,
) -> (Vec<Option<Placed>>, usize, Vec<usize>) {
    let mut state: Vec<Option<Placed>> = vec![None; n_items];
    let mut order = Vec::new();
    let mut used = 0usize;
    for s in steps {
        if used + s.cost > budget {
            break;
        }
        used += s.cost;
        if state[s.item].is_none() {
            order.push(s.item);
        }
        state[s.item] = Some((s.content, s.compressed));
    }
    (state, used, order)
}

/// The packed items, in `order`, from the prefix's final state (content and tag per item).
pub(crate) fn collect(
    items: &[Item],
    state: &mut [Option<Placed>],
    order: &[usize],
    mut folded: impl FnMut(usize) -> Vec<String>,
    utility: impl Fn(usize) -> f64,
) -> Vec<Packed> {
    order
        .iter()
        .filter_map(|&i| {
            let (content, compressed) = state[i].take()?;
            Some(Packed { item: items[i].clone(), content, compressed, folded_refs: folded(i), utility: utility(i) })
        })
        .collect()
}

/// 2^(−age_days/30): the recency decay (30-day half-life).
pub fn recency_decay(age_days: f64) -> f64 {
    (-age_days.max(0.0) / 30.0).exp2()
}

/// Relevance assumed for an item offered without a match score (a hard rule, an open task, the newest
/// memories for a task about what is recent): each was offered for a reason, none by a match.
pub const UNSCORED_RELEVANCE: f64 = 0.5;

/// utility = prior[layer] × relevance × (w_rel + w_rec·decay + w_auth·trust).
///
/// **ours**: the reference adds the three terms (w_rel·relevance + w_rec·decay + w_auth·trust), so a
/// fresh or trusted memory that does not match the task outranks an older one that does (with claude's
/// weights a barely matching memory from yesterday beats the best match from last month). Here
/// relevance scales recency and authority: among memories that match, newer and more trusted ones win;
/// a memory that does not match gets little, however new. Items without a score count as
/// [`UNSCORED_RELEVANCE`].
pub fn utility(item: &Item, prior: f64, profile: &Profile) -> f64 {
    let (wr, wc, wa) = profile.weights;
    let r = item.relevance.unwrap_or(UNSCORED_RELEVANCE);
    prior * r * (wr + wc * recency_decay(item.age_days) + wa * item.trust)
}
