//! Assembling a pack: retrieval → candidates (memories and open tasks) → intent → packer. Shared by
//! cmp_context, cmp_items, cmp_query (ask) and the pack cursor.

use crate::cursor;
use crate::envelope::{Layout, Legend, Parts};
use crate::error::Result;
use crate::options::Options;
use crate::pack::{self, intent, Item, Layer, Pack};
use crate::profile::{self, Profile};
use crate::retrieve::{self, Basis, Candidate, Query};
use crate::tokens::Counter;
use crate::{text, time};
use rusqlite::Connection;
use serde_json::{json, Value};

/// Newest memories offered for a recall (empty) task, and for any other task.
pub const RECALL_RECENCY: usize = 30;
/// Most open tasks considered for the open_loops layer.
pub const MAX_OPEN_TASKS: usize = 50;

/// One pack request.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// Task text.
    pub task: &'a str,
    /// Model string.
    pub model: Option<&'a str>,
    /// Requested budget.
    pub budget: Option<i64>,
    /// Options.
    pub options: &'a Options,
}

/// What retrieval found for a request, ready to pack at any budget.
#[derive(Debug, Clone)]
pub struct Gathered {
    /// Resolved profile.
    pub profile: Profile,
    /// The reading model's token counter.
    pub counter: Counter,
    /// The allotted budget.
    pub budget: usize,
    /// Detected intent.
    pub intent: intent::Intent,
    /// Candidates in retrieval order (memories, then open tasks).
    pub items: Vec<Item>,
    /// Lexical matches not yet visible.
    pub pending: usize,
    /// Memories skipped for an embedding of another dimension.
    pub skipped_embeddings: usize,
    /// Stemmed task terms.
    pub terms: Vec<String>,
}

/// A built pack and what retrieval reported alongside.
#[derive(Debug, Clone)]
pub struct Built {
    /// What the pack was built from.
    pub gathered: Gathered,
    /// The pack.
    pub pack: Pack,
}

fn age_days(when: Option<&str>, now: f64) -> f64 {
    when.and_then(time::parse).map_or(0.0, |t| ((now - t) / 86_400.0).max(0.0))
}

/// Open tasks of the scope as open_loops candidates: tasks sharing words with the task first.
fn open_loops(conn: &Connection, scope: &str, terms: &[String], now: f64) -> Result<Vec<Item>> {
    let tasks = crate::store::tasks::open(conn, scope, MAX_OPEN_TASKS)?;
    let mut items = Vec::new();
    for t in tasks {
        let (id, title, due, ents) = (t.id, t.title, t.due_at, t.entities);
        let title = title.unwrap_or_default();
        let mut matched: Vec<String> = Vec::new();
        for w in text::words(&title) {
            let s = text::stem(&w);
            if terms.contains(&s) && !matched.contains(&s) {
                matched.push(s);
            }
        }
        matched.sort();
        items.push(Item {
            r#ref: id,
            content: title,
            summary: None,
            layer: Layer::OpenLoops,
            kind: None,
            relevance: None,
            basis: None,
            retrievers: vec!["tasks"],
            matched_terms: matched,
            fused_rank: None,
            source_url: None,
            confidence: None,
            trust: 0.5,
            age_days: age_days(due.as_deref(), now),
            occurred_at: due,
            entities: ents.as_deref().map(crate::store::parse_entities).unwrap_or_default(),
            conflict: false,
        });
    }
    // Stable: tasks that share words with the request first, then by due date.
    items.sort_by_key(|it| std::cmp::Reverse(it.matched_terms.len()));
    Ok(items)
}

/// A retrieval candidate as a packable item.
pub fn item_from_candidate(c: Candidate, now: f64) -> Item {
    let m = c.mem;
    let when = m.occurred_at.clone().or_else(|| Some(m.captured_at.clone()).filter(|s| !s.is_empty()));
    Item {
        r#ref: m.id,
        layer: if c.entity_only { Layer::Entity } else { Layer::of_kind(&m.kind) },
        kind: Some(m.kind),
        summary: m.summary,
        relevance: c.relevance,
        basis: c.basis.map(Basis::name),
        retrievers: c.retrievers.iter().map(|r| r.name()).collect(),
        matched_terms: c.matched_terms,
        fused_rank: c.fused_rank,
        source_url: m.source_url,
        confidence: m.confidence.or(m.trust),
        trust: m.trust.unwrap_or(0.5),
        age_days: age_days(when.as_deref(), now),
        occurred_at: when,
        entities: m.entities,
        conflict: m.conflict,
        content: m.content,
    }
}

/// Retrieves the candidates of a request.
pub fn gather(conn: &Connection, req: &Request<'_>) -> Result<Gathered> {
    let o = req.options;
    let profile = profile::resolve(req.model);
    let budget = profile.clamp_budget(req.budget) as usize;
    let intent = intent::detect(req.task);
    let mut q = Query::new(req.task, &o.scope, o.horizon());
    let task_embedding = o.task_embedding(req.task)?;
    q.query_embedding = task_embedding.as_deref();
    if intent == intent::Intent::Recall {
        q.recency_limit = RECALL_RECENCY;
    }
    let r = retrieve::retrieve(conn, &q)?;
    let _t = crate::timing::phase("gather: items, open loops");
    let mut items: Vec<Item> = r.candidates.into_iter().map(|c| item_from_candidate(c, o.now)).collect();
    items.extend(open_loops(conn, &o.scope, &r.terms, o.now)?);
    let counter = Counter::for_model(req.model, profile.name);
    Ok(Gathered {
        profile,
        counter,
        budget,
        intent,
        items,
        pending: r.pending,
        skipped_embeddings: r.skipped_embeddings,
        terms: r.terms,
    })
}

/// The layout of a request's output: its format and options, counted by the model's tokenizer.
pub fn layout(o: &Options, counter: Counter, session: bool, legend: Legend) -> Layout {
    Layout { format: o.format, counter, audit: o.audit, legend, session }
}

/// The pack cursor for a partial pack: the call's parameters and the page offset, signed.
pub fn pack_cursor(conn: &Connection, req: &Request<'_>, budget: usize, offset: usize) -> Result<String> {
    let o = req.options;
    let mut payload = json!({
        "task": req.task,
        "model": req.model,
        "budget": budget,
        "scope": o.scope,
        "now": o.now,
        "as_of": o.as_of,
        "query_embedding": o.query_embedding,
        "embedder": o.embedder,
        "offset": offset,
    });
    if let Some(l) = layout_flags(o) {
        payload["layout"] = json!(l);
    }
    cursor::sign(conn, cursor::PACK_PREFIX, &payload)
}

/// How a pack is rendered, for its cursor, when that is not the default SMP envelope: `j` json or `m`
/// markdown, `a` audit, `F` the full legend. Its pages are then cut from a pack rendered the same
/// way, which packs the same items (a session's delta and a pin are not carried: see
/// docs/reference.md, `cmp_expand`).
pub fn layout_flags(o: &crate::options::Options) -> Option<String> {
    let mut l = String::new();
    match o.format {
        crate::options::Format::Smp => {}
        crate::options::Format::Json => l.push('j'),
        crate::options::Format::Markdown => l.push('m'),
    }
    if o.audit {
        l.push('a');
    }
    if o.full_legend {
        l.push('F');
    }
    (!l.is_empty()).then_some(l)
}

/// The options a cursor's `layout` flags stand for, on top of `o`.
pub fn with_layout(mut o: crate::options::Options, flags: &str) -> crate::options::Options {
    if flags.contains('j') {
        o.format = crate::options::Format::Json;
    } else if flags.contains('m') {
        o.format = crate::options::Format::Markdown;
    }
    o.audit = flags.contains('a');
    o.full_legend = flags.contains('F');
    o
}

/// Largest share of the budget a pack cursor may take: a cursor carries the task and the query
/// embedding verbatim, and a 1 MiB task or an 8192-dimension embedding would otherwise make every
/// budget too small for the envelope. A pack whose cursor costs more leaves it out (`cursor: null`).
const CURSOR_SHARE: usize = 4;

/// The pack cursor for `g`'s first page, or None when it costs more than a quarter of the budget,
/// and in markdown without `audit`: a markdown pack is pasted for a model to read, which cannot page
/// (its header says how many memories were left out); its `More: cmp_expand(…)` line, which holds
/// the task, cost 40–50 tokens of every partial pack (BENCHMARKS.md, "What a pack costs").
pub fn fitting_cursor(conn: &Connection, req: &Request<'_>, g: &Gathered) -> Result<Option<String>> {
    Ok(cursor_at(conn, req, g, g.budget)?.ok())
}

/// The first page's cursor at `budget` when it fits its share, else the tokens it is counted at
/// (its tag at its bound); `Err(0)` when the output shows none (markdown without `audit`).
fn cursor_at(
    conn: &Connection,
    req: &Request<'_>,
    g: &Gathered,
    budget: usize,
) -> Result<std::result::Result<String, usize>> {
    if req.options.format == crate::options::Format::Markdown && !req.options.audit {
        return Ok(Err(0));
    }
    let c = pack_cursor(conn, req, budget, 0)?;
    // Counted exactly up to the share of the largest budget, so a cursor left out here knows the
    // budget at which it would fit (the same at every budget that leaves it out).
    let most = g.profile.pack_token_budget as usize / CURSOR_SHARE;
    let bound = g.counter.count_capped(cursor::untagged(&c), most).saturating_add(cursor::PACK_TAG_TOKENS);
    Ok(if bound <= budget / CURSOR_SHARE { Ok(c) } else { Err(bound) })
}

/// Suggested next calls for a pack, with `audit`: the full text of a compressed item, the neighbours
/// of an item that names entities. (The pack cursor is in `cursor`; it is not repeated here.)
pub fn follow_ups(pack: &Pack, audit: bool) -> Vec<Value> {
    let mut v = Vec::new();
    if !audit {
        return v;
    }
    if let Some(p) = pack.items.iter().find(|p| p.compressed.is_some()) {
        v.push(follow_up(&p.item.r#ref, "document"));
    }
    if let Some(p) = pack.items.iter().find(|p| !p.item.entities.is_empty() && p.item.r#ref.starts_with("mem_")) {
        v.push(follow_up(&p.item.r#ref, "neighbors"));
    }
    v
}

fn follow_up(r: &str, direction: &str) -> Value {
    let why = if direction == "document" { "shown compressed: the full text" } else { "more about its entities" };
    json!({"call": "cmp_expand", "args": [r, direction], "why": why})
}

/// Budgets from this one on show their numbers (`budget.tokens`, `used`) in two tokens: `o200k_base`
/// and `cl100k_base` cut a run of digits into groups of three, so a number below 1000 is one token.
const TWO_GROUP_BUDGET: usize = 1000;

/// The largest number a budget or a `used` count shows: five digits, as any profile's largest
/// budget (12,000) has.
const LARGEST_SHOWN: usize = 99_999;

/// What a call's output shows besides its items and the legend, as the reserve prices it.
#[derive(Clone, Copy, Default)]
pub struct Shown<'a> {
    /// The call's own pack cursor ([`fitting_cursor`]), when the pack is partial.
    pub first_page: Option<&'a str>,
    /// The session delta at its largest.
    pub delta: Option<&'a crate::session::Delta>,
    /// The session, when there is one.
    pub session_id: Option<&'a str>,
}

/// What the output needs besides the items, at its largest: the legend and framing, the cursor (its
/// tag at its bound), the follow-ups for the candidate whose ref costs most, the receipt, the given
/// session delta. Below [`TWO_GROUP_BUDGET`] the budget and `used` are counted as the budget's own
/// three digits. What is not items grows at larger budgets (`later`, from [`growth`]); the reserve is
/// raised so the room for items never exceeds what those budgets leave ([`monotone_reserve`]): a
/// larger budget never packs less.
fn reserve(req: &Request<'_>, g: &Gathered, layout: &Layout, x: Shown<'_>, later: &[Growth]) -> usize {
    let at = |budget: usize, cursor: Option<&str>| {
        let number = if budget < TWO_GROUP_BUDGET { budget } else { LARGEST_SHOWN };
        reserve_showing(req, g, layout, Shown { first_page: cursor, ..x }, number)
    };
    let later: Vec<(usize, usize)> = later.iter().map(|p| (p.budget, at(p.budget, p.cursor.as_deref()))).collect();
    monotone_reserve(g.budget, at(g.budget, x.first_page), &later)
}

/// A budget above the call's where what is not items grows, with the cursor shown there.
struct Growth {
    budget: usize,
    cursor: Option<String>,
}

/// The budgets above the call's where what is not items grows: [`TWO_GROUP_BUDGET`], where the
/// numbers take a second digit group, and where a cursor the call leaves out for its cost first fits
/// its share ([`CURSOR_SHARE`]). The same for every layout, so found once a call.
fn growth(conn: &Connection, req: &Request<'_>, g: &Gathered, first_page: Option<&str>) -> Result<Vec<Growth>> {
    let largest = g.profile.pack_token_budget as usize;
    let mut later = Vec::new();
    if g.budget < TWO_GROUP_BUDGET && TWO_GROUP_BUDGET <= largest {
        let cursor = cursor_at(conn, req, g, TWO_GROUP_BUDGET)?.ok();
        later.push(Growth { budget: TWO_GROUP_BUDGET, cursor });
    }
    if first_page.is_none() {
        if let Some((budget, c)) = first_cursor_budget(conn, req, g, largest)? {
            later.push(Growth { budget, cursor: Some(c) });
        }
    }
    Ok(later)
}

/// The layout a call renders with and the reserve its items' room is judged against. The compact
/// legend's key and field descriptions cost about 70 tokens more in SMP than the minimal legend
/// (`about` and the rules). Where the minimal legend would leave room for the best candidate in
/// full and the compact one would not, the pack carries the minimal legend, its items' room capped
/// at that candidate's cost: those tokens go to a memory, not to descriptions. Elsewhere it carries
/// the compact legend, or, when the budget cannot hold even that, the minimal one with no room for
/// items. As the budget grows the room never shrinks: below the window it is less than the
/// candidate's cost, in it exactly that, above it at least that (the room under either legend
/// never shrinks: `reserve`), so a larger budget still never packs less.
pub fn legend_and_reserve(
    conn: &Connection,
    req: &Request<'_>,
    g: &Gathered,
    layout: &Layout,
    x: Shown<'_>,
) -> Result<(Layout, usize)> {
    let later = growth(conn, req, g, x.first_page)?;
    let own = reserve(req, g, layout, x, &later);
    if layout.legend != Legend::Compact {
        return Ok((*layout, own));
    }
    let minimal = Layout { legend: Legend::Minimal, ..*layout };
    let fallback = if own <= g.budget { *layout } else { minimal };
    let gap = layout.legend_cost().saturating_sub(minimal.legend_cost());
    let best = g.items.first().map_or(0, |it| full_cost(layout, it));
    let room = g.budget.saturating_sub(own);
    // The minimal legend frees about `gap` tokens: it can only matter within twice that of the need.
    if gap == 0 || (own <= g.budget && room >= best) || room + 2 * gap < best {
        return Ok((fallback, own));
    }
    let small = reserve(req, g, &minimal, x, &later);
    if small < own && g.budget.saturating_sub(small) >= best {
        return Ok((minimal, small.max(g.budget - best)));
    }
    Ok((fallback, own))
}

/// Tokens an item adds in full: its units and the shared units it needs (a graph entry, a heading).
fn full_cost(layout: &Layout, item: &Item) -> usize {
    use pack::Meter;
    layout.cost(item, &item.content, None, &[]) + layout.groups(item).iter().map(|(_, n)| n).sum::<usize>()
}

/// The smallest budget above the call's, up to `largest`, at which a cursor the call leaves out for
/// its cost fits its share, with that cursor; None when there is none (or the output shows none).
fn first_cursor_budget(
    conn: &Connection,
    req: &Request<'_>,
    g: &Gathered,
    largest: usize,
) -> Result<Option<(usize, String)>> {
    let mut bound = match cursor_at(conn, req, g, g.budget)? {
        Err(bound) if bound > 0 => bound,
        _ => return Ok(None),
    };
    // The cursor holds the budget's digits: one more digit group can add a token, so look again.
    for _ in 0..3 {
        let b = bound.saturating_mul(CURSOR_SHARE);
        if b > largest {
            return Ok(None);
        }
        match cursor_at(conn, req, g, b)? {
            Ok(c) => return Ok(Some((b, c))),
            Err(next) => bound = next.max(bound + 1),
        }
    }
    Ok(None)
}

/// The reserve at `budget`, `own` there, raised so that the room for items (`budget - reserve`)
/// never exceeds what a larger budget of `later` ((budget, reserve) pairs) leaves: the room then
/// never shrinks as the budget grows, wherever what is not items grows.
fn monotone_reserve(budget: usize, own: usize, later: &[(usize, usize)]) -> usize {
    later.iter().filter(|(b, _)| *b > budget).map(|&(b, r)| r.saturating_sub(b - budget)).fold(own, usize::max)
}

/// [`reserve`] with the budget and `used` shown as `number`, and `x.first_page` as the cursor.
fn reserve_showing(req: &Request<'_>, g: &Gathered, layout: &Layout, x: Shown<'_>, number: usize) -> usize {
    let cursor = x.first_page;
    let o = req.options;
    // Only audited packs name a ref in their follow-ups: count the candidates' refs only then.
    let costly_ref = if o.audit {
        g.items.iter().map(|it| it.r#ref.as_str()).max_by_key(|r| (layout.counter.count(r), *r)).unwrap_or("")
    } else {
        ""
    };
    let digest = |b: &[u8]| crate::envelope::hex(&<sha2::Sha256 as sha2::Digest>::digest(b));
    let mut dummy = Pack {
        items: Vec::new(),
        budget: LARGEST_SHOWN,
        used: 0,
        items_used: 0,
        // No more are left out or folded than there are candidates.
        excluded: vec![0; g.items.len()],
        deduped: g.items.len(),
        intent: g.intent,
    };
    // A real digest's hex, so the reserve counts what a sha costs; the same at every budget (the
    // receipt id is derived from it, and its tokens vary from one digest to another).
    let sha = crate::envelope::canonical(g.profile.name, &dummy, 99_999).1;
    dummy.budget = number;
    let parts = Parts {
        model: g.profile.name,
        pack: &dummy,
        shown: Vec::new(),
        pending: g.pending,
        cursor: cursor.map(|c| cursor::untagged(c).to_string()),
        follow_ups: if o.audit {
            vec![follow_up(costly_ref, "document"), follow_up(costly_ref, "neighbors")]
        } else {
            Vec::new()
        },
        delta: x.delta,
        session_id: x.session_id,
        at: time::format(o.now),
        sha,
        pin: o.pin.then(|| json!({"sha": digest(b"pin"), "bytes": 99_999_999})),
        warnings: warnings(g),
    };
    // The tag is counted at its bound (see [`cursor::PACK_TAG_TOKENS`]), not as this database keys it.
    layout.reserve(&parts, number) + if cursor.is_some() { cursor::PACK_TAG_TOKENS } else { 0 }
}

/// Warnings a json envelope carries.
pub fn warnings(g: &Gathered) -> Vec<Value> {
    let mut w = Vec::new();
    if g.skipped_embeddings > 0 {
        w.push(json!({"kind": "skipped_embeddings", "count": g.skipped_embeddings,
            "why": "stored embeddings with another dimension than query_embedding were not compared"}));
    }
    w
}

/// Packs the gathered candidates so that the output fits `budget` tokens.
pub fn pack_at(g: &Gathered, budget: usize, layout: &Layout, reserve: usize) -> Pack {
    let params = pack::Params { profile: g.profile, budget, reserve, intent: g.intent, meter: layout };
    let mut p = pack::pack(&g.items, params);
    p.budget = g.budget;
    p
}

/// Retrieves and packs for an output without a session (cmp_items, MQL ask, the pack cursor).
pub fn build(conn: &Connection, req: &Request<'_>) -> Result<Built> {
    let g = gather(conn, req)?;
    let legend = if req.options.full_legend { Legend::Full } else { Legend::Compact };
    let layout = layout(req.options, g.counter, false, legend);
    let first = fitting_cursor(conn, req, &g)?;
    let shown = Shown { first_page: first.as_deref(), ..Shown::default() };
    let (layout, reserve) = legend_and_reserve(conn, req, &g, &layout, shown)?;
    let pack = pack_at(&g, g.budget, &layout, reserve);
    Ok(Built { gathered: g, pack })
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// However what is not items grows with the budget (a step function: more digits, a cursor
        /// that starts to fit), the room for items never shrinks as the budget grows, and is never
        /// less than the largest reserve leaves.
        #[test]
        fn the_room_for_items_never_shrinks_as_the_budget_grows(
            base in 0usize..400,
            steps in proptest::collection::vec((300usize..3000, 0usize..400), 0..4),
        ) {
            let at = |b: usize| base + steps.iter().filter(|(from, _)| b >= *from).map(|s| s.1).sum::<usize>();
            let room = |b: usize| {
                let later: Vec<(usize, usize)> = steps.iter().map(|s| (s.0, at(s.0))).collect();
                b.saturating_sub(monotone_reserve(b, at(b), &later))
            };
            let most = base + steps.iter().map(|s| s.1).sum::<usize>();
            for b in crate::profile::MIN_BUDGET as usize..3000 {
                proptest::prop_assert!(room(b) <= room(b + 1), "{b}: {} > {}", room(b), room(b + 1));
                proptest::prop_assert!(room(b) >= b.saturating_sub(most), "{b}");
                proptest::prop_assert!(room(b) <= b.saturating_sub(at(b)), "{b}: more room than its own reserve leaves");
            }
        }
    }
}
