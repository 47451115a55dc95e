//! `cmp_context(task [, model [, token_budget [, session_id [, options]]]])` and the table-valued
//! `cmp_items(task [, model [, token_budget [, options]]])`.

use super::args;
use super::table::TableFn;
use crate::context::{self, Gathered, Request};
use crate::envelope::{self, Legend, Parts};
use crate::error::{Error, Result};
use crate::options::{self, Format, Send};
use crate::session::{self, State, Turn};
use crate::{store, time};
use rusqlite::functions::Context;
use rusqlite::types::{Value as SqlValue, ValueRef};
use rusqlite::Connection;
use serde_json::{json, Value};
use std::ffi::{c_int, CStr};

/// Options `cmp_context` accepts.
pub const OPTIONS: &[&str] =
    &["format", "now", "as_of", "scope", "pin", "query_embedding", "embedder", "send", "audit", "legend"];
/// Options `cmp_items` accepts.
pub const ITEMS_OPTIONS: &[&str] = &["now", "as_of", "scope", "query_embedding", "embedder"];
/// Longest session id.
pub const MAX_SESSION_ID_CHARS: usize = 256;

/// Validates a session id argument.
pub fn session_id(s: Option<String>) -> Result<Option<String>> {
    match s {
        Some(s) if s.is_empty() => {
            Err(Error::invalid("session_id", "must be a non-empty string (or NULL for no session)"))
        }
        Some(s) if s.chars().count() > MAX_SESSION_ID_CHARS => {
            Err(Error::invalid("session_id", format!("must be at most {MAX_SESSION_ID_CHARS} characters")))
        }
        other => Ok(other),
    }
}

/// Rounds of packing smaller when an output came out over its budget (only a session delta that
/// grew between the reserve and the turn, or the 512 cap, can cause one).
const FIT_ROUNDS: usize = 4;

/// One rendering of a pack that fits the budget, with the session delta it implies.
struct Fitted {
    text: String,
    next: Option<State>,
    /// The canonical pack and its sha (what a pin stores).
    canonical: String,
    sha: String,
    /// The legend the text carries (the minimal one when the budget cannot hold the one asked for).
    legend: Legend,
}

/// Packs and renders until the output fits the budget: each round packs with less room by what
/// the last one overshot.
fn fit(
    conn: &Connection,
    req: &Request<'_>,
    g: &Gathered,
    layout: &envelope::Layout,
    turn: Option<&Turn>,
    sid: Option<&str>,
) -> Result<Fitted> {
    let o = req.options;
    let worst = turn.map(|t| session::worst_delta(&t.state, &t.status));
    // The first page's cursor: the same for every round, shown only when the pack is partial.
    let t = crate::timing::phase("render: cursor, reserve");
    let first_page = context::fitting_cursor(conn, req, g)?;
    let (render_with, reserve) = context::legend_and_reserve(
        conn,
        req,
        g,
        layout,
        context::Shown { first_page: first_page.as_deref(), delta: worst.as_ref(), session_id: sid },
    )?;
    drop(t);
    let mut budget = g.budget;
    for _ in 0..FIT_ROUNDS {
        let t = crate::timing::phase("render: pack");
        let pack = context::pack_at(g, budget, &render_with, reserve);
        drop(t);
        let refs: Vec<(String, Option<f64>)> =
            pack.items.iter().map(|p| (p.item.r#ref.clone(), p.item.relevance)).collect();
        let advanced = turn.map(|t| session::advance(&t.state, &refs, pack.used, &g.terms, &t.status));
        let delta = advanced.as_ref().map(|a| &a.1);
        let shown = shown_items(&pack, delta, o.send);
        let cursor = if pack.excluded.is_empty() { None } else { first_page.clone() };
        let (canonical, sha) = envelope::canonical(g.profile.name, &pack, g.pending);
        let pin = o.pin.then(|| json!({"sha": sha, "bytes": canonical.len()}));
        let parts = Parts {
            model: g.profile.name,
            pack: &pack,
            shown,
            pending: g.pending,
            follow_ups: context::follow_ups(&pack, o.audit),
            cursor,
            delta,
            session_id: sid,
            at: time::format(o.now),
            sha: sha.clone(),
            pin,
            warnings: context::warnings(g),
        };
        let t = crate::timing::phase("render: envelope");
        let r = render_with.render(&parts);
        drop(t);
        if r.used <= g.budget {
            let next = advanced.map(|(mut next, _)| {
                if let Some(last) = next.trajectory.last_mut() {
                    last.tokens = r.used;
                }
                next
            });
            return Ok(Fitted { text: r.text, next, canonical, sha, legend: render_with.legend });
        }
        if pack.items.is_empty() {
            return Err(too_small(g.budget, r.used, o, sid));
        }
        // Shrink from what the pack used, not from the room it had: a pack that stopped short of
        // its room would otherwise come back unchanged from a room cut by less than that gap.
        budget = budget.min(pack.used).saturating_sub(r.used - g.budget).min(budget.saturating_sub(1));
    }
    Err(Error::Budget("could not fit the output to token_budget; raise it".into()))
}

/// Which packed items the output shows: with `send: delta` in a session, only those new to it.
fn shown_items(pack: &crate::pack::Pack, delta: Option<&session::Delta>, send: Send) -> Vec<bool> {
    match (delta, send) {
        (Some(d), Send::Delta) => {
            let new: std::collections::HashSet<&str> = d.new.iter().map(|n| n.0.as_str()).collect();
            pack.items.iter().map(|p| new.contains(p.item.r#ref.as_str())).collect()
        }
        _ => vec![true; pack.items.len()],
    }
}

/// The error for a budget that cannot hold the output even with no memory in it (`used` tokens).
fn too_small(budget: usize, used: usize, o: &options::Options, sid: Option<&str>) -> Error {
    Error::Budget(format!(
        "token_budget {} is too small for this output: {} tokens before any memory (legend, framing{}{}); \
             raise token_budget{}",
        budget,
        used,
        if o.audit { ", audit fields" } else { "" },
        if sid.is_some() { ", session delta" } else { "" },
        if o.full_legend { " or use the compact legend" } else { "" }
    ))
}

/// Fails, naming the fix, when the session state or pin that a call is about to write would not last
/// on this connection (see [`store::unwritable`]): never answer as if a turn were stored when it is not.
fn writable(conn: &Connection, sid: Option<&str>) -> Result<()> {
    let Some(why) = store::unwritable(conn) else { return Ok(()) };
    let what = sid.map_or("the pin (pin: true)".to_string(), |s| format!("session {s:?}"));
    Err(Error::Unwritable(format!(
        "{what} cannot be stored here: {why}; run session turns and pins on the primary (a writable \
         database), or leave session_id and pin out on a replica"
    )))
}

/// Renders a request's pack in the requested format, running the session turn and the pin if asked.
pub fn render(conn: &Connection, req: &Request<'_>, g: &Gathered, sid: Option<&str>) -> Result<String> {
    let o = req.options;
    if o.pin || sid.is_some() {
        writable(conn, sid)?;
    }
    let kind = if o.full_legend { Legend::Full } else { Legend::Compact };
    let Some(sid) = sid else {
        let layout = context::layout(o, g.counter, false, kind);
        let fitted = fit(conn, req, g, &layout, None, None)?;
        pin(conn, req, &fitted)?;
        return Ok(fitted.text);
    };
    let legend_id = envelope::legend_id(kind);
    let h = time::julian(o.horizon());
    // Retrieval's candidates are eligible at this horizon: the turn need not read them again.
    let live: std::collections::HashSet<&str> = g.items.iter().map(|it| it.r#ref.as_str()).collect();
    let mut last = super::conn::take_last_turn(conn);
    let out = session::run_turn(conn, sid, &o.scope, h, &time::format(o.now), &live, &mut last, |turn| {
        let legend = if turn.state.legend.as_deref() == Some(legend_id.as_str()) { Legend::Held } else { kind };
        let layout = context::layout(o, g.counter, true, legend);
        let fitted = fit(conn, req, g, &layout, Some(turn), Some(sid))?;
        // The pin first: it is idempotent (the same sha always stores the same bytes), so when the
        // session turn fails after it, nothing observable is half-done; the session turn is the last write.
        pin(conn, req, &fitted)?;
        let sent = fitted.legend;
        let Some(mut next) = fitted.next else { return Err(Error::Internal("session turn was not computed".into())) };
        // The session holds the legend once it was sent: not the minimal one, which lacks the descriptions.
        if o.format == Format::Smp && sent != Legend::Minimal {
            next.legend = Some(legend_id.clone());
        }
        Ok((fitted.text, next))
    });
    super::conn::keep_last_turn(conn, last);
    out
}

/// Stores the pin of a pack when the call asked for one.
fn pin(conn: &Connection, req: &Request<'_>, fitted: &Fitted) -> Result<()> {
    if !req.options.pin {
        return Ok(());
    }
    store::put_pin(conn, &fitted.sha, &fitted.canonical, &time::format(req.options.now))?;
    Ok(())
}

/// `cmp_context(...)`.
pub fn context(ctx: &Context<'_>) -> Result<String> {
    args::arity(ctx, 1, 5, "1 to 5 arguments (task [, model [, token_budget [, session_id [, options]]]])")?;
    let task = args::opt_text(ctx, 0, "task")?.unwrap_or_default();
    let model = args::opt_text(ctx, 1, "model")?;
    let budget = args::opt_int(ctx, 2, "token_budget")?;
    let sid = session_id(args::opt_text(ctx, 3, "session_id")?)?;
    let opts = args::opt_text(ctx, 4, "options")?;
    let o = options::parse(opts.as_deref(), OPTIONS)?;
    if o.send == Send::Delta && sid.is_none() {
        let msg = "send \"delta\" needs a session_id (the delta is relative to what the session was served)";
        return Err(Error::usage(msg));
    }
    let db = unsafe { ctx.get_connection()?.handle() };
    // SAFETY: the handle of the connection this function runs on, open for the whole call.
    unsafe { super::conn::with(db, |conn| context_on(conn, &task, model.as_deref(), budget, sid.as_deref(), &o)) }?
}

/// `cmp_context` on the connection `conn`.
fn context_on(
    conn: &Connection,
    task: &str,
    model: Option<&str>,
    budget: Option<i64>,
    sid: Option<&str>,
    o: &options::Options,
) -> Result<String> {
    super::ready(conn)?;
    let req = Request { task, model, budget, options: o };
    let g = context::gather(conn, &req)?;
    let _t = crate::timing::phase("render: pack, fit, session turn");
    render(conn, &req, &g, sid)
}

/// The `cmp_items` table-valued function.
pub struct Items;

impl TableFn for Items {
    const NAME: &'static str = "cmp_items";
    const SCHEMA: &'static CStr = c"CREATE TABLE x(ref, content, layer, relevance, relevance_basis, why, source_url, confidence, occurred_at, entities, task HIDDEN, model HIDDEN, token_budget HIDDEN, options HIDDEN)";
    const COLUMNS: c_int = 10;
    const ARGS: usize = 4;

    fn rows(conn: &Connection, a: &[Option<ValueRef<'_>>]) -> Result<Vec<Vec<SqlValue>>> {
        let task = match a[0] {
            Some(v) => args::text_value("task", v)?.unwrap_or_default(),
            None => return Err(Error::usage("task is required: SELECT * FROM cmp_items('your task')")),
        };
        let model = a[1].map(|v| args::text_value("model", v)).transpose()?.flatten();
        let budget = a[2].map(|v| args::int_value("token_budget", v)).transpose()?.flatten();
        let opts = a[3].map(|v| args::text_value("options", v)).transpose()?.flatten();
        let o = options::parse(opts.as_deref(), ITEMS_OPTIONS)?;
        super::ready(conn)?;
        let req = Request { task: &task, model: model.as_deref(), budget, options: &o };
        let built = context::build(conn, &req)?;
        Ok(built.pack.items.iter().map(|p| object_row(&envelope::memory_object(p))).collect())
    }
}

/// A MemoryObject as SQL values, in field order; objects and arrays as JSON text.
pub fn object_row(obj: &Value) -> Vec<SqlValue> {
    envelope::ITEM_FIELDS
        .iter()
        .map(|(k, _, _)| match &obj[*k] {
            Value::Null => SqlValue::Null,
            Value::String(s) => SqlValue::Text(s.clone()),
            Value::Number(n) => n.as_i64().map_or_else(|| SqlValue::Real(n.as_f64().unwrap_or(0.0)), SqlValue::Integer),
            Value::Bool(b) => SqlValue::Integer(i64::from(*b)),
            other => SqlValue::Text(other.to_string()),
        })
        .collect()
}
