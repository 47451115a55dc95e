//! MQL execution: the rows of a validated query (find: retrieval with every version, flagged
//! superseded by the eligibility rule; ask: a pack), narrowed, paged and given a signed cursor.

use crate::context::{self, Request};
use crate::cursor;
use crate::envelope::memory_object;
use crate::error::{Error, Result};
use crate::mql::{self, Mode, Mql, Row};
use crate::options::Options;
use crate::pack::{Item, Packed};
use crate::retrieve::{self, Query};
use crate::store;
use rusqlite::Connection;
use serde_json::{json, Value};

/// A packable item shown whole (find results and expand pages are never compressed).
pub fn whole(item: Item) -> Packed {
    Packed { content: item.content.clone(), item, compressed: None, folded_refs: Vec::new(), utility: 0.0 }
}

fn row(p: &Packed, superseded: bool) -> Row {
    Row {
        object: memory_object(p),
        kind: p.item.kind.clone(),
        superseded,
        relevance: p.item.relevance,
        trust: p.item.confidence,
        entities: p.item.entities.clone(),
    }
}

/// The unnarrowed result rows of a query.
fn base_rows(conn: &Connection, m: &Mql) -> Result<Vec<Row>> {
    match m.mode {
        Mode::Find => {
            let mut q = Query::new(&m.text, &m.scope, m.horizon());
            q.include_superseded = true;
            q.recency_limit = 0;
            q.rules_limit = 0;
            let r = retrieve::retrieve(conn, &q)?;
            // Superseded at the horizon by the one eligibility rule (the rows above were read
            // without it).
            let ids: Vec<&str> = r.candidates.iter().map(|c| c.mem.id.as_str()).collect();
            let superseded = store::memories::superseded(conn, &ids, q.horizon_jd)?;
            let mut rows = Vec::with_capacity(r.candidates.len());
            for c in r.candidates {
                let sup = superseded.contains(&c.mem.id);
                rows.push(row(&whole(context::item_from_candidate(c, m.now)), sup));
            }
            Ok(rows)
        }
        Mode::Ask => {
            let o =
                Options { now: m.now, now_given: true, as_of: m.as_of, scope: m.scope.clone(), ..Options::default() };
            let req = Request { task: &m.text, model: m.model.as_deref(), budget: m.budget_tokens, options: &o };
            let built = context::build(conn, &req)?;
            Ok(built.pack.items.iter().map(|p| row(p, false)).collect())
        }
    }
}

/// Runs a validated query and returns the result object.
pub fn run(conn: &Connection, m: &Mql) -> Result<Value> {
    let base = base_rows(conn, m)?;
    let from = base.len();
    let narrowed = mql::narrow(base, m);
    let to = narrowed.len();
    let end = (m.offset + m.k).min(to);
    let page: Vec<Value> =
        narrowed.into_iter().skip(m.offset).take(end.saturating_sub(m.offset)).map(|r| r.object).collect();
    let has_more = end < to;
    let cursor = if has_more {
        let mut next = m.clone();
        next.offset = end;
        Some(cursor::sign(conn, cursor::MQL_PREFIX, &json!({"mql": next.to_value()}))?)
    } else {
        None
    };
    let mut follow_ups = Vec::new();
    if let Some(c) = &cursor {
        follow_ups
            .push(json!({"call": "cmp_expand", "args": [c, "more"], "why": format!("{} more results", to - end)}));
    }
    if let (Some(d), Some(top)) = (m.expand.as_deref(), page.first()) {
        if d != "more" {
            follow_ups.push(json!({"call": "cmp_expand", "args": [top["ref"], d], "why": "expand the top hit"}));
        }
    }
    Ok(json!({
        "mode": if m.mode == Mode::Ask { "ask" } else { "find" },
        "items": page,
        "count": page.len(),
        "offset": m.offset,
        "coverage": {"narrowed_from": from, "narrowed_to": to, "returned": page.len(), "has_more": has_more},
        "cursor": cursor,
        "follow_ups": follow_ups,
    }))
}

/// Resumes a verified MQL cursor payload.
pub fn resume(conn: &Connection, payload: &Value) -> Result<Value> {
    let Some(Value::Object(map)) = payload.get("mql") else {
        return Err(Error::Cursor("cursor is invalid: it carries no query".into()));
    };
    let m = mql::from_map(map)?;
    run(conn, &m)
}
