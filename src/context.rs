//! Assembling a pack: retrieval → candidates (memories and open tasks) → intent → packer. Shared by
//! cmp_context, cmp_items, cmp_query (ask) and the pack cursor.

use crate::error::{CmpError, Result};
use crate::options::Options;
use crate::pack::{self, intent, Item, Layer, Pack};
use crate::profile::{self, Profile};
use crate::retrieve::{self, Candidate, Query};
use crate::{text, time};
use rusqlite::Connection;

/// Newest memories offered for a recall (empty) task, and for any other task.
pub const RECALL_RECENCY: usize = 30;
/// Most open tasks considered for the open_loops layer.
pub const MAX_OPEN_TASKS: usize = 50;

/// One pack request.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// SQL function name (for errors).
    pub func: &'a str,
    /// Task text.
    pub task: &'a str,
    /// Model string.
    pub model: Option<&'a str>,
    /// Requested budget.
    pub budget: Option<i64>,
    /// Options.
    pub options: &'a Options,
}

/// A built pack and what retrieval reported alongside.
#[derive(Debug, Clone)]
pub struct Built {
    /// Resolved profile.
    pub profile: Profile,
    /// The pack.
    pub pack: Pack,
    /// Lexical matches not yet visible.
    pub pending: usize,
    /// Memories skipped for an embedding of another dimension.
    pub skipped_embeddings: usize,
    /// Stemmed task terms.
    pub terms: Vec<String>,
}

fn age_days(when: Option<&str>, now: f64) -> f64 {
    when.and_then(time::parse).map_or(0.0, |t| ((now - t) / 86_400.0).max(0.0))
}

/// Open tasks of the scope as open_loops candidates: tasks sharing words with the task first.
fn open_loops(conn: &Connection, func: &str, scope: &str, terms: &[String], now: f64) -> Result<Vec<Item>> {
    let sql_err = |e| CmpError::sql(func, e);
    let mut st = conn
        .prepare_cached(
            "SELECT id, title, due_at, entities FROM cmp_tasks
             WHERE scope = ?1 AND status = 'open' AND id IS NOT NULL
             ORDER BY due_at IS NULL, due_at, id LIMIT ?2",
        )
        .map_err(sql_err)?;
    let rows = st
        .query_map(rusqlite::params![scope, MAX_OPEN_TASKS as i64], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, Option<String>>(3)?,
            ))
        })
        .map_err(sql_err)?;
    let mut items = Vec::new();
    for row in rows {
        let (id, title, due, ents) = row.map_err(sql_err)?;
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
        basis: c.basis,
        retrievers: c.retrievers,
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

/// Retrieves and packs.
pub fn build(conn: &Connection, req: &Request<'_>) -> Result<Built> {
    let o = req.options;
    let profile = profile::resolve(req.model);
    let budget = profile.clamp_budget(req.budget) as usize;
    let intent = intent::detect(req.task);
    let mut q = Query::new(req.task, &o.scope, o.horizon());
    q.query_embedding = o.query_embedding.as_deref();
    if intent == intent::Intent::Recall {
        q.recency_limit = RECALL_RECENCY;
    }
    let r = retrieve::retrieve(conn, req.func, &q)?;
    let t = crate::timing::phase("open tasks");
    let mut items: Vec<Item> = r.candidates.into_iter().map(|c| item_from_candidate(c, o.now)).collect();
    items.extend(open_loops(conn, req.func, &o.scope, &r.terms, o.now)?);
    drop(t);
    let _t = crate::timing::phase("packing");
    let pack = pack::pack(items, pack::Params { profile, budget, intent });
    Ok(Built { profile, pack, pending: r.pending, skipped_embeddings: r.skipped_embeddings, terms: r.terms })
}
