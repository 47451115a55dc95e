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

use crate::error::{fail, Result};
use rusqlite::Connection;

/// Errors clearly when `cmp_init()` has not run on this database.
pub fn require_schema(conn: &Connection, func: &str) -> Result<()> {
    if crate::store::initialized(conn) {
        Ok(())
    } else {
        fail(func, "the cmp schema is missing; run SELECT cmp_init() first")
    }
}
