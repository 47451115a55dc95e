//! `cmp_context(task [, model [, token_budget [, session_id [, options]]]])` and the table-valued
//! `cmp_items(task [, model [, token_budget [, options]]])`.

use super::args;
use super::table::TableFn;
use crate::context::{self, Built, Request};
use crate::cursor;
use crate::envelope::{self, Parts};
use crate::error::{fail, CmpError, Result};
use crate::options::{self, Format, Options, Send};
use crate::pack::Packed;
use crate::session::{self, State};
use crate::{store, time};
use rusqlite::functions::Context;
use rusqlite::types::{Value as SqlValue, ValueRef};
use rusqlite::Connection;
use serde_json::{json, Value};
use std::ffi::{c_int, CStr};

/// Options `cmp_context` accepts.
pub const OPTIONS: &[&str] = &["format", "now", "as_of", "scope", "pin", "query_embedding", "send"];
/// Options `cmp_items` accepts.
pub const ITEMS_OPTIONS: &[&str] = &["now", "as_of", "scope", "query_embedding"];
/// Longest session id.
pub const MAX_SESSION_ID_CHARS: usize = 256;

/// Validates a session id argument.
pub fn session_id(func: &str, s: Option<String>) -> Result<Option<String>> {
    match s {
        Some(s) if s.is_empty() => fail(func, "session_id must be a non-empty string (or NULL for no session)"),
        Some(s) if s.chars().count() > MAX_SESSION_ID_CHARS => {
            fail(func, format!("session_id must be at most {MAX_SESSION_ID_CHARS} characters"))
        }
        other => Ok(other),
    }
}

/// The pack cursor for a partial pack: the call's parameters and the page offset, signed.
pub fn pack_cursor(conn: &Connection, func: &str, req: &Request<'_>, budget: usize, offset: usize) -> Result<String> {
    let o = req.options;
    let payload = json!({
        "task": req.task,
        "model": req.model,
        "budget": budget,
        "scope": o.scope,
        "now": o.now,
        "as_of": o.as_of,
        "query_embedding": o.query_embedding,
        "offset": offset,
    });
    cursor::sign(conn, func, cursor::PACK_PREFIX, &payload)
}

fn follow_ups(built: &Built, cursor: Option<&str>) -> Vec<Value> {
    let mut v = Vec::new();
    if let Some(c) = cursor {
        v.push(json!({"call": "cmp_expand", "args": [c, "more"],
            "why": format!("{} eligible memories did not fit the budget", built.pack.excluded.len())}));
    }
    if let Some(p) = built.pack.items.iter().find(|p| p.compressed.is_some()) {
        v.push(json!({"call": "cmp_expand", "args": [p.item.r#ref, "document"],
            "why": format!("{} is shown compressed ({})", p.item.r#ref, p.compressed.unwrap_or("head"))}));
    }
    if let Some(p) = built.pack.items.iter().find(|p| !p.item.entities.is_empty() && p.item.r#ref.starts_with("mem_")) {
        v.push(json!({"call": "cmp_expand", "args": [p.item.r#ref, "neighbors"],
            "why": format!("other memories about {}", p.item.entities.join(", "))}));
    }
    v
}

/// Attempts before a session turn gives up on concurrent writers.
pub const SESSION_RETRIES: usize = 64;

/// Runs a session turn: loads the state, computes the delta, stores the new state atomically.
fn session_turn(conn: &Connection, func: &str, sid: &str, built: &Built, o: &Options) -> Result<session::Delta> {
    let sql_err = |e| CmpError::sql(func, e);
    let pack: Vec<(String, Option<f64>)> =
        built.pack.items.iter().map(|p| (p.item.r#ref.clone(), p.item.relevance)).collect();
    for _ in 0..SESSION_RETRIES {
        let stored = store::load_session(conn, sid, &o.scope).map_err(sql_err)?;
        let state: State = match &stored {
            Some(s) => serde_json::from_str(s).map_err(|e| {
                CmpError::new(func, format!("session {sid:?} has corrupt state ({e}); reset it with cmp_session_reset"))
            })?,
            None => State::default(),
        };
        let known: Vec<String> = state.known.keys().cloned().collect();
        let status = store::ref_status(conn, &known, &o.scope, time::julian(o.horizon())).map_err(sql_err)?;
        let (next, delta) = session::advance(&state, &pack, built.pack.used, &built.terms, &status);
        let text = serde_json::to_string(&next).map_err(|e| CmpError::new(func, e))?;
        let expected = stored.as_ref().map(|_| state.cursor);
        if store::save_session(conn, sid, &o.scope, expected, next.turn, next.cursor, &text, &time::format(o.now))
            .map_err(sql_err)?
        {
            return Ok(delta);
        }
    }
    fail(func, format!("session {sid:?} is busy: concurrent turns kept winning; retry"))
}

/// Renders a built pack in the requested format, running the session turn and the pin if asked.
pub fn render(conn: &Connection, req: &Request<'_>, built: &Built, sid: Option<&str>) -> Result<String> {
    let f = req.func;
    let o = req.options;
    // Each item's MemoryObject is built once: for the pin's canonical bytes and for the envelope.
    let objects: Vec<Value> = built.pack.items.iter().map(envelope::memory_object).collect();
    let (canonical, sha) = envelope::canonical(built.profile.name, &built.pack, built.pending, &objects);
    let cursor =
        if built.pack.excluded.is_empty() { None } else { Some(pack_cursor(conn, f, req, built.pack.budget, 0)?) };
    // The pin first: it is idempotent (the same sha always stores the same bytes), so when the session
    // turn fails after it, nothing observable is half-done; the session turn is the last write.
    let pin = if o.pin {
        store::put_pin(conn, &sha, &canonical, &time::format(o.now)).map_err(|e| CmpError::sql(f, e))?;
        Some(json!({"sha": sha, "bytes": canonical.len()}))
    } else {
        None
    };
    let delta = match sid {
        Some(s) => {
            let _t = crate::timing::phase("session turn (inside render)");
            Some(session_turn(conn, f, s, built, o)?)
        }
        None => None,
    };
    let keep: Vec<bool> = match (&delta, o.send) {
        (Some(d), Send::Delta) => {
            let new: std::collections::HashSet<&str> = d.new.iter().map(|n| n.0.as_str()).collect();
            built.pack.items.iter().map(|p| new.contains(p.item.r#ref.as_str())).collect()
        }
        _ => vec![true; built.pack.items.len()],
    };
    let shown: Vec<&Packed> = built.pack.items.iter().zip(&keep).filter(|x| *x.1).map(|x| x.0).collect();
    let objects: Vec<Value> = objects.into_iter().zip(&keep).filter(|x| *x.1).map(|x| x.0).collect();
    let at = time::format(o.now);
    let receipt_id = {
        use sha2::{Digest, Sha256};
        let h = Sha256::digest(format!("{sha}\u{0}{at}\u{0}{}", sid.unwrap_or("")).as_bytes());
        format!("rcpt_{}", &envelope::hex(&h)[..12])
    };
    let receipt = json!({
        "id": receipt_id,
        "at": at,
        "profile": built.profile.name,
        "budget": built.pack.budget,
        "used": built.pack.used,
        "items": built.pack.items.len(),
        "session_id": sid,
    });
    let mut warnings = Vec::new();
    if built.skipped_embeddings > 0 {
        warnings.push(json!({"kind": "skipped_embeddings", "count": built.skipped_embeddings,
            "why": "stored embeddings with another dimension than query_embedding were not compared"}));
    }
    let parts = Parts {
        model: built.profile.name,
        pack: &built.pack,
        shown,
        objects,
        pending: built.pending,
        follow_ups: follow_ups(built, cursor.as_deref()),
        cursor,
        working_memory: delta.map(|d| d.to_json()),
        receipt,
        pin,
        warnings,
    };
    Ok(match o.format {
        Format::Smp => envelope::smp(&parts),
        Format::Json => envelope::json_format(&parts),
        Format::Markdown => envelope::markdown(&parts),
    })
}

/// `cmp_context(...)`.
pub fn context(ctx: &Context<'_>) -> Result<String> {
    let f = "cmp_context";
    args::arity(ctx, f, 1, 5, "1 to 5 arguments (task [, model [, token_budget [, session_id [, options]]]])")?;
    let task = args::opt_text(ctx, f, 0, "task")?.unwrap_or_default();
    let model = args::opt_text(ctx, f, 1, "model")?;
    let budget = args::opt_int(ctx, f, 2, "token_budget")?;
    let sid = session_id(f, args::opt_text(ctx, f, 3, "session_id")?)?;
    let opts = args::opt_text(ctx, f, 4, "options")?;
    let o = options::parse(f, opts.as_deref(), OPTIONS)?;
    if o.send == Send::Delta && sid.is_none() {
        return fail(f, "send \"delta\" needs a session_id (the delta is relative to what the session was served)");
    }
    let conn = unsafe { ctx.get_connection() }.map_err(|e| CmpError::sql(f, e))?;
    let t = crate::timing::phase("schema check");
    super::require_schema(&conn, f)?;
    drop(t);
    let req = Request { func: f, task: &task, model: model.as_deref(), budget, options: &o };
    let built = context::build(&conn, &req)?;
    let _t = crate::timing::phase("render (envelope, session turn, pin)");
    render(&conn, &req, &built, sid.as_deref())
}

/// The `cmp_items` table-valued function.
pub struct Items;

impl TableFn for Items {
    const NAME: &'static str = "cmp_items";
    const SCHEMA: &'static CStr = c"CREATE TABLE x(ref, content, layer, relevance, relevance_basis, why, source_url, confidence, occurred_at, entities, task HIDDEN, model HIDDEN, token_budget HIDDEN, options HIDDEN)";
    const COLUMNS: c_int = 10;
    const ARGS: usize = 4;

    fn rows(conn: &Connection, a: &[Option<ValueRef<'_>>]) -> Result<Vec<Vec<SqlValue>>> {
        let f = Self::NAME;
        let task = match a[0] {
            Some(v) => args::text_value(f, "task", v)?.unwrap_or_default(),
            None => return fail(f, "task is required: SELECT * FROM cmp_items('your task')"),
        };
        let model = a[1].map(|v| args::text_value(f, "model", v)).transpose()?.flatten();
        let budget = a[2].map(|v| args::int_value(f, "token_budget", v)).transpose()?.flatten();
        let opts = a[3].map(|v| args::text_value(f, "options", v)).transpose()?.flatten();
        let o = options::parse(f, opts.as_deref(), ITEMS_OPTIONS)?;
        super::require_schema(conn, f)?;
        let req = Request { func: f, task: &task, model: model.as_deref(), budget, options: &o };
        let built = context::build(conn, &req)?;
        Ok(built.pack.items.iter().map(|p| object_row(&envelope::memory_object(p))).collect())
    }
}

/// A MemoryObject as SQL values, in field order; objects and arrays as JSON text.
pub fn object_row(obj: &Value) -> Vec<SqlValue> {
    envelope::ITEM_FIELDS
        .iter()
        .map(|(k, _)| match &obj[*k] {
            Value::Null => SqlValue::Null,
            Value::String(s) => SqlValue::Text(s.clone()),
            Value::Number(n) => n.as_i64().map_or_else(|| SqlValue::Real(n.as_f64().unwrap_or(0.0)), SqlValue::Integer),
            Value::Bool(b) => SqlValue::Integer(i64::from(*b)),
            other => SqlValue::Text(other.to_string()),
        })
        .collect()
}
