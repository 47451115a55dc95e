//! The index queue (`cmp_pending`, schema 5) and the stale entries (`cmp_stale`, schema 8): every
//! statement that reads them or writes the index entries of queued rows. Writes do not touch the
//! indexes: plain-SQL triggers queue the rids a write touches and keep the indexed text of a row that
//! changed or went, so a connection that never loaded the extension writes correctly, a bulk load
//! costs little more than its row table, and a write that fails has no full-text write to roll back.
//! [`flush`] removes the stale entries and writes the queued rows' entries with one statement per
//! index (the word index, the character-pair index, the entity links), which is what makes it cheap:
//! a full-text insert made by a trigger writes an index segment per row.
//!
//! Every read settles the queue first ([`settle`]). A connection that cannot write (read-only,
//! `PRAGMA query_only`, a replica, or another connection holding the write lock) leaves it queued
//! and reads the queued rows directly ([`queued`]; retrieval matches them by their words, and takes
//! index matches only of rows that are not queued, `eligibility::INDEXED`).

use super::eligibility::Reader;
use super::memories::{memory_from_row, Memory, MEMORY_COLS};
use super::schema::Lock;
use crate::error::Result;
use rusqlite::{named_params, Connection, ErrorCode};

/// The statements that remove the stale entries: FTS5 takes the text an entry was made from. They
/// run while the stale rids are still queued, so the content views hold only their old text.
const REMOVE_STALE: [&str; 3] = [
    "INSERT INTO main.cmp_memories_fts(cmp_memories_fts, rowid, content) SELECT 'delete', rid, content FROM main.cmp_stale",
    "INSERT INTO main.cmp_memories_ngram(cmp_memories_ngram, rowid, grams)
       SELECT 'delete', rid, grams FROM main.cmp_memories_grams WHERE rid IN (SELECT rid FROM main.cmp_stale)",
    "DELETE FROM main.cmp_stale",
];

/// The statements that index the queued rows named by `?1` (a JSON array of rids), in order. The
/// rows are read through the indexes' own content views (the word index's live part,
/// `cmp_memories_indexed`: the stale part is empty by then), so what is indexed is decided in one
/// place (sql/schema.sql): rows that may surface, and for the character-pair index those holding
/// text of a spaceless script. The entity statements are the insert rules the triggers had before
/// schema 5.
const INDEX_QUEUED: [&str; 4] = [
    "INSERT INTO main.cmp_memories_fts(rowid, content)
       SELECT rid, content FROM main.cmp_memories_indexed WHERE rid IN (SELECT value FROM json_each(?1))",
    "INSERT INTO main.cmp_memories_ngram(rowid, grams)
       SELECT rid, grams FROM main.cmp_memories_grams WHERE rid IN (SELECT value FROM json_each(?1))",
    "INSERT OR IGNORE INTO main.cmp_entities(name, norm)
       SELECT trim(j.value), lower(trim(j.value))
       FROM main.cmp_memories AS m,
            json_each(CASE WHEN json_valid(m.entities) AND json_type(m.entities) = 'array'
                           THEN m.entities ELSE '[]' END) AS j
       WHERE m.rid IN (SELECT value FROM json_each(?1)) AND (m.redacted = 0 OR m.redacted IS NULL)
         AND j.type = 'text' AND trim(j.value) <> ''",
    "INSERT OR IGNORE INTO main.cmp_memory_entities(entity_id, rid)
       SELECT e.id, m.rid
       FROM main.cmp_memories AS m,
            json_each(CASE WHEN json_valid(m.entities) AND json_type(m.entities) = 'array'
                           THEN m.entities ELSE '[]' END) AS j
       JOIN main.cmp_entities AS e ON e.norm = lower(trim(j.value))
       WHERE m.rid IN (SELECT value FROM json_each(?1)) AND (m.redacted = 0 OR m.redacted IS NULL)
         AND j.type = 'text'",
];

/// True when some row waits to be indexed.
pub fn waiting(conn: &Connection) -> rusqlite::Result<bool> {
    conn.prepare_cached("SELECT EXISTS (SELECT 1 FROM main.cmp_pending)")?.query_row([], |r| r.get(0))
}

/// Removes the stale entries, indexes every queued row that still has one and empties the queue,
/// all or nothing; returns how many rids were queued. Waits for another connection's write as the
/// busy timeout says; fails (changing nothing) where the connection cannot write.
pub fn flush(conn: &Connection) -> rusqlite::Result<usize> {
    index_queue(conn, Lock::Wait)
}

/// [`flush`], but failing at once with "database is locked" where another connection is writing.
fn flush_if_free(conn: &Connection) -> rusqlite::Result<usize> {
    index_queue(conn, Lock::NoWait)
}

fn index_queue(conn: &Connection, lock: Lock) -> rusqlite::Result<usize> {
    super::schema::all_or_nothing(conn, "cmp_flush", lock, || {
        // Read first: with `Lock::NoWait`, this is what makes the write below fail at once.
        let rids: Vec<i64> = {
            let mut st = conn.prepare_cached("SELECT rid FROM main.cmp_pending ORDER BY rid")?;
            let rows = st.query_map([], |r| r.get(0))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        if rids.is_empty() {
            return Ok(0);
        }
        let list = serde_json::to_string(&rids).unwrap_or_else(|_| "[]".into());
        if has_stale_entries(conn)? {
            for sql in REMOVE_STALE {
                conn.prepare_cached(sql)?.execute([])?;
            }
        }
        // Out of the queue next: the content views hold only rows that are not queued.
        conn.prepare_cached("DELETE FROM main.cmp_pending")?.execute([])?;
        for sql in INDEX_QUEUED {
            conn.prepare_cached(sql)?.execute([&list])?;
        }
        // New index entries: row lengths kept by the ranking function may be stale.
        super::bm25::forget(conn);
        Ok(rids.len())
    })
}

/// Whether stale entries wait to be removed: never in an older store read before `cmp_init()`
/// upgrades it, which has no `cmp_stale` (its triggers unindex at once).
fn has_stale_entries(conn: &Connection) -> rusqlite::Result<bool> {
    let table: bool = conn
        .prepare_cached("SELECT count(*) > 0 FROM main.sqlite_master WHERE type = 'table' AND name = 'cmp_stale'")?
        .query_row([], |r| r.get(0))?;
    if !table {
        return Ok(false);
    }
    conn.prepare_cached("SELECT EXISTS (SELECT 1 FROM main.cmp_stale)")?.query_row([], |r| r.get(0))
}

/// Drops every index entry and queues every row, so that the next [`flush`] indexes the whole
/// store again (`cmp_init()` repairing a damaged schema).
pub fn requeue_all(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(
        "INSERT INTO main.cmp_memories_fts(cmp_memories_fts) VALUES ('delete-all');
         INSERT INTO main.cmp_memories_ngram(cmp_memories_ngram) VALUES ('delete-all');
         DELETE FROM main.cmp_stale;
         DELETE FROM main.cmp_memory_entities;
         DELETE FROM main.cmp_entities;
         INSERT OR IGNORE INTO main.cmp_pending(rid) SELECT rid FROM main.cmp_memories;",
    )?;
    super::bm25::forget(conn);
    Ok(())
}

/// Before a read: indexes the queued rows when this connection can write. Where it cannot (see the
/// module comment) the rows stay queued for a connection that can, and the read goes on; retrieval
/// sees them still queued ([`waiting`]) and reads them directly.
pub fn settle(conn: &Connection) -> Result<()> {
    if !waiting(conn)? || super::schema::unwritable(conn).is_some() {
        return Ok(());
    }
    match flush_if_free(conn) {
        Err(e) if !cannot_write_now(&e) => Err(e.into()),
        _ => Ok(()),
    }
}

/// True for the errors of a write that this connection may not make now (another writer holds the
/// lock, a read transaction's snapshot is stale, the file is read-only).
fn cannot_write_now(e: &rusqlite::Error) -> bool {
    matches!(e.sqlite_error_code(), Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked | ErrorCode::ReadOnly))
}

/// Most queued rows a read on a connection that cannot index reads directly, newest first.
pub const QUEUED_READ_LIMIT: usize = 10_000;

/// The eligible queued rows (at most [`QUEUED_READ_LIMIT`], newest first), each with whether it is
/// visible at the horizon.
pub fn queued(conn: &Connection, r: Reader<'_>) -> rusqlite::Result<Vec<(Memory, bool)>> {
    let sql = format!(
        "SELECT {MEMORY_COLS}, {} FROM main.cmp_pending AS p JOIN main.cmp_memories AS m ON m.rid = p.rid
         WHERE {} ORDER BY p.rid DESC LIMIT {QUEUED_READ_LIMIT}",
        super::eligibility::VISIBLE,
        r.eligible()
    );
    let mut st = conn.prepare_cached(&sql)?;
    let rows = st.query_map(named_params! {":scope": r.scope, ":h": r.h}, |x| Ok((memory_from_row(x)?, x.get(14)?)))?;
    rows.collect()
}
