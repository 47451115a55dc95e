//! Every SQL statement cmp runs, one file per table: [`schema`] (`cmp_meta` and the schema),
//! [`memories`] (`cmp_memories`), [`entities`] (`cmp_entities`, `cmp_memory_entities`), [`pending`]
//! (`cmp_pending`, the index queue, and the index writes it defers), [`tasks`] (`cmp_tasks`),
//! [`sessions`] (`cmp_sessions`, `cmp_pins`); [`eligibility`], the one rule for which memory
//! rows a read may see; and [`bm25`], the FTS5 ranking function cmp's full-text reads use. The rest of the crate works on the plain structs defined here.
//!
//! Row limits are written into the SQL text, never bound: SQLite reads a bound LIMIT when it plans
//! the statement, so binding one again makes it prepare the whole statement again before each run.

pub mod bm25;
pub mod eligibility;
pub mod entities;
pub mod memories;
pub mod pending;
pub mod schema;
pub mod sessions;
pub mod tasks;

pub use eligibility::{Reader, ELIGIBLE, ELIGIBLE_ANY_VERSION, VISIBLE};
pub use memories::{
    live_head, memory_from_row, memory_from_row_at, parse_entities, remember, Kind, Memory, NewMemory, RememberError,
    Remembered, MEMORY_COLS,
};
pub use schema::{init, initialized, meta, unwritable, write_mark, WriteMark, SCHEMA_SQL, SCHEMA_VERSION};
pub use sessions::{any_superseded, load_session, put_pin, ref_status, reset_session, save_session, Status};
