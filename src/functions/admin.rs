//! cmp_init, cmp_version, cmp_debug.

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

/// `cmp_version()`.
pub fn version(_ctx: &Context<'_>) -> Result<String> {
    Ok(VERSION.to_string())
}

/// `cmp_debug()`: version, commit, the SQLite it runs on, FTS5 presence, schema version.
pub fn debug(ctx: &Context<'_>) -> Result<String> {
    let conn = unsafe { ctx.get_connection() }?;
    let sqlite = store::schema::sqlite_version(&conn)?;
    let schema = store::meta(&conn, "schema_version");
    Ok(format!(
        "cmp {VERSION}\ncommit {GIT_COMMIT}\nsqlite {sqlite}\nfts5 {}\nschema {}",
        if store::schema::has_fts5(&conn) { "yes" } else { "no" },
        schema.as_deref().unwrap_or("none (run SELECT cmp_init())")
    ))
}
