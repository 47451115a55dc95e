//! # cmp — the Contextual Memory Protocol inside SQLite
//!
//! An SQLite extension that turns rows of memories into a small, cited, model-calibrated context
//! pack for a language model. Rust programs call [`register`] on a connection; everything else
//! loads the built library (`.load ./target/release/libcmp`) and gets the same SQL functions.
//!
//! ```
//! let conn = rusqlite::Connection::open_in_memory()?;
//! cmp::register(&conn)?;
//! conn.query_row("SELECT cmp_init()", [], |_| Ok(()))?;
//! conn.execute("INSERT INTO cmp_memories(content, entities) VALUES ('Atlas ships on Friday', '[\"Atlas\"]')", [])?;
//! let n: i64 = conn.query_row("SELECT count(*) FROM cmp_search('when does atlas ship?')", [], |r| r.get(0))?;
//! assert_eq!(n, 1);
//! # Ok::<(), rusqlite::Error>(())
//! ```
#![deny(missing_docs)]

pub mod context;
pub mod cursor;
pub mod embed;
pub mod envelope;
pub mod error;
pub mod expand;
pub mod functions;
pub mod mql;
pub mod options;
pub mod pack;
pub mod profile;
pub mod query;
pub mod retrieve;
pub mod session;
pub mod store;
pub mod text;
pub mod time;
pub mod timing;
pub mod tokens;

use functions::table::Tab;
use rusqlite::functions::{Context, FunctionFlags};
use rusqlite::vtab::Module;
use rusqlite::Connection;

/// Flags of a pure function: same arguments, same result, safe anywhere.
const PURE: FunctionFlags =
    FunctionFlags::SQLITE_UTF8.union(FunctionFlags::SQLITE_DETERMINISTIC).union(FunctionFlags::SQLITE_INNOCUOUS);
/// Flags of a function that reads or writes the database: only from top-level SQL.
const STATEFUL: FunctionFlags = FunctionFlags::SQLITE_UTF8.union(FunctionFlags::SQLITE_DIRECTONLY);

type Scalar = fn(&Context<'_>) -> error::Result<rusqlite::types::Value>;

macro_rules! scalar {
    ($f:path) => {{
        fn adapter(ctx: &Context<'_>) -> error::Result<rusqlite::types::Value> {
            $f(ctx).map(Into::into)
        }
        adapter as Scalar
    }};
}

/// The SQL scalar functions: (name, number of arguments (-1 = variadic), flags, adapter).
fn scalars() -> Vec<(&'static str, i32, FunctionFlags, Scalar)> {
    vec![
        ("cmp_version", -1, PURE, scalar!(functions::admin::version)),
        ("cmp_bm25", -1, PURE, scalar!(functions::admin::bm25)),
        ("cmp_debug", -1, STATEFUL, scalar!(functions::admin::debug)),
        ("cmp_init", -1, STATEFUL, scalar!(functions::admin::init)),
        ("cmp_flush", -1, STATEFUL, scalar!(functions::admin::flush)),
        ("cmp_profile", -1, PURE, scalar!(functions::profile::profile)),
        ("cmp_tokens", -1, PURE, scalar!(functions::profile::tokens)),
        ("cmp_embed", -1, STATEFUL, scalar!(functions::embed::embed)),
        ("cmp_context", -1, STATEFUL, scalar!(functions::context::context)),
        ("cmp_query", -1, STATEFUL, scalar!(functions::query::query)),
        ("cmp_expand", -1, STATEFUL, scalar!(functions::expand::expand)),
        ("cmp_session", -1, STATEFUL, scalar!(functions::session::session)),
        ("cmp_session_reset", -1, STATEFUL, scalar!(functions::session::reset)),
    ]
}

/// Names of every SQL function and table-valued function cmp registers (for docs and tests).
pub fn function_names() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = scalars().into_iter().map(|s| s.0).collect();
    v.extend(["cmp_search", "cmp_items"]);
    v
}

/// Registers every cmp function on `conn`. Fails with a clear message when this SQLite lacks FTS5.
pub fn register(conn: &Connection) -> rusqlite::Result<()> {
    if !store::schema::has_fts5(conn).map_err(|e| error::Error::Sql(e).in_function("cmp"))? {
        let why = "this SQLite was built without FTS5, which cmp needs; use a build with SQLITE_ENABLE_FTS5";
        return Err(error::Error::Unsupported(why.into()).in_function("cmp").into());
    }
    // The SQL boundary: the function's name is added to its errors here, once, and a panic becomes
    // an error of the function (rusqlite's own catch would say only "unwinding panic").
    for (name, n, flags, f) in scalars() {
        conn.create_scalar_function(name, n, flags, move |ctx| {
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(ctx))) {
                Ok(r) => r.map_err(|e| e.in_function(name).into()),
                Err(_) => Err(error::Error::panicked().in_function(name).into()),
            }
        })?;
    }
    // After the scalar `cmp_bm25`: FTS5 then finds the name taken and overloads it inside its
    // queries only, and the scalar's error explains any other use.
    store::bm25::register(conn)?;
    const SEARCH: Module<Tab<functions::search::Search>> = Module::eponymous_only_module();
    conn.create_module(c"cmp_search", &SEARCH, None)?;
    const ITEMS: Module<Tab<functions::context::Items>> = Module::eponymous_only_module();
    conn.create_module(c"cmp_items", &ITEMS, None)?;
    Ok(())
}

/// Entry point for `.load libcmp` (SQLite derives `sqlite3_cmp_init` from the file name).
///
/// # Safety
/// Called by SQLite with valid pointers.
#[cfg(feature = "loadable_extension")]
#[no_mangle]
pub unsafe extern "C" fn sqlite3_cmp_init(
    db: *mut rusqlite::ffi::sqlite3,
    pz_err_msg: *mut *mut std::os::raw::c_char,
    p_api: *mut rusqlite::ffi::sqlite3_api_routines,
) -> std::os::raw::c_int {
    Connection::extension_init2(db, pz_err_msg, p_api, |conn| register(&conn).map(|_| false))
}
