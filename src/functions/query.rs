//! `cmp_query(mql)`: parses the MQL (or a cursor) and runs it ([`crate::query`]).

use super::args;
use crate::cursor;
use crate::error::{Error, Result};
use crate::mql;
use crate::query::{resume, run};
use rusqlite::functions::Context;

/// `cmp_query(mql)`. `{"cursor": "mqlc:…"}` resumes a cursor.
pub fn query(ctx: &Context<'_>) -> Result<String> {
    args::arity(ctx, 1, 1, "1 argument (mql JSON)")?;
    let Some(text) = args::opt_text(ctx, 0, "mql")? else {
        return Err(Error::invalid("mql", "must be a JSON object, got NULL"));
    };
    let conn = unsafe { ctx.get_connection() }?;
    let map = crate::options::json_object(&text, "mql")?;
    if let Some(c) = map.get("cursor") {
        if map.len() != 1 {
            return Err(Error::usage("cursor must be given alone: {\"cursor\": \"mqlc:…\"}"));
        }
        let Some(c) = c.as_str() else { return Err(Error::invalid("cursor", "must be a string")) };
        super::ready(&conn)?;
        let (prefix, payload) = cursor::verify(&conn, c)?;
        if prefix != cursor::MQL_PREFIX {
            return Err(Error::Cursor("cursor is a pack cursor; page it with cmp_expand(cursor, 'more')".into()));
        }
        return Ok(resume(&conn, &payload)?.to_string());
    }
    let m = mql::from_map(&map)?;
    // Fix the clock at the precision a cursor stores, so every page sees the same store.
    let m = mql::from_map(m.to_value().as_object().unwrap_or(&serde_json::Map::new()))?;
    super::ready(&conn)?;
    Ok(run(&conn, &m)?.to_string())
}
