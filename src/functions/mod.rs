//! SQL adapters: parse arguments, call the core, serialise. One file per family.

pub mod admin;
pub mod args;
pub mod context;
pub mod expand;
pub mod profile;
pub mod query;
pub mod search;
pub mod session;
pub mod table;

use crate::error::{Error, Result};
use rusqlite::Connection;

/// Errors clearly when `cmp_init()` has not run on this database, or ran with an older version.
pub fn require_schema(conn: &Connection) -> Result<()> {
    let msg = match crate::store::meta(conn, "schema_version").and_then(|v| v.parse::<i64>().ok()) {
        Some(v) if v == crate::store::SCHEMA_VERSION => return Ok(()),
        Some(v) if v < crate::store::SCHEMA_VERSION => format!(
            "the cmp schema is version {v}; run SELECT cmp_init() to upgrade it to {}",
            crate::store::SCHEMA_VERSION
        ),
        Some(v) => format!("the cmp schema is version {v}, newer than this extension's; upgrade cmp"),
        None => "the cmp schema is missing; run SELECT cmp_init() first".into(),
    };
    Err(Error::Schema(msg))
}
