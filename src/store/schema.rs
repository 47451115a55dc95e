//! The `cmp_meta` table and the schema: creating, upgrading and repairing it, its version, whether this
//! connection can write at all, and whether the database changed since a moment this connection
//! saw ([`WriteMark`]).

use crate::error::{Error, Result};
use rusqlite::{Connection, OptionalExtension};

/// The schema, applied by `cmp_init()`.
pub const SCHEMA_SQL: &str = include_str!("../../sql/schema.sql");
/// Version written by this build. History: 1 = memories, tasks, FTS, entities, meta;
/// 2 = adds sessions, pins and the recency index (all additive: schema.sql upgrades v1 in place);
/// 3 = adds the character-pair index of spaceless scripts (`cmp_memories_ngram`, filled from the
/// existing rows on upgrade); 4 = that index's triggers skip rows whose text is all ASCII; 5 = the
/// index queue (`cmp_pending`, [`super::pending`]): writes queue rows, the extension indexes them;
/// 6 = a change of the entity set draws a random `entity_gen` instead of counting (see
/// `sql/schema.sql`); 7 = a row a REPLACE is about to delete is unindexed first (two `BEFORE`
/// triggers, additive); 8 = triggers write no full-text index: a changed, replaced or deleted row's
/// indexed text waits in `cmp_stale` and its rid in the queue, and the extension removes its entries
/// (a write that fails then leaves no full-text write behind, and `trusted_schema = OFF` allows writes).
pub const SCHEMA_VERSION: i64 = 8;

/// The oldest version this build reads without `cmp_init()`: versions 6 to 8 only replaced or added
/// triggers, views and the `cmp_stale` table, so a version-5 store works as it is (with its
/// gazetteer counter, its triggers that unindex at once, and without the REPLACE triggers) until
/// `cmp_init()` upgrades it.
const OLDEST_READ: i64 = 5;

/// Objects whose definition changed after they were created (in versions 4 to 8), and every other
/// view and trigger, so that an upgraded store holds the definitions [`changed`] compares with;
/// `SCHEMA_SQL` creates them again. Every row of an older store is indexed or queued, so nothing is
/// stale.
const REPLACED: &str = "DROP TRIGGER IF EXISTS main.cmp_memories_ai; DROP TRIGGER IF EXISTS main.cmp_memories_ad;
     DROP TRIGGER IF EXISTS main.cmp_memories_au; DROP TRIGGER IF EXISTS main.cmp_memories_au_text;
     DROP TRIGGER IF EXISTS main.cmp_memories_au_entities; DROP TRIGGER IF EXISTS main.cmp_memories_bi_conflict;
     DROP TRIGGER IF EXISTS main.cmp_memories_bu_conflict;
     DROP TRIGGER IF EXISTS main.cmp_memories_ngram_ai; DROP TRIGGER IF EXISTS main.cmp_memories_ngram_bd;
     DROP TRIGGER IF EXISTS main.cmp_memories_ngram_bu; DROP TRIGGER IF EXISTS main.cmp_memories_ngram_au;
     DROP VIEW IF EXISTS main.cmp_memories_indexable; DROP VIEW IF EXISTS main.cmp_memories_grams;
     DROP TRIGGER IF EXISTS main.cmp_entities_ai; DROP TRIGGER IF EXISTS main.cmp_entities_ad;
     DROP TRIGGER IF EXISTS main.cmp_memories_ai_id; DROP TRIGGER IF EXISTS main.cmp_memories_au_id;
     DROP TRIGGER IF EXISTS main.cmp_tasks_ai; DROP VIEW IF EXISTS main.cmp_memories_indexed;";

/// Creates or upgrades the schema. Idempotent.
pub fn init(conn: &Connection) -> Result<i64> {
    let has_meta: bool = conn
        .query_row("SELECT count(*) FROM main.sqlite_master WHERE type = 'table' AND name = 'cmp_meta'", [], |r| {
            r.get::<_, i64>(0)
        })
        .map(|n| n > 0)?;
    let current: Option<i64> = if has_meta {
        conn.query_row("SELECT CAST(value AS INTEGER) FROM main.cmp_meta WHERE key = 'schema_version'", [], |r| {
            r.get(0)
        })
        .optional()?
    } else {
        None
    };
    if let Some(v) = current {
        if v > SCHEMA_VERSION {
            return Err(Error::Schema(format!(
                "database schema version {v} is newer than this extension's ({SCHEMA_VERSION}); upgrade cmp"
            )));
        }
        if v == SCHEMA_VERSION {
            return repair(conn);
        }
    }
    if let Some(why) = unwritable(conn) {
        let msg =
            format!("the schema needs creating or upgrading, which cannot be done here: {why}; run it on the primary");
        return Err(Error::Unwritable(msg));
    }
    // Versions 4 to 8 changed triggers and views: replace the older ones.
    let replace = if current.is_some_and(|v| v < SCHEMA_VERSION) { REPLACED } else { "" };
    all_or_nothing(conn, "cmp_init", Lock::Wait, || {
        conn.execute_batch(replace)?;
        conn.execute_batch(SCHEMA_SQL)?;
        // The character-pair index arrived in version 3: index the rows written before it.
        if current.is_some_and(|v| v < 3) {
            conn.execute_batch("INSERT INTO main.cmp_memories_ngram(cmp_memories_ngram) VALUES ('rebuild')")?;
        }
        conn.execute(
            "INSERT INTO main.cmp_meta(key, value) VALUES ('schema_version', ?1)
                 ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            [SCHEMA_VERSION.to_string()],
        )
    })?;
    Ok(SCHEMA_VERSION)
}

/// How a write that must be all or nothing takes the write lock when another connection holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lock {
    /// Wait as the connection's busy timeout says: outside a transaction the write runs in
    /// `BEGIN IMMEDIATE`, which takes the lock first. (A transaction that reads first cannot wait
    /// for the lock when it then writes: SQLite answers "database is locked" at once.)
    Wait,
    /// Do not wait: the write runs in a savepoint, and `f` reads first, so it fails at once with
    /// "database is locked" (a read that indexes the queue on its way reads the queued rows
    /// instead of waiting for another connection's write).
    NoWait,
}

/// Runs `f` all or nothing: a failure leaves the database as it was. Inside the caller's
/// transaction, or with [`Lock::NoWait`], in the savepoint `name`; otherwise in `BEGIN IMMEDIATE`.
pub(super) fn all_or_nothing<T>(
    conn: &Connection,
    name: &str,
    lock: Lock,
    f: impl FnOnce() -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    let (begin, commit, rollback) = if lock == Lock::Wait && conn.is_autocommit() {
        ("BEGIN IMMEDIATE".to_string(), "COMMIT".to_string(), "ROLLBACK".to_string())
    } else {
        (format!("SAVEPOINT {name}"), format!("RELEASE {name}"), format!("ROLLBACK TO {name}; RELEASE {name}"))
    };
    conn.execute_batch(&begin)?;
    match f().and_then(|v| conn.execute_batch(&commit).map(|_| v)) {
        Ok(v) => Ok(v),
        Err(e) => {
            let _ = conn.execute_batch(&rollback);
            Err(e)
        }
    }
}

/// The tables, views, indexes and triggers [`SCHEMA_SQL`] creates, by name (each of its `CREATE …
/// IF NOT EXISTS name` lines).
fn schema_objects() -> impl Iterator<Item = &'static str> {
    SCHEMA_SQL.lines().filter_map(|l| {
        let rest = l.strip_prefix("CREATE ")?;
        let at = rest.find("IF NOT EXISTS ")? + "IF NOT EXISTS ".len();
        rest[at..].split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).next()
    })
}

/// The full-text indexes of the schema.
const FTS_INDEXES: [&str; 2] = ["cmp_memories_fts", "cmp_memories_ngram"];
/// The shadow tables FTS5 keeps for each (external content: no `_content`), as FTS5 creates them.
/// A full-text index is dropped through its own constructor, which reads them: one that lost a
/// shadow gets an empty one first, so that it can be dropped and created again.
const FTS_SHADOWS: [(&str, &str); 4] = [
    ("_data", "(id INTEGER PRIMARY KEY, block BLOB)"),
    ("_idx", "(segid, term, pgno, PRIMARY KEY(segid, term)) WITHOUT ROWID"),
    ("_docsize", "(id INTEGER PRIMARY KEY, sz BLOB)"),
    ("_config", "(k PRIMARY KEY, v) WITHOUT ROWID"),
];

/// What is missing from a store whose version is current: objects of the schema (dropped by hand,
/// say), and full-text indexes that lost a shadow table (listed by the index's name).
fn missing(conn: &Connection, present: &Stored) -> Vec<String> {
    let mut out: Vec<String> = schema_objects().filter(|n| !present.contains_key(*n)).map(String::from).collect();
    for f in FTS_INDEXES {
        if present.contains_key(f) && FTS_SHADOWS.iter().any(|(s, _)| !present.contains_key(&format!("{f}{s}"))) {
            out.push(f.to_string());
        }
    }
    if present.contains_key("cmp_meta") {
        out.extend(META_KEYS.iter().filter(|k| meta(conn, k).is_none()).map(|k| format!("cmp_meta.{k}")));
    }
    out
}

/// Each object of the main schema by name, with the definition SQLite keeps for it (NULL for an
/// automatic index).
type Stored = std::collections::HashMap<String, Option<String>>;

fn stored(conn: &Connection) -> rusqlite::Result<Stored> {
    let mut st = conn.prepare("SELECT name, sql FROM main.sqlite_master")?;
    let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    rows.collect()
}

/// The views and triggers of [`SCHEMA_SQL`], each with the definition SQLite keeps for it
/// (`sqlite_master.sql`: the statement as written, without `IF NOT EXISTS` and its `;`). A view
/// ends at the first line that ends in `;`, a trigger at its `END;` line.
fn definitions() -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut lines: Vec<&str> = Vec::new();
    for line in SCHEMA_SQL.lines() {
        if lines.is_empty() && !(line.starts_with("CREATE VIEW ") || line.starts_with("CREATE TRIGGER ")) {
            continue;
        }
        lines.push(line);
        let trigger = lines[0].starts_with("CREATE TRIGGER ");
        if (trigger && line == "END;") || (!trigger && line.ends_with(';')) {
            let text = lines.join("\n").replacen("IF NOT EXISTS ", "", 1);
            let name = text.split_whitespace().nth(2).unwrap_or_default().to_string();
            out.push((name, text.trim_end_matches(';').to_string()));
            lines.clear();
        }
    }
    out
}

/// The views and triggers of the schema whose definition is not the one this build creates (one
/// replaced by hand with another of the same name, say).
fn changed(stored: &Stored) -> Vec<String> {
    definitions()
        .into_iter()
        .filter(|(name, def)| stored.get(name).is_some_and(|s| s.as_deref() != Some(def.as_str())))
        .map(|(name, _)| name)
        .collect()
}

/// The `cmp_meta` rows [`SCHEMA_SQL`] creates besides the version (`cmp_init()` writes that).
const META_KEYS: [&str; 3] = ["entity_gen", "db_id", "secret"];

/// What applying the schema again restores with no index entry lost: plain indexes, the tables of
/// sessions, pins and open tasks, and `cmp_meta`'s rows. Anything else missing (a full-text index or
/// its shadow, the queue, a view or trigger that indexes, the entity tables) means rows may be
/// indexed wrongly, so every row is indexed again.
fn restored_as_is(name: &str) -> bool {
    const AS_IS: [&str; 8] = [
        "cmp_memories_scope_time",
        "cmp_memories_rules",
        "cmp_memories_superseded_by",
        "cmp_memory_entities_rid",
        "cmp_tasks",
        "cmp_tasks_ai",
        "cmp_sessions",
        "cmp_pins",
    ];
    AS_IS.contains(&name) || name.starts_with("cmp_meta.")
}

/// Drops the full-text index `f`, which is missing or lost a shadow table: FTS5 drops an index through its own
/// constructor, which reads its configuration and the index's structure record, so the missing
/// shadows are first created empty, with the records a new index of this SQLite starts with
/// (copied from a scratch index in `temp`).
fn drop_broken_fts(conn: &Connection, f: &str) -> rusqlite::Result<()> {
    let exists: bool =
        conn.query_row("SELECT count(*) > 0 FROM main.sqlite_master WHERE name = ?1", [f], |r| r.get(0))?;
    if !exists {
        // Dropped itself: no shadow of it may stand in the way of creating it again.
        for (shadow, _) in FTS_SHADOWS {
            conn.execute_batch(&format!("DROP TABLE IF EXISTS main.{f}{shadow}"))?;
        }
        return Ok(());
    }
    for (shadow, columns) in FTS_SHADOWS {
        conn.execute_batch(&format!("CREATE TABLE IF NOT EXISTS main.{f}{shadow}{columns}"))?;
    }
    conn.execute_batch(&format!(
        "CREATE VIRTUAL TABLE temp.cmp_scratch_fts USING fts5(x, content = '');
         INSERT OR IGNORE INTO main.{f}_config SELECT * FROM temp.cmp_scratch_fts_config;
         INSERT OR IGNORE INTO main.{f}_data SELECT * FROM temp.cmp_scratch_fts_data;
         DROP TABLE temp.cmp_scratch_fts;
         DROP TABLE main.{f};"
    ))
}

/// `cmp_init()` on a store whose version is current: nothing to do, unless part of the schema is
/// missing, or a view or trigger is not the one this build creates. Then the schema is applied again
/// (a changed view or trigger, and a full-text index that lost a shadow table, are dropped first)
/// and every row is indexed again, all or nothing; rows of a dropped `cmp_memories` are gone.
fn repair(conn: &Connection) -> Result<i64> {
    let objects = stored(conn)?;
    let (gone, altered) = (missing(conn, &objects), changed(&objects));
    if gone.is_empty() && altered.is_empty() {
        return Ok(SCHEMA_VERSION);
    }
    let what = [("missing", &gone), ("changed", &altered)]
        .iter()
        .filter(|(_, names)| !names.is_empty())
        .map(|(how, names)| format!("{how}: {}", names.join(", ")))
        .collect::<Vec<_>>()
        .join("; ");
    if let Some(why) = unwritable(conn) {
        let msg =
            format!("the cmp schema is damaged ({what}); cmp_init() repairs it, which cannot be done here: {why}");
        return Err(Error::Unwritable(msg));
    }
    all_or_nothing(conn, "cmp_repair", Lock::Wait, || {
        for f in FTS_INDEXES.iter().filter(|f| gone.iter().any(|g| g == *f)) {
            drop_broken_fts(conn, f)?;
        }
        for name in &altered {
            conn.execute_batch(&format!("DROP VIEW IF EXISTS main.{name}; DROP TRIGGER IF EXISTS main.{name};"))?;
        }
        conn.execute_batch(SCHEMA_SQL)?;
        if gone.iter().chain(&altered).all(|g| restored_as_is(g)) {
            return Ok(0);
        }
        super::pending::requeue_all(conn)?;
        super::pending::flush(conn)
    })
    .map_err(|e| Error::Schema(format!("the cmp schema is damaged ({what}) and could not be repaired: {e}")))?;
    Ok(SCHEMA_VERSION)
}

/// A value from `cmp_meta`, or None (also when the schema is missing).
pub fn meta(conn: &Connection, key: &str) -> Option<String> {
    let mut st = conn.prepare_cached("SELECT value FROM main.cmp_meta WHERE key = ?1").ok()?;
    st.query_row([key], |r| r.get(0)).optional().ok().flatten()
}

/// True when `cmp_init()` has run on this database.
pub fn initialized(conn: &Connection) -> bool {
    meta(conn, "schema_version").is_some()
}

/// Why a write made on `conn` would not last, or `None` when it would. cmp_init, cmp_context and
/// cmp_session_reset write from inside a SELECT; where that write cannot durably land they must fail
/// rather than answer as if it had. Three cases: a database opened read-only, `PRAGMA query_only`,
/// and a libSQL server (sqld) read replica. A replica runs a SELECT on its own copy, where the write
/// succeeds, is read back by later calls on that replica, never reaches the primary, and vanishes when
/// the primary's next change to the same page replicates. sqld keeps a `client_wal_index` file in a
/// replica's database directory and none beside a primary's, which is what is checked here.
pub fn unwritable(conn: &Connection) -> Option<&'static str> {
    if conn.is_readonly(rusqlite::MAIN_DB).unwrap_or(false) {
        return Some("the database is open read-only");
    }
    if conn.pragma_query_value(None, "query_only", |r| r.get::<_, bool>(0)).unwrap_or(false) {
        return Some("PRAGMA query_only is on");
    }
    let file = conn.path().filter(|p| !p.is_empty())?;
    let dir = std::path::Path::new(file).parent()?;
    if dir.join("client_wal_index").exists() {
        return Some(
            "this database is a libSQL (sqld) read replica, whose local writes are overwritten by the primary's \
             next replicated change",
        );
    }
    None
}

/// Whether this SQLite has FTS5; an error when the connection cannot tell (its file is not a
/// database, say), so that error is what the caller reports, not a missing FTS5.
pub fn has_fts5(conn: &Connection) -> rusqlite::Result<bool> {
    let compiled = conn.query_row("SELECT sqlite_compileoption_used('ENABLE_FTS5')", [], |r| r.get::<_, i64>(0));
    if compiled.is_ok_and(|v| v == 1) {
        return Ok(true);
    }
    conn.query_row("SELECT count(*) FROM pragma_module_list WHERE name = 'fts5'", [], |r| r.get::<_, i64>(0))
        .map(|v| v > 0)
}

/// The version of the SQLite library this connection runs on.
pub fn sqlite_version(conn: &Connection) -> rusqlite::Result<String> {
    conn.query_row("SELECT sqlite_version()", [], |r| r.get(0))
}

/// This database's id and the generation of its entity set (0 before any entity), which key the
/// entity gazetteer cache.
pub fn entity_generation(conn: &Connection) -> rusqlite::Result<(String, i64)> {
    conn.prepare_cached(
        "SELECT (SELECT value FROM main.cmp_meta WHERE key = 'db_id'),
                (SELECT CAST(value AS INTEGER) FROM main.cmp_meta WHERE key = 'entity_gen')",
    )?
    .query_row([], |r| {
        Ok((r.get::<_, Option<String>>(0)?.unwrap_or_default(), r.get::<_, Option<i64>>(1)?.unwrap_or(0)))
    })
}

/// A moment in the life of the database as one connection sees it: two marks of the same connection
/// are equal only if nothing was written in between, by this connection (its count of changed rows,
/// triggers' included: `sqlite3_total_changes`), by any other connection or process (`data_version`),
/// or to the schema (`schema_version`). Writes through the incremental blob API bypass all three,
/// as they bypass the triggers that index a row: cmp does not support them. `data_version` is the
/// main database's, so a connection with another database attached has no mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteMark {
    changes: u64,
    data_version: i64,
    schema_version: i64,
}

/// This connection's [`WriteMark`] now; None while a database other than main and temp is attached.
pub fn write_mark(conn: &Connection) -> rusqlite::Result<Option<WriteMark>> {
    let (data_version, schema_version, attached) = conn
        .prepare_cached(
            "SELECT data_version, schema_version,
                    (SELECT count(*) FROM pragma_database_list WHERE name NOT IN ('main', 'temp'))
             FROM pragma_data_version, pragma_schema_version",
        )?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)?)))?;
    Ok((attached == 0).then(|| WriteMark { changes: conn.total_changes(), data_version, schema_version }))
}

/// Errors clearly when `cmp_init()` has not run on this database, or ran with a version older than
/// `OLDEST_READ`.
pub fn require(conn: &Connection) -> Result<()> {
    let msg = match meta(conn, "schema_version").and_then(|v| v.parse::<i64>().ok()) {
        Some(v) if (OLDEST_READ..=SCHEMA_VERSION).contains(&v) => return Ok(()),
        Some(v) if v < SCHEMA_VERSION => {
            format!("the cmp schema is version {v}; run SELECT cmp_init() to upgrade it to {SCHEMA_VERSION}")
        }
        Some(v) => format!("the cmp schema is version {v}, newer than this extension's; upgrade cmp"),
        None => "the cmp schema is missing; run SELECT cmp_init() first".into(),
    };
    Err(Error::Schema(msg))
}

#[cfg(test)]
mod tests {
    /// Every view and trigger of the schema is found, and a store the schema was just applied to holds
    /// each exactly as [`super::definitions`] reads it: nothing counts as changed.
    #[test]
    fn a_fresh_store_holds_every_definition_as_read() {
        let defs = super::definitions();
        assert_eq!(defs.len(), 13, "{:?}", defs.iter().map(|d| &d.0).collect::<Vec<_>>());
        let conn = rusqlite::Connection::open_in_memory().expect("open");
        crate::register(&conn).expect("register");
        crate::store::init(&conn).expect("init");
        assert_eq!(super::changed(&super::stored(&conn).expect("stored")), Vec::<String>::new());
    }

    #[test]
    fn a_file_that_is_not_a_database_is_reported_as_such_not_as_a_missing_fts5() {
        let path = std::env::temp_dir().join(format!("cmp-not-a-db-{}.db", std::process::id()));
        std::fs::write(&path, vec![0x5a_u8; 8192]).expect("write");
        let conn = rusqlite::Connection::open(&path).expect("open");
        let e = crate::register(&conn).expect_err("not a database").to_string();
        let _ = std::fs::remove_file(&path);
        assert!(e.starts_with("cmp: ") && e.contains("not a database"), "{e}");
    }
}
