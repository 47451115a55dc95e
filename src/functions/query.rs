//! `cmp_query(mql)`: parses the MQL (or a cursor) and runs it ([`crate::query`]).

use super::args;
use crate::cursor;
use crate::error::{fail, CmpError, Result};
use crate::mql;
use crate::query::{resume, run};
use rusqlite::functions::Context;
use serde_json::Value;

/// `cmp_query(mql)`. `{"cursor": "mqlc:…"}` resumes a cursor.
pub fn query(ctx: &Context<'_>) -> Result<String> {
    let f = "cmp_query";
    args::arity(ctx, f, 1, 1, "1 argument (mql JSON)")?;
    let Some(text) = args::opt_text(ctx, f, 0, "mql")? else {
        return fail(f, "mql must be a JSON object, got NULL");
    };
    let conn = unsafe { ctx.get_connection() }.map_err(|e| CmpError::sql(f, e))?;
    if let Ok(Value::Object(map)) = serde_json::from_str::<Value>(&text) {
        if let Some(c) = map.get("cursor") {
            if map.len() != 1 {
                return fail(f, "cursor must be given alone: {\"cursor\": \"mqlc:…\"}");
            }
            let Some(c) = c.as_str() else { return fail(f, "cursor must be a string") };
            super::require_schema(&conn, f)?;
            let (prefix, payload) = cursor::verify(&conn, f, c)?;
            if prefix != cursor::MQL_PREFIX {
                return fail(f, "cursor is a pack cursor; page it with cmp_expand(cursor, 'more')");
            }
            return Ok(resume(&conn, f, &payload)?.to_string());
        }
    }
    let m = mql::parse(f, &text)?;
    // Fix the clock at the precision a cursor stores, so every page sees the same store.
    let m = mql::from_map(f, m.to_value().as_object().unwrap_or(&serde_json::Map::new()))?;
    super::require_schema(&conn, f)?;
    Ok(run(&conn, f, &m)?.to_string())
}
