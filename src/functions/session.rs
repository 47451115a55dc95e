//! `cmp_session(session_id [, options])` and `cmp_session_reset(session_id [, options])`.

use super::args;
use super::context::session_id;
use crate::error::{fail, CmpError, Result};
use crate::options;
use crate::session::State;
use crate::store;
use rusqlite::functions::Context;
use serde_json::json;

/// Options both accept.
pub const OPTIONS: &[&str] = &["scope"];

fn common(ctx: &Context<'_>, f: &str) -> Result<(String, options::Options)> {
    args::arity(ctx, f, 1, 2, "1 or 2 arguments (session_id [, options])")?;
    let Some(sid) = session_id(f, args::opt_text(ctx, f, 0, "session_id")?)? else {
        return fail(f, "session_id must not be NULL");
    };
    let o = options::parse(f, args::opt_text(ctx, f, 1, "options")?.as_deref(), OPTIONS)?;
    Ok((sid, o))
}

/// `cmp_session(session_id)`: the state as JSON (`turn`, `cursor`, `known`, `trajectory`, `centroid`).
pub fn session(ctx: &Context<'_>) -> Result<String> {
    let f = "cmp_session";
    let (sid, o) = common(ctx, f)?;
    let conn = unsafe { ctx.get_connection() }.map_err(|e| CmpError::sql(f, e))?;
    super::require_schema(&conn, f)?;
    let state: State = match store::load_session(&conn, &sid, &o.scope).map_err(|e| CmpError::sql(f, e))? {
        Some(s) => serde_json::from_str(&s)
            .map_err(|e| CmpError::new(f, format!("session {sid:?} has corrupt state ({e})")))?,
        None => State::default(),
    };
    Ok(json!({
        "session_id": sid,
        "scope": o.scope,
        "turn": state.turn,
        "cursor": state.cursor.to_string(),
        "known": state.known,
        "trajectory": state.trajectory,
        "centroid": state.centroid,
    })
    .to_string())
}

/// `cmp_session_reset(session_id)`: forgets the session; 1 if it existed, else 0.
pub fn reset(ctx: &Context<'_>) -> Result<i64> {
    let f = "cmp_session_reset";
    let (sid, o) = common(ctx, f)?;
    let conn = unsafe { ctx.get_connection() }.map_err(|e| CmpError::sql(f, e))?;
    super::require_schema(&conn, f)?;
    if let Some(why) = store::unwritable(&conn) {
        return fail(f, format!("session {sid:?} cannot be reset here: {why}; reset it on the primary"));
    }
    store::reset_session(&conn, &sid, &o.scope).map(i64::from).map_err(|e| CmpError::sql(f, e))
}
