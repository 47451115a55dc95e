//! cmp_init, cmp_flush, cmp_version, cmp_debug, and `cmp_bm25` outside a full-text query.

use crate::error::Result;
use crate::store;
use rusqlite::functions::Context;

/// Crate version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// Git commit the library was built from ("unknown" outside a checkout).
pub const GIT_COMMIT: &str = env!("CMP_GIT_COMMIT");

/// `cmp_init()`: creates or upgrades the schema; returns the schema version.
pub fn init(ctx: &Context<'_>) -> Result<i64> {
    super::args::arity(ctx, 0, 0, "no arguments")?;
    let conn = unsafe { ctx.get_connection() }?;
    store::init(&conn)
}

/// `cmp_flush()`: indexes every row written since the last read now (reads do it themselves, see
/// [`store::pending`]); returns how many rows it indexed.
pub fn flush(ctx: &Context<'_>) -> Result<i64> {
    super::args::arity(ctx, 0, 0, "no arguments")?;
    let conn = unsafe { ctx.get_connection() }?;
    super::require_schema(&conn)?;
    if let Some(why) = store::unwritable(&conn) {
        return Err(crate::error::Error::Unwritable(format!("the queued rows cannot be indexed here: {why}")));
    }
    Ok(store::pending::flush(&conn)? as i64)
}

/// `cmp_bm25(...)` anywhere but as the ranking function of a query on cmp's full-text indexes (there
/// FTS5 runs [`store::bm25`] instead of this): an error that says how it is used.
pub fn bm25(_ctx: &Context<'_>) -> Result<i64> {
    Err(crate::error::Error::Usage(
        "ranks a match of cmp's full-text indexes only: cmp_bm25(cmp_memories_fts, 0) or \
         cmp_bm25(cmp_memories_ngram, 1) in a query that MATCHes that index"
            .into(),
    ))
}

/// `cmp_version()`.
pub fn version(ctx: &Context<'_>) -> Result<String> {
    super::args::arity(ctx, 0, 0, "no arguments")?;
    Ok(VERSION.to_string())
}

/// `cmp_debug()`: version, commit, the SQLite it runs on, FTS5 presence, schema version.
pub fn debug(ctx: &Context<'_>) -> Result<String> {
    super::args::arity(ctx, 0, 0, "no arguments")?;
    let conn = unsafe { ctx.get_connection() }?;
    let sqlite = store::schema::sqlite_version(&conn)?;
    let schema = store::meta(&conn, "schema_version");
    Ok(format!(
        "cmp {VERSION}\ncommit {GIT_COMMIT}\nsqlite {sqlite}\nfts5 {}\nschema {}",
        if store::schema::has_fts5(&conn).unwrap_or(false) { "yes" } else { "no" },
        schema.as_deref().unwrap_or("none (run SELECT cmp_init())")
    ))
}
