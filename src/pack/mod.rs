//! Packing: which memories go into the pack, in what form, within the budget.
//!
//! Both packers build a budget-independent *sequence of steps* (admit an item at some rung of the
//! compression ladder, or upgrade an admitted item to its full text) and take the longest prefix
//! that fits the budget. Taking a prefix of a fixed sequence is what makes a larger budget pack a
//! superset of a smaller one's refs, with no exception, and `used <= tokens` by
//! construction. The knapsack orders steps by MMR-adjusted utility density; the generic packer
//! interleaves layers in proportion to their intent weights.

pub mod fold;
pub mod greedy;
pub mod intent;
pub mod knapsack;
pub mod ladder;

use crate::profile::Profile;
use intent::Intent;

/// The eight pack layers, in envelope order (the order of the intent weight tables).
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

    /// Pack layer of a memory kind (docs/protocol.md, "Items"); unknown kinds read as facts.
    pub fn of_kind(kind: &str) -> Layer {
        use crate::store::Kind;
        match Kind::parse(kind) {
            Some(Kind::Negative) => Layer::Constraints,
            Some(Kind::Decision) => Layer::Decisions,
            Some(Kind::Procedural) => Layer::Procedures,
            Some(Kind::Preference | Kind::Style) => Layer::Identity,
            Some(Kind::Episodic) => Layer::Recency,
            Some(Kind::Semantic) | None => Layer::Facts,
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
    pub compressed: Option<Compression>,
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
    /// Tokens accounted: the reserve plus every admitted step and shared unit (the rendered output
    /// is counted again, exactly, by the envelope).
    pub used: usize,
    /// The part of `used` the items take (their units and the shared units they opened): what
    /// `distinct_facts_per_1k_tokens` is measured against. It does not depend on the reserve, whose
    /// pack cursor carries a tag keyed per database.
    pub items_used: usize,
    /// Eligible candidates left out, most useful first (the pack cursor pages through these), as
    /// indexes into the candidates the pack was made from: a call that only counts them copies none.
    pub excluded: Vec<usize>,
    /// Near-duplicates folded into survivors.
    pub deduped: usize,
    /// The detected intent.
    pub intent: Intent,
}

/// What packing needs to know about the rendering: each item's real cost in the output, in the
/// reading model's tokens. Implemented by the envelope's layout; packing never renders.
pub trait Meter {
    /// Tokens the item adds to the output with this content: all its units, its list separator, and
    /// its entry in the session delta when there is one.
    fn cost(&self, item: &Item, content: &str, compressed: Option<Compression>, folded: &[String]) -> usize;
    /// Tokens of a text alone.
    fn content_tokens(&self, content: &str) -> usize;
    /// The longest prefix of `content` within `tokens`, ending in `…` when cut.
    fn cut(&self, content: &str, tokens: usize) -> String;
    /// Shared units the item needs in the output (a graph entry per entity, a layer header): (key,
    /// tokens). The first admitted item that needs a key pays for it.
    fn groups(&self, item: &Item) -> Vec<(String, usize)>;
}

/// The packing parameters.
#[derive(Clone, Copy)]
pub struct Params<'a> {
    /// Resolved profile.
    pub profile: Profile,
    /// Allotted tokens (already clamped): the whole output must fit.
    pub budget: usize,
    /// Tokens of the output that are not items (legend, framing, receipt, ...), at their largest.
    pub reserve: usize,
    /// Detected intent.
    pub intent: Intent,
    /// Item costs.
    pub meter: &'a dyn Meter,
}

impl Params<'_> {
    /// Tokens the items may take.
    pub fn room(&self) -> usize {
        self.budget.saturating_sub(self.reserve)
    }

    /// What the constraint floor is judged against: a fixed room, so its cost is the same at every
    /// budget and the superset property survives it.
    pub fn floor_room(&self) -> usize {
        FLOOR_ROOM
    }
}

/// Packs candidates (in retrieval order) with the profile's packer.
pub fn pack(items: &[Item], p: Params<'_>) -> Pack {
    if p.profile.knapsack {
        knapsack::pack(items, p)
    } else {
        greedy::pack(items, p)
    }
}

/// How an item's text was shortened to enter a pack (`why.compressed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Its stored summary (while it grows: the summary, then a prefix of the text).
    Summary,
    /// Its first sentence.
    Head,
    /// A prefix of its text, ending in `…`.
    Truncated,
}

impl Compression {
    /// The name output shows.
    pub fn name(self) -> &'static str {
        match self {
            Compression::Summary => "summary",
            Compression::Head => "head",
            Compression::Truncated => "truncated",
        }
    }
}

impl serde::Serialize for Compression {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
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
    pub compressed: Option<Compression>,
    /// Tokens this step adds (for an admission: its whole cost).
    pub cost: usize,
}

/// No step of a packing sequence but the constraint floor adds more than this many content tokens
/// (a departure from the reference protocol, docs/protocol.md): a longer memory is admitted at its stored summary, or truncated, and
/// grows by steps of this size, so one large memory never blocks the rest of the sequence and the
/// prefix rule wastes little budget.
pub const MAX_STEP_TOKENS: usize = 128;

/// An item's packing plan: how it enters the pack, then the steps that grow it to its full text.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// The admission step.
    pub admit: Step,
    /// Upgrade steps, in order; the last one restores the full text.
    pub upgrades: std::collections::VecDeque<Step>,
}

/// Tokens the top constraint may take when it is placed first (its whole item, framing included):
/// it enters at the first rung of the ladder that fits, else truncated to fit.
pub const FLOOR_ROOM: usize = 128;

/// Separates a stored summary from the text that follows it while an item grows.
const SUMMARY_SEPARATOR: &str = "\n\n";

/// Growth steps from an admitted step to the full text, each adding at most [`MAX_STEP_TOKENS`]
/// content tokens. When the item entered as its stored summary, the summary stays in front of the
/// text that follows it: a summary is never lost by growing.
/// `full` is the full text's cost when the caller already priced it.
fn upgrades(
    idx: usize,
    item: &Item,
    p: &Params<'_>,
    admit: &Step,
    folded: &[String],
    full: Option<usize>,
) -> std::collections::VecDeque<Step> {
    let m = p.meter;
    let text = item.content.as_str();
    let lead = match admit.compressed {
        Some(Compression::Summary) => format!("{}{SUMMARY_SEPARATOR}", admit.content),
        _ => String::new(),
    };
    // No step beyond the profile's largest budget can ever be taken: stop there, so a memory of
    // megabytes costs no more steps than one that fills the largest pack.
    let ceiling = p.profile.pack_token_budget as usize + MAX_STEP_TOKENS;
    // Each step with the cost of the item after it, in increasing cost.
    let mut grown: Vec<(String, Option<Compression>, usize)> = Vec::new();
    let mut cur = admit.cost;
    let mut shown = m.content_tokens(&admit.content);
    let text_tokens = m.content_tokens(text).min(ceiling + 1);
    let lead_tokens = if lead.is_empty() { 0 } else { m.content_tokens(&lead) };
    loop {
        let target = shown + MAX_STEP_TOKENS;
        let (content, tag) = if target >= lead_tokens + text_tokens {
            (text.to_string(), None)
        } else {
            let cut = m.cut(text, target.saturating_sub(lead_tokens).max(1));
            (format!("{lead}{cut}"), Some(Compression::Truncated))
        };
        let c = match (tag, full) {
            (None, Some(c)) => c,
            _ => m.cost(item, &content, tag, folded),
        };
        // The full text ends the growth even when it costs no more than the step before it (it
        // replaces summary + partial text).
        if c > cur || tag.is_none() {
            grown.push((content, tag, c));
            cur = cur.max(c);
        }
        if tag.is_none() || cur > ceiling {
            break;
        }
        shown = target;
    }
    // A partial step that costs as much as the full text is no step: the full text replaces it, so
    // an item is never charged more than its full text.
    if let Some(&(_, None, full)) = grown.last() {
        let keep = grown.iter().take_while(|g| g.2 < full).count();
        grown.drain(keep..grown.len() - 1);
    }
    let mut out = std::collections::VecDeque::new();
    let mut cur = admit.cost;
    for (content, compressed, c) in grown {
        out.push_back(Step { item: idx, content, compressed, cost: c.saturating_sub(cur) });
        cur = cur.max(c);
    }
    out
}

/// The admission rung: with `ladder` the shortest rung (summary, head sentence), else the full
/// text; a text longer than [`MAX_STEP_TOKENS`] enters as its stored summary when that is short
/// enough, else truncated.
fn admission(item: &Item, p: &Params<'_>, ladder: bool) -> (String, Option<Compression>) {
    let m = p.meter;
    let summary =
        item.summary.as_deref().map(str::trim).filter(|s| !s.is_empty() && m.content_tokens(s) <= MAX_STEP_TOKENS);
    // A long text with a short stored summary enters as that summary even when its head sentence is
    // shorter: growth keeps the rung it entered at in front, and the summary must not be lost.
    if let Some(s) = summary {
        if m.content_tokens(&item.content) > MAX_STEP_TOKENS {
            return (s.to_string(), Some(Compression::Summary));
        }
    }
    let (content, tag) = if ladder { ladder::shortest(item) } else { (item.content.clone(), None) };
    if m.content_tokens(&content) <= MAX_STEP_TOKENS {
        return (content, tag);
    }
    match summary {
        Some(s) => (s.to_string(), Some(Compression::Summary)),
        None => (m.cut(&item.content, MAX_STEP_TOKENS), Some(Compression::Truncated)),
    }
}

/// The plan of an item.
pub(crate) fn plan(idx: usize, item: &Item, p: &Params<'_>, ladder: bool, folded: &[String]) -> Plan {
    let (content, tag) = admission(item, p, ladder);
    let cost = p.meter.cost(item, &content, tag, folded);
    // A short text whose rung costs as much as the text itself (its `why.compressed` outweighs what
    // the rung saves) enters as the text.
    let mut full = None;
    if tag.is_some() && p.meter.content_tokens(&item.content) <= MAX_STEP_TOKENS {
        let c = p.meter.cost(item, &item.content, None, folded);
        if c <= cost {
            let admit = Step { item: idx, content: item.content.clone(), compressed: None, cost: c };
            return Plan { upgrades: std::collections::VecDeque::new(), admit };
        }
        full = Some(c);
    }
    let admit = Step { item: idx, content, compressed: tag, cost };
    if tag.is_none() {
        // Entered as its full text: its one growth step is that text again at no cost, which is
        // what [`upgrades`] computes, here without pricing the text a second time.
        let again = Step { item: idx, content: admit.content.clone(), compressed: None, cost: 0 };
        return Plan { upgrades: std::collections::VecDeque::from([again]), admit };
    }
    Plan { upgrades: upgrades(idx, item, p, &admit, folded, full), admit }
}

/// The floor for the top item of a layer that must be present (the top constraint): its first ladder
/// rung that fits `room`, else its text truncated to fit, then steps up to its full text. Judged
/// against [`Params::floor_room`], not the call's budget, so its cost is the same at every budget.
pub(crate) fn floor_plan(idx: usize, item: &Item, p: &Params<'_>, room: usize, folded: &[String]) -> Option<Plan> {
    let admit = fit_step(idx, item, p.meter, room, folded, &item.content, Cut::Any)?;
    Some(Plan { upgrades: upgrades(idx, item, p, &admit, folded, None), admit })
}

/// Which cuts of a text [`fit_step`] may admit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cut {
    /// Any cut that shows something: an item that must be present (the top constraint).
    Any,
    /// A cut that shows at least as many tokens as the ref that cites it, or half of the text it
    /// cuts: an item taken only to use the room left, where a cut of one or two tokens ("我…",
    /// "Caroline: I…") would be all framing and tell the reader nothing.
    WorthItsRef,
}

/// Item `idx` admitted within `room`: its first ladder rung that fits (never the head sentence of an
/// item with a stored summary), else `source` (its text, or its stored summary) truncated to fit, as
/// `allow` allows; None when no such cut fits.
pub(crate) fn fit_step(
    idx: usize,
    item: &Item,
    m: &dyn Meter,
    room: usize,
    folded: &[String],
    source: &str,
    allow: Cut,
) -> Option<Step> {
    let rungs = ladder::rungs(item);
    let summarised = rungs.iter().any(|r| r.1 == Some(Compression::Summary));
    for (content, tag) in rungs {
        // A stored summary is never lost to the head sentence, which only begins what it states:
        // when the summary does not fit, a cut of `source` (the summary, in the room left) does.
        if summarised && tag == Some(Compression::Head) {
            continue;
        }
        if m.content_tokens(&content) > room {
            continue;
        }
        let cost = m.cost(item, &content, tag, folded);
        if cost <= room {
            return Some(Step { item: idx, content, compressed: tag, cost });
        }
    }
    let framing = m.cost(item, "", Some(Compression::Truncated), folded);
    let least = match allow {
        Cut::Any => 1,
        Cut::WorthItsRef => m.content_tokens(&item.r#ref).min(m.content_tokens(source).div_ceil(2)).max(1),
    };
    let mut tokens = room.checked_sub(framing).filter(|t| *t >= least)?;
    // `source` cut to `tokens`, as a step, and how far it overshoots the room (0 when it fits).
    let cut = |tokens: usize| -> Option<(Step, usize)> {
        let content = m.cut(source, tokens);
        if content.is_empty() || m.content_tokens(&content) < least {
            return None;
        }
        let cost = m.cost(item, &content, Some(Compression::Truncated), folded);
        Some((Step { item: idx, content, compressed: Some(Compression::Truncated), cost }, cost.saturating_sub(room)))
    };
    // Shorter by the overshoot while that converges (the usual case: one or two cuts). What a cut
    // costs rendered (escaped quotes, control characters) can exceed its own token count, so the
    // overshoot can pass every cut that fits, down to a cut that keeps nothing: then bisect below
    // the shortest cut tried that overshoots.
    let mut over_at = tokens;
    while let Some((step, over)) = cut(tokens) {
        if over == 0 {
            return Some(step);
        }
        over_at = tokens;
        if over >= tokens {
            break;
        }
        tokens -= over;
    }
    // The longest cut below it that fits (a cut costs more as it grows), so a room that fits some
    // cut always admits the item, whatever the stepping passed over: a larger room admits it too.
    let (mut lo, mut hi, mut best) = (least, over_at.saturating_sub(1), None);
    while lo <= hi {
        let mid = lo + (hi - lo) / 2;
        match cut(mid) {
            Some((step, 0)) => {
                best = Some(step);
                lo = mid + 1;
            }
            _ => hi = mid - 1,
        }
    }
    best
}

/// Final content and compression tag of an admitted item.
pub(crate) type Placed = (String, Option<Compression>);

/// What the longest prefix of a sequence that fits holds.
pub(crate) struct Prefix {
    /// Per item: final content and tag, or None when not admitted.
    pub state: Vec<Option<Placed>>,
    /// Tokens used, shared units included.
    pub used: usize,
    /// Items in admission order.
    pub order: Vec<usize>,
    /// The first step that did not fit (None when every step did).
    pub stopped: Option<Step>,
    /// Shared units already paid for.
    opened: std::collections::HashSet<String>,
}

impl Prefix {
    /// The shared units item `i` would open, with their tokens.
    fn new_groups(&self, meter: &dyn Meter, item: &Item) -> Vec<(String, usize)> {
        meter.groups(item).into_iter().filter(|(k, _)| !self.opened.contains(k)).collect()
    }

    /// Applies `s` when it fits `room` with the shared units it opens; gives it back (nothing
    /// changed) when it does not.
    fn apply(&mut self, items: &[Item], meter: &dyn Meter, s: Step, room: usize) -> Result<(), Step> {
        let admitting = self.state[s.item].is_none();
        let groups = if admitting { self.new_groups(meter, &items[s.item]) } else { Vec::new() };
        let cost = s.cost + groups.iter().map(|g| g.1).sum::<usize>();
        if self.used + cost > room {
            return Err(s);
        }
        self.used += cost;
        self.opened.extend(groups.into_iter().map(|g| g.0));
        if admitting {
            self.order.push(s.item);
        }
        self.state[s.item] = Some((s.content, s.compressed));
        Ok(())
    }

    /// When the prefix stopped at an admission, admits that item in the room left, at the first
    /// ladder rung that fits or truncated ([`fit_step`]: a cut of its stored summary when it has
    /// one, which is never lost to a cut of the text, and that shows at least what its ref
    /// costs, [`Cut::WorthItsRef`]), priced with the refs folded into it
    /// (`folded`). Refs stay a superset as the budget grows: a larger room either fits the same
    /// step or passes it.
    pub(crate) fn fill_last(&mut self, items: &[Item], meter: &dyn Meter, room: usize, folded: &[String]) {
        let Some(s) = self.stopped.take() else { return };
        if self.state[s.item].is_some() {
            return;
        }
        let groups: usize = self.new_groups(meter, &items[s.item]).iter().map(|g| g.1).sum();
        let left = room.saturating_sub(self.used + groups);
        let item = &items[s.item];
        let summary = ladder::rungs(item).into_iter().find(|r| r.1 == Some(Compression::Summary)).map(|r| r.0);
        let source = summary.as_deref().unwrap_or(&item.content);
        if let Some(step) = fit_step(s.item, item, meter, left, folded, source, Cut::WorthItsRef) {
            let applied = self.apply(items, meter, step, room);
            debug_assert!(applied.is_ok(), "a step fitted to the room left fits it");
        }
    }
}

/// Applies the longest prefix of `steps` that fits `room`. An admission also pays for the shared
/// units (graph entries, layer headers) that no earlier admission opened.
pub(crate) fn take_prefix(
    items: &[Item],
    meter: &dyn Meter,
    steps: impl IntoIterator<Item = Step>,
    room: usize,
) -> Prefix {
    let mut prefix = Prefix {
        state: vec![None; items.len()],
        used: 0,
        order: Vec::new(),
        stopped: None,
        opened: Default::default(),
    };
    for s in steps {
        if let Err(s) = prefix.apply(items, meter, s, room) {
            prefix.stopped = Some(s);
            break;
        }
    }
    prefix
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

/// `utility = prior[layer] × relevance × (w_rel + w_rec·decay + w_auth·trust)`.
///
/// The reference protocol adds the three terms (w_rel·relevance + w_rec·decay + w_auth·trust), so a
/// fresh or trusted memory that does not match the task outranks an older one that does (with claude's
/// weights a barely matching memory from yesterday beats the best match from last month). Here
/// relevance scales recency and authority: among memories that match, newer and more trusted ones win;
/// a memory that does not match gets little, however new (docs/protocol.md, "Where cmp departs from
/// the reference protocol"). Items without a score count as [`UNSCORED_RELEVANCE`].
pub fn utility(item: &Item, prior: f64, profile: &Profile) -> f64 {
    let (wr, wc, wa) = profile.weights;
    let r = item.relevance.unwrap_or(UNSCORED_RELEVANCE);
    prior * r * (wr + wc * recency_decay(item.age_days) + wa * item.trust)
}

/// Helpers for the packers' unit tests: candidates with defaults, and a meter that counts words.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// A fact found by full text, relevance 0.5, trust 0.5, no summary.
    pub fn item(r: &str, content: &str) -> Item {
        Item {
            r#ref: r.into(),
            content: content.into(),
            summary: None,
            layer: Layer::Facts,
            kind: Some("semantic".into()),
            relevance: Some(0.5),
            basis: None,
            retrievers: vec!["fts"],
            matched_terms: Vec::new(),
            fused_rank: None,
            source_url: None,
            confidence: None,
            trust: 0.5,
            occurred_at: None,
            age_days: 0.0,
            entities: Vec::new(),
            conflict: false,
        }
    }

    /// `item` in `layer`.
    pub fn in_layer(r: &str, content: &str, layer: Layer) -> Item {
        Item { layer, ..item(r, content) }
    }

    /// `n` distinct words (`w0 w1 …`), prefixed so texts of different items differ.
    pub fn words(prefix: &str, n: usize) -> String {
        (0..n).map(|i| format!("{prefix}{i}")).collect::<Vec<_>>().join(" ")
    }

    /// A token is a whitespace-separated word; an item costs its words plus [`Words::FRAMING`] and
    /// one per folded ref; no shared units.
    pub struct Words;

    impl Words {
        /// Tokens of an item's framing.
        pub const FRAMING: usize = 3;
    }

    impl Meter for Words {
        fn cost(&self, _item: &Item, content: &str, _c: Option<Compression>, folded: &[String]) -> usize {
            self.content_tokens(content) + Self::FRAMING + folded.len()
        }
        fn content_tokens(&self, content: &str) -> usize {
            content.split_whitespace().count()
        }
        fn cut(&self, content: &str, tokens: usize) -> String {
            let w: Vec<&str> = content.split_whitespace().collect();
            if w.len() <= tokens {
                return content.to_string();
            }
            if tokens == 0 {
                return String::new();
            }
            format!("{}…", w[..tokens].join(" "))
        }
        fn groups(&self, _item: &Item) -> Vec<(String, usize)> {
            Vec::new()
        }
    }

    /// Parameters for `profile` at `budget`, no reserve, intent Answer.
    pub fn params(profile: Profile, budget: usize) -> Params<'static> {
        Params { profile, budget, reserve: 0, intent: Intent::Answer, meter: &Words }
    }

    /// The refs of a pack, in pack order.
    pub fn refs(p: &Pack) -> Vec<&str> {
        p.items.iter().map(|x| x.item.r#ref.as_str()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{item, params, words, Words};
    use super::*;
    use crate::profile::{self, GENERIC};
    use proptest::prelude::*;

    fn step(item: usize, cost: usize) -> Step {
        Step { item, content: format!("step {item}"), compressed: None, cost }
    }

    #[test]
    fn a_prefix_stops_at_the_first_step_that_does_not_fit() {
        let items: Vec<Item> = (0..3).map(|i| item(&format!("m{i}"), "x")).collect();
        let fits = take_prefix(&items, &Words, vec![step(0, 3), step(1, 5), step(2, 2)], 8);
        assert_eq!((fits.order.clone(), fits.used), (vec![0, 1], 8));
        // The third step would fit after the second is refused, but a prefix never skips.
        let short = take_prefix(&items, &Words, vec![step(0, 3), step(1, 5), step(2, 2)], 7);
        assert_eq!((short.order.clone(), short.used), (vec![0], 3));
        assert!(short.state[2].is_none());
    }

    #[test]
    fn an_upgrade_replaces_content_without_a_second_admission() {
        let items = vec![item("m0", "x")];
        let up = Step { item: 0, content: "full text".into(), compressed: None, cost: 2 };
        let head = Step { item: 0, content: "head".into(), compressed: Some(Compression::Head), cost: 4 };
        let p = take_prefix(&items, &Words, vec![head, up], 10);
        assert_eq!((p.order, p.used), (vec![0], 6));
        assert_eq!(p.state[0], Some(("full text".to_string(), None)));
    }

    #[test]
    fn a_long_text_enters_short_and_grows_to_its_full_text() {
        let long = item("m0", &words("w", 3 * MAX_STEP_TOKENS));
        let p = params(GENERIC, 6000);
        let pl = plan(0, &long, &p, false, &[]);
        assert_eq!(pl.admit.compressed, Some(Compression::Truncated));
        assert_eq!(Words.content_tokens(&pl.admit.content), MAX_STEP_TOKENS);
        let mut shown = MAX_STEP_TOKENS;
        for (n, s) in pl.upgrades.iter().enumerate() {
            let t = Words.content_tokens(&s.content);
            assert!(t > shown && t <= shown + MAX_STEP_TOKENS, "step {n} grows by at most one step");
            shown = t;
        }
        let last = pl.upgrades.back().expect("upgrades");
        assert_eq!((last.content.as_str(), last.compressed), (long.content.as_str(), None));
    }

    #[test]
    fn a_short_stored_summary_is_the_admission_of_a_long_text_and_stays_in_front() {
        let long = Item { summary: Some("the gist".into()), ..item("m0", &words("w", 2 * MAX_STEP_TOKENS)) };
        let pl = plan(0, &long, &params(GENERIC, 6000), false, &[]);
        assert_eq!((pl.admit.content.as_str(), pl.admit.compressed), ("the gist", Some(Compression::Summary)));
        let growing: Vec<&Step> = pl.upgrades.iter().filter(|s| s.compressed.is_some()).collect();
        assert!(!growing.is_empty() && growing.iter().all(|s| s.content.starts_with("the gist\n\n")));
    }

    #[test]
    fn the_floor_fits_its_room_or_is_refused() {
        let p = params(GENERIC, 6000);
        let rule = item("c0", &words("r", 500));
        let fl = floor_plan(0, &rule, &p, 40, &[]).expect("truncated to fit");
        assert!(fl.admit.cost <= 40 && fl.admit.compressed == Some(Compression::Truncated));
        assert!(floor_plan(0, &rule, &p, Words::FRAMING, &[]).is_none(), "no room beyond the framing");
    }

    #[test]
    fn the_room_left_takes_a_cut_only_when_it_shows_what_its_ref_costs_or_half_its_text() {
        // A ref of four words: a cut must show four words, or half of a short text.
        let (long, short) = (item("ref of four words", &words("w", 40)), item("ref of four words", "a b c d e"));
        let head = item("m0", "one two");
        let first = Step { item: 0, content: "one two".into(), compressed: None, cost: 2 + Words::FRAMING };
        let packed = |last: &Item, room: usize| {
            let items = vec![head.clone(), last.clone()];
            let n = Words.content_tokens(&last.content);
            let rest = Step { item: 1, content: last.content.clone(), compressed: None, cost: n + Words::FRAMING };
            let mut pre = take_prefix(&items, &Words, vec![first.clone(), rest], room);
            pre.fill_last(&items, &Words, room, &[]);
            pre.state[1].clone().map(|(c, _)| Words.content_tokens(&c))
        };
        let left = |words: usize| 2 + Words::FRAMING + Words::FRAMING + words;
        assert_eq!(packed(&long, left(3)), None, "three words of forty: less than the ref");
        assert_eq!(packed(&long, left(4)), Some(4));
        assert_eq!(packed(&short, left(2)), None, "two words of five: less than half");
        assert_eq!(packed(&short, left(3)), Some(3));
        // The top constraint's floor still takes any cut.
        let fl = floor_plan(1, &long, &params(GENERIC, 6000), Words::FRAMING + 1, &[]).expect("a cut");
        assert_eq!(Words.content_tokens(&fl.admit.content), 1);
    }

    #[test]
    fn a_room_that_fits_the_head_sentence_but_not_the_summary_takes_a_cut_of_the_summary() {
        let text = format!("Short head here. {}", words("t", 60));
        let noted = Item { summary: Some(words("s", 12)), ..item("m", &text) };
        let m = &Words;
        // Six words of room: the head sentence (3 words) fits, the summary (12) does not.
        let room = 6 + Words::FRAMING;
        let summary = noted.summary.as_deref().unwrap_or_default();
        let step = fit_step(0, &noted, m, room, &[], summary, Cut::WorthItsRef).expect("a cut of the summary");
        assert_eq!(step.compressed, Some(Compression::Truncated));
        assert!(step.content.starts_with("s0 s1"), "{}", step.content);
        // Without a summary the head sentence is the rung that fits.
        let plain = item("m", &text);
        let step = fit_step(0, &plain, m, room, &[], &plain.content, Cut::WorthItsRef).expect("the head");
        assert_eq!((step.content.as_str(), step.compressed), ("Short head here.", Some(Compression::Head)));
    }

    #[test]
    fn utility_scales_recency_and_authority_by_relevance() {
        assert_eq!(recency_decay(0.0), 1.0);
        assert_eq!(recency_decay(30.0), 0.5);
        assert_eq!(recency_decay(-5.0), 1.0);
        let strong = Item { relevance: Some(0.9), age_days: 60.0, ..item("a", "x") };
        let weak_fresh = Item { relevance: Some(0.1), age_days: 0.0, trust: 1.0, ..item("b", "x") };
        assert!(utility(&strong, 0.4, &GENERIC) > utility(&weak_fresh, 0.4, &GENERIC));
        let unscored = Item { relevance: None, ..item("c", "x") };
        let half = Item { relevance: Some(UNSCORED_RELEVANCE), ..item("c", "x") };
        assert_eq!(utility(&unscored, 0.4, &GENERIC), utility(&half, 0.4, &GENERIC));
    }

    #[test]
    fn every_kind_has_a_layer() {
        assert_eq!(Layer::of_kind("negative"), Layer::Constraints);
        assert_eq!(Layer::of_kind("style"), Layer::Identity);
        assert_eq!(Layer::of_kind("no such kind"), Layer::Facts);
        let names: Vec<&str> = Layer::ALL.iter().map(|l| l.name()).collect();
        assert_eq!(names.len(), 8);
        assert!(Layer::ALL.windows(2).all(|w| w[0] < w[1]), "ALL is in envelope order");
    }

    fn corpus() -> impl Strategy<Value = Vec<Item>> {
        let layers = prop::sample::select(Layer::ALL.to_vec());
        prop::collection::vec((1usize..200, 0.0f64..1.0, layers), 1..20).prop_map(|v| {
            v.into_iter()
                .enumerate()
                .map(|(i, (n, rel, layer))| Item {
                    relevance: Some(rel),
                    layer,
                    ..item(&format!("m{i:02}"), &words(&format!("t{i}x"), n))
                })
                .collect()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Both packers: the pack fits its room, and a larger budget packs a superset of the refs.
        #[test]
        fn packs_fit_and_grow_with_the_budget(items in corpus(), b in 10usize..600, extra in 1usize..400, knapsack in any::<bool>()) {
            let profile = if knapsack { profile::resolve(Some("claude")) } else { GENERIC };
            let small = pack(&items, params(profile, b));
            let large = pack(&items, params(profile, b + extra));
            prop_assert!(small.used <= b && small.items_used <= b);
            let big: std::collections::HashSet<&str> = large.items.iter().map(|p| p.item.r#ref.as_str()).collect();
            for r in small.items.iter().map(|p| p.item.r#ref.as_str()) {
                prop_assert!(big.contains(r), "{} packed at {} but not at {}", r, b, b + extra);
            }
        }
    }
}
