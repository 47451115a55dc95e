//! The `cmp_tasks` table: open tasks (the open_loops layer), a task by id, which ids are tasks.

use super::memories::lossy;
use rusqlite::{params, Connection, OptionalExtension};

/// One task row.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    /// `task_…` id, the citation ref.
    pub id: String,
    /// The text.
    pub title: Option<String>,
    /// `open` or `done`.
    pub status: Option<String>,
    /// When it is due.
    pub due_at: Option<String>,
    /// The `entities` JSON text.
    pub entities: Option<String>,
}

/// Up to `limit` open tasks of `scope` (id, title, due_at, entities; status unread), soonest due
/// first, undated last. A task whose id is not text (a blob: `id` has TEXT affinity, which keeps
/// blobs) has no ref a caller could cite, and two such tasks would read as one ref: never read. Nor
/// is a task whose id is also the id of a memory of its scope: the ref names the memory (as
/// `cmp_expand` reads it), and one pack must not hold two items with one ref.
pub fn open(conn: &Connection, scope: &str, limit: usize) -> rusqlite::Result<Vec<Task>> {
    let mut st = conn.prepare_cached(&format!(
        "SELECT id, title, due_at, entities FROM main.cmp_tasks AS t
         WHERE scope = ?1 AND status = 'open' AND typeof(id) = 'text'
           AND NOT EXISTS (SELECT 1 FROM main.cmp_memories AS m WHERE m.id = t.id AND m.scope = ?1)
         ORDER BY due_at IS NULL, due_at, id LIMIT {limit}"
    ))?;
    let rows = st.query_map([scope], |r| {
        Ok(Task {
            id: lossy(r, 0).unwrap_or_default(),
            title: lossy(r, 1),
            status: None,
            due_at: lossy(r, 2),
            entities: lossy(r, 3),
        })
    })?;
    rows.collect()
}

/// The task `id` of `scope`, if any.
pub fn by_id(conn: &Connection, id: &str, scope: &str) -> rusqlite::Result<Option<Task>> {
    conn.query_row(
        "SELECT id, title, status, due_at, entities FROM main.cmp_tasks WHERE id = ?1 AND scope = ?2",
        params![id, scope],
        |r| {
            Ok(Task {
                id: lossy(r, 0).unwrap_or_default(),
                title: lossy(r, 1),
                status: lossy(r, 2),
                due_at: lossy(r, 3),
                entities: lossy(r, 4),
            })
        },
    )
    .optional()
}

/// Of the ids in the JSON array `ids`, those that are tasks of `scope`.
pub fn existing(conn: &Connection, ids: &str, scope: &str) -> rusqlite::Result<Vec<String>> {
    let mut st = conn
        .prepare_cached("SELECT id FROM main.cmp_tasks WHERE id IN (SELECT value FROM json_each(?1)) AND scope = ?2")?;
    let rows = st.query_map(params![ids, scope], |r| Ok(lossy(r, 0).unwrap_or_default()))?;
    rows.collect()
}
