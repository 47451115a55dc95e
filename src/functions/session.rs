//! `cmp_session(session_id [, options])` and `cmp_session_reset(session_id [, options])`.

use super::args;
use super::context::session_id;
use crate::error::{Error, Result};
use crate::options;
use crate::store;
use rusqlite::functions::Context;
use serde_json::json;

/// Options both accept.
pub const OPTIONS: &[&str] = &["scope"];

fn common(ctx: &Context<'_>) -> Result<(String, options::Options)> {
    args::arity(ctx, 1, 2, "1 or 2 arguments (session_id [, options])")?;
    let Some(sid) = args::opt_text(ctx, 0, "session_id")? else {
        return Err(Error::invalid("session_id", "must not be NULL"));
    };
    if sid.is_empty() {
        return Err(Error::invalid("session_id", "must be a non-empty string"));
    }
    let sid = session_id(Some(sid))?.unwrap_or_default();
    let o = options::parse(args::opt_text(ctx, 1, "options")?.as_deref(), OPTIONS)?;
    Ok((sid, o))
}

/// `cmp_session(session_id)`: the state as JSON (`turn`, `cursor`, `known`, `trajectory`, `centroid`).
pub fn session(ctx: &Context<'_>) -> Result<String> {
    let (sid, o) = common(ctx)?;
    let conn = unsafe { ctx.get_connection() }?;
    super::require_schema(&conn)?;
    let state = crate::session::shown(&conn, &sid, &o.scope)?.unwrap_or_default();
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
    let (sid, o) = common(ctx)?;
    let conn = unsafe { ctx.get_connection() }?;
    super::require_schema(&conn)?;
    if let Some(why) = store::unwritable(&conn) {
        return Err(Error::Unwritable(format!("session {sid:?} cannot be reset here: {why}; reset it on the primary")));
    }
    Ok(store::reset_session(&conn, &sid, &o.scope).map(i64::from)?)
}
