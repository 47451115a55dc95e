//! SQL adapters: parse arguments, call the core, serialise. One file per family.

pub mod admin;
pub mod args;
pub mod conn;
pub mod context;
pub mod expand;
pub mod profile;
pub mod query;
pub mod search;
pub mod session;
pub mod table;

pub use crate::store::schema::require as require_schema;
