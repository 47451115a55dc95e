//! `cmp_expand(ref [, direction [, options]])`: parses the arguments, checks a cursor's scope and
//! calls [`crate::expand`] (document, neighbors) or resumes the cursor (more).

use super::args;
use crate::cursor;
use crate::error::{Error, Result};
use crate::expand::{document, neighbors, pack_page};
use crate::options;
use crate::query::resume;

/// Options `cmp_expand` accepts.
pub const OPTIONS: &[&str] = &["scope", "now"];

/// `cmp_expand(ref [, direction [, options]])`.
pub fn expand(ctx: &rusqlite::functions::Context<'_>) -> Result<String> {
    args::arity(ctx, 1, 3, "1 to 3 arguments (ref [, direction [, options]])")?;
    let Some(r) = args::opt_text(ctx, 0, "ref")? else { return Err(Error::invalid("ref", "must not be NULL")) };
    let direction = args::opt_text(ctx, 1, "direction")?.unwrap_or_else(|| "document".into());
    let mut o = options::parse(args::opt_text(ctx, 2, "options")?.as_deref(), OPTIONS)?;
    let conn = unsafe { ctx.get_connection() }?;
    let v = match direction.as_str() {
        "document" => {
            super::ready(&conn)?;
            document(&conn, &r, &o)?
        }
        "neighbors" => {
            super::ready(&conn)?;
            neighbors(&conn, &r, &o)?
        }
        "more" => {
            super::ready(&conn)?;
            let explicit_scope = o.scope_given;
            let (prefix, payload) = cursor::verify(&conn, &r)?;
            if prefix == cursor::MQL_PREFIX {
                let cursor_scope = payload["mql"]["scope"].as_str().unwrap_or("default");
                if explicit_scope && cursor_scope != o.scope {
                    return Err(Error::Cursor("cursor was issued for another scope".into()));
                }
                resume(&conn, &payload)?
            } else {
                if !explicit_scope {
                    o.scope = payload["scope"].as_str().unwrap_or("default").to_string();
                }
                pack_page(&conn, &payload, &o)?
            }
        }
        other => {
            return Err(Error::invalid("direction", format!("must be one of document, neighbors, more, got {other:?}")))
        }
    };
    Ok(v.to_string())
}
