//! SQL adapters: parse arguments, call the core, serialise. One file per family.

pub mod admin;
pub mod args;
pub mod conn;
pub mod context;
pub mod embed;
pub mod expand;
pub mod profile;
pub mod query;
pub mod search;
pub mod session;
pub mod table;

pub use crate::store::schema::require as require_schema;

/// The first step of every read of memories: the schema is current, and the rows written since the
/// last read are indexed where this connection can write ([`crate::store::pending::settle`]).
pub fn ready(conn: &rusqlite::Connection) -> crate::error::Result<()> {
    require_schema(conn)?;
    crate::store::pending::settle(conn)
}
