//! Expanding a ref (`cmp_expand`): its document, its neighbours through shared entities, and the
//! next page of a pack cursor. Every memory is read through the eligibility rule.

use crate::context::{self, Request};
use crate::cursor;
use crate::envelope::memory_object;
use crate::error::{Error, Result};
use crate::options::Options;
use crate::pack::Layer;
use crate::query::whole;
use crate::retrieve::Query;
use crate::store;
use crate::time;
use rusqlite::Connection;
use serde_json::{json, Value};

/// Neighbours listed per entity, and items per pack page.
pub const PAGE: usize = 8;

/// The memory `id` as a document the caller may read: in scope, not redacted, captured by `now`
/// (superseded or not).
fn readable(conn: &Connection, id: &str, o: &Options) -> rusqlite::Result<Option<store::Memory>> {
    let reader = store::Reader { scope: &o.scope, h: time::julian(o.now), any_version: true };
    store::memories::readable(conn, reader, id)
}

/// The document behind `r`: a readable memory (never naming a replacement the caller could not
/// read), else a task of the scope.
pub fn document(conn: &Connection, r: &str, o: &Options) -> Result<Value> {
    if let Some(m) = readable(conn, r, o)? {
        // Never reveal the id of a replacement the caller could not read.
        let superseded_by = match &m.superseded_by {
            Some(s) => readable(conn, s, o)?.map(|x| x.id),
            None => None,
        };
        let doc = json!({
            "ref": m.id, "content": m.content, "summary": m.summary, "kind": m.kind,
            "layer": Layer::of_kind(&m.kind).name(), "occurred_at": m.occurred_at, "captured_at": m.captured_at,
            "source_url": m.source_url, "confidence": m.confidence, "trust": m.trust, "entities": m.entities,
            "superseded_by": superseded_by, "superseded_at": if superseded_by.is_some() { m.superseded_at } else { None },
            "conflict": m.conflict,
        });
        return Ok(json!({"ref": r, "direction": "document", "found": true, "document": doc}));
    }
    let task = store::tasks::by_id(conn, r, &o.scope)?.map(|t| {
        json!({"ref": t.id, "title": t.title, "status": t.status, "due_at": t.due_at,
            "entities": t.entities.as_deref().map(store::parse_entities).unwrap_or_default()})
    });
    let found = task.is_some();
    Ok(json!({"ref": r, "direction": "document", "found": found, "document": task}))
}

/// The memories sharing an entity with the readable memory `r`: up to [`PAGE`] per entity, newest
/// first, read through the eligibility rule.
pub fn neighbors(conn: &Connection, r: &str, o: &Options) -> Result<Value> {
    let Some(m) = readable(conn, r, o)? else {
        return Ok(json!({"ref": r, "direction": "neighbors", "found": false, "neighbors": []}));
    };
    let q = Query::new("", &o.scope, o.now);
    let ents = store::entities::of_memory(conn, m.rid)?;
    let mut out = Vec::new();
    for (eid, name) in ents {
        let rows = store::entities::neighbours(conn, q.reader(), eid, m.rid, PAGE)?;
        let mut items = Vec::new();
        for mem in rows {
            let c = crate::retrieve::Candidate {
                mem,
                relevance: None,
                basis: None,
                retrievers: vec![crate::retrieve::Retriever::Entity],
                matched_terms: Vec::new(),
                fused_rank: None,
                entity_only: false,
            };
            items.push(memory_object(&whole(context::item_from_candidate(c, o.now))));
        }
        if !items.is_empty() {
            out.push(json!({"entity": name, "items": items}));
        }
    }
    Ok(json!({"ref": r, "direction": "neighbors", "found": true, "neighbors": out}))
}

/// The next page of a pack cursor's excluded items: the pack rebuilt from the cursor's parameters
/// `p`, [`PAGE`] items from its offset, and the cursor of the page after.
pub fn pack_page(conn: &Connection, p: &Value, o: &Options) -> Result<Value> {
    let bad = || Error::Cursor("cursor is invalid: it carries no pack parameters".into());
    let task = p["task"].as_str().ok_or_else(bad)?;
    let model = p["model"].as_str();
    let budget = p["budget"].as_i64().ok_or_else(bad)?;
    let offset = p["offset"].as_u64().ok_or_else(bad)? as usize;
    let scope = p["scope"].as_str().ok_or_else(bad)?.to_string();
    if scope != o.scope {
        return Err(Error::Cursor("cursor was issued for another scope".into()));
    }
    let qe: Option<Vec<f32>> = match &p["query_embedding"] {
        Value::Array(a) => Some(a.iter().map(|x| x.as_f64().unwrap_or(0.0) as f32).collect()),
        _ => None,
    };
    let opts = Options {
        now: p["now"].as_f64().ok_or_else(bad)?,
        now_given: true,
        as_of: p["as_of"].as_f64(),
        scope,
        query_embedding: qe,
        embedder: p["embedder"].as_str().map(str::to_string),
        ..Options::default()
    };
    let opts = context::with_layout(opts, p["layout"].as_str().unwrap_or(""));
    let req = Request { task, model, budget: Some(budget), options: &opts };
    let built = context::build(conn, &req)?;
    let excluded = &built.pack.excluded;
    let end = (offset + PAGE).min(excluded.len());
    let items: Vec<Value> = excluded
        .iter()
        .skip(offset)
        .take(end.saturating_sub(offset))
        .map(|&i| memory_object(&whole(built.gathered.items[i].clone())))
        .collect();
    let has_more = end < excluded.len();
    let cursor = if has_more {
        let mut next = p.clone();
        next["offset"] = json!(end);
        Some(cursor::sign(conn, cursor::PACK_PREFIX, &next)?)
    } else {
        None
    };
    Ok(json!({"mode": "pack", "items": items, "count": items.len(), "offset": offset,
        "coverage": {"excluded": excluded.len(), "returned": items.len(), "has_more": has_more}, "cursor": cursor}))
}
