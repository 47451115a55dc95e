//! Helpers shared by the integration tests: connections (registered or plain), a memory builder, a
//! fixed clock, `cmp_search` as structs, and the invariant checks every store test ends with.
//!
//! Each test crate uses a different subset of these helpers.
#![allow(dead_code)]

use rusqlite::types::Value;
use rusqlite::{params, Connection, OptionalExtension};
use std::path::Path;

/// The clock every test passes as `now`.
pub const NOW: &str = "2026-06-01T00:00:00Z";
/// Default `captured_at` of [`Mem`]: before [`NOW`], so rows are visible at it.
pub const CAPTURED: &str = "2026-05-01T00:00:00Z";

/// `{"now": NOW}`.
pub fn now_opts() -> String {
    format!(r#"{{"now":"{NOW}"}}"#)
}

/// `{"now": NOW, "scope": scope}`.
pub fn scope_opts(scope: &str) -> String {
    serde_json::json!({"now": NOW, "scope": scope}).to_string()
}

/// A registered, initialised in-memory connection.
pub fn open() -> Connection {
    let conn = Connection::open_in_memory().expect("open in-memory database");
    cmp::register(&conn).expect("cmp::register");
    init(&conn);
    conn
}

/// A registered, initialised connection to the database file at `path`.
pub fn open_file(path: &Path) -> Connection {
    let conn = Connection::open(path).expect("open database file");
    cmp::register(&conn).expect("cmp::register");
    init(&conn);
    conn
}

/// A connection to `path` that never loads cmp: plain SQLite, as another application would open it.
pub fn open_plain(path: &Path) -> Connection {
    Connection::open(path).expect("open database file without cmp")
}

/// `SELECT cmp_init()`, returning the schema version.
pub fn init(conn: &Connection) -> i64 {
    conn.query_row("SELECT cmp_init()", [], |r| r.get(0)).expect("SELECT cmp_init()")
}

/// A memory to insert; unset fields take the schema's defaults (except `captured_at`, which
/// defaults to [`CAPTURED`] so rows are visible at [`NOW`]).
#[derive(Debug, Clone)]
pub struct Mem {
    pub id: Option<String>,
    pub content: String,
    pub summary: Option<String>,
    pub kind: String,
    pub occurred_at: Option<String>,
    pub captured_at: String,
    pub source_url: Option<String>,
    pub confidence: Option<f64>,
    pub trust: Option<f64>,
    /// Raw `entities` column text (usually a JSON array).
    pub entities: Option<String>,
    pub superseded_by: Option<String>,
    pub superseded_at: Option<String>,
    pub conflict: i64,
    pub redacted: i64,
    pub scope: String,
    pub embedding: Option<Vec<u8>>,
}

impl Mem {
    pub fn new(content: &str) -> Self {
        Mem {
            id: None,
            content: content.into(),
            summary: None,
            kind: "semantic".into(),
            occurred_at: None,
            captured_at: CAPTURED.into(),
            source_url: None,
            confidence: None,
            trust: None,
            entities: None,
            superseded_by: None,
            superseded_at: None,
            conflict: 0,
            redacted: 0,
            scope: "default".into(),
            embedding: None,
        }
    }
    pub fn id(mut self, id: &str) -> Self {
        self.id = Some(id.into());
        self
    }
    pub fn kind(mut self, kind: &str) -> Self {
        self.kind = kind.into();
        self
    }
    pub fn entities(mut self, names: &[&str]) -> Self {
        self.entities = Some(serde_json::to_string(names).expect("entity names as JSON"));
        self
    }
    pub fn entities_raw(mut self, raw: &str) -> Self {
        self.entities = Some(raw.into());
        self
    }
    pub fn scope(mut self, scope: &str) -> Self {
        self.scope = scope.into();
        self
    }
    pub fn redacted(mut self) -> Self {
        self.redacted = 1;
        self
    }
    pub fn occurred_at(mut self, t: &str) -> Self {
        self.occurred_at = Some(t.into());
        self
    }
    pub fn captured_at(mut self, t: &str) -> Self {
        self.captured_at = t.into();
        self
    }
    pub fn superseded(mut self, by: &str, at: &str) -> Self {
        self.superseded_by = Some(by.into());
        self.superseded_at = Some(at.into());
        self
    }
    pub fn embedding(mut self, v: &[f32]) -> Self {
        self.embedding = Some(f32_blob(v));
        self
    }
    pub fn summary(mut self, s: &str) -> Self {
        self.summary = Some(s.into());
        self
    }
    pub fn trust(mut self, t: f64) -> Self {
        self.trust = Some(t);
        self
    }
}

/// Inserts `m` with plain SQL (works on a connection without cmp) and returns its id.
pub fn insert_memory(conn: &Connection, m: &Mem) -> String {
    let trust = m.trust.map_or(Value::Real(0.5), Value::Real);
    let rid: i64 = conn
        .query_row(
            "INSERT INTO cmp_memories(id, content, summary, kind, occurred_at, captured_at, source_url,
                 confidence, trust, entities, superseded_by, superseded_at, conflict, redacted, scope,
                 embedding)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)
             RETURNING rid",
            params![
                m.id,
                m.content,
                m.summary,
                m.kind,
                m.occurred_at,
                m.captured_at,
                m.source_url,
                m.confidence,
                trust,
                m.entities,
                m.superseded_by,
                m.superseded_at,
                m.conflict,
                m.redacted,
                m.scope,
                m.embedding,
            ],
            |r| r.get(0),
        )
        .unwrap_or_else(|e| panic!("insert {m:?}: {e}"));
    conn.query_row("SELECT id FROM cmp_memories WHERE rid = ?1", [rid], |r| r.get(0)).expect("id of the inserted row")
}

/// Float32 little-endian bytes of `v` (sqlite-vec's layout).
pub fn f32_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// One `cmp_search` row.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub r#ref: String,
    pub content: String,
    pub kind: String,
    pub relevance: Option<f64>,
    pub relevance_basis: Option<String>,
    pub why: serde_json::Value,
    pub fused_rank: Option<i64>,
    pub occurred_at: String,
    pub entities: Vec<String>,
}

impl Hit {
    /// `why.retrievers`.
    pub fn retrievers(&self) -> Vec<String> {
        str_array(&self.why["retrievers"])
    }
    /// `why.matched_terms`.
    pub fn matched_terms(&self) -> Vec<String> {
        str_array(&self.why["matched_terms"])
    }
}

fn str_array(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().map(|x| x.as_str().expect("string in array").to_string()).collect())
        .unwrap_or_default()
}

/// `SELECT * FROM cmp_search(task, options)`, or the SQL error message.
pub fn try_search(conn: &Connection, task: &str, options: Option<&str>) -> Result<Vec<Hit>, String> {
    let run = || -> rusqlite::Result<Vec<Hit>> {
        let mut st = conn.prepare(
            "SELECT ref, content, kind, relevance, relevance_basis, why, fused_rank, occurred_at, entities
             FROM cmp_search(?1, ?2)",
        )?;
        let rows = st.query_map(params![task, options], |r| {
            let why: String = r.get(5)?;
            let entities: String = r.get(8)?;
            Ok(Hit {
                r#ref: r.get(0)?,
                content: r.get(1)?,
                kind: r.get(2)?,
                relevance: r.get(3)?,
                relevance_basis: r.get(4)?,
                why: serde_json::from_str(&why).expect("why is JSON"),
                fused_rank: r.get(6)?,
                occurred_at: r.get(7)?,
                entities: serde_json::from_str(&entities).expect("entities is a JSON array"),
            })
        })?;
        rows.collect()
    };
    run().map_err(|e| e.to_string())
}

/// `cmp_search(task, {"now": NOW})`, panicking on error.
pub fn search(conn: &Connection, task: &str) -> Vec<Hit> {
    try_search(conn, task, Some(&now_opts())).unwrap_or_else(|e| panic!("cmp_search({task:?}): {e}"))
}

/// `cmp_search(task, options)`, panicking on error.
pub fn search_with(conn: &Connection, task: &str, options: &str) -> Vec<Hit> {
    try_search(conn, task, Some(options)).unwrap_or_else(|e| panic!("cmp_search({task:?}, {options}): {e}"))
}

/// Refs of `hits`, in order.
pub fn refs(hits: &[Hit]) -> Vec<String> {
    hits.iter().map(|h| h.r#ref.clone()).collect()
}

/// The error message of `sql` (which must fail).
pub fn sql_error(conn: &Connection, sql: &str) -> String {
    let r = conn.prepare(sql).and_then(|mut st| {
        let mut rows = st.query([])?;
        while rows.next()?.is_some() {}
        Ok(())
    });
    match r {
        Ok(()) => panic!("expected an error from {sql}"),
        Err(e) => e.to_string(),
    }
}

/// Every index agrees with `cmp_memories`, and the file is sound, both as the writes left it (rows
/// queued for indexing hold no entries yet) and, on a connection with cmp, after `cmp_flush()`:
/// - the FTS5 index is well formed and matches its external content (the view of non-redacted rows
///   that are not queued);
/// - the entity links are exactly the (entity, row) pairs the `entities` JSON of non-redacted,
///   indexed rows names, and no entity is left without a link;
/// - `PRAGMA integrity_check` is ok.
pub fn assert_consistent(conn: &Connection) {
    indexes_agree(conn);
    let flushable: bool = conn
        .query_row("SELECT count(*) > 0 FROM pragma_function_list WHERE name = 'cmp_flush'", [], |r| r.get(0))
        .expect("function list");
    if flushable && queued(conn) > 0 {
        conn.query_row("SELECT cmp_flush()", [], |_| Ok(())).expect("cmp_flush");
        assert_eq!(queued(conn), 0, "cmp_flush left rows queued");
        indexes_agree(conn);
    }
}

/// Rows waiting in the index queue (0 on a schema without one).
pub fn queued(conn: &Connection) -> i64 {
    let has: bool = conn
        .query_row("SELECT count(*) > 0 FROM sqlite_master WHERE name = 'cmp_pending'", [], |r| r.get(0))
        .expect("look up cmp_pending");
    if !has {
        return 0;
    }
    conn.query_row("SELECT count(*) FROM cmp_pending", [], |r| r.get(0)).expect("count cmp_pending")
}

fn indexes_agree(conn: &Connection) {
    let indexed = if queued(conn) > 0 { "AND m.rid NOT IN (SELECT rid FROM cmp_pending)" } else { "" };
    conn.execute("INSERT INTO cmp_memories_fts(cmp_memories_fts) VALUES('integrity-check')", [])
        .expect("FTS5 integrity-check");
    // With rank = 1, FTS5 also compares the index with its external content (the view); the plain
    // form above only checks the index's internal structure.
    conn.execute("INSERT INTO cmp_memories_fts(cmp_memories_fts, rank) VALUES('integrity-check', 1)", [])
        .expect("FTS5 index differs from cmp_memories_indexable");
    // The character-pair index (schema 3 on; a database of an older schema has none).
    let has_ngram: bool = conn
        .query_row("SELECT count(*) > 0 FROM sqlite_master WHERE name = 'cmp_memories_ngram'", [], |r| r.get(0))
        .expect("look up cmp_memories_ngram");
    if has_ngram {
        conn.execute("INSERT INTO cmp_memories_ngram(cmp_memories_ngram, rank) VALUES('integrity-check', 1)", [])
            .expect("character-pair index differs from cmp_memories_grams");
    }
    let expected = links(
        conn,
        &format!(
            "SELECT DISTINCT lower(trim(j.value)), m.rid
         FROM cmp_memories AS m,
              json_each(CASE WHEN json_valid(m.entities) AND json_type(m.entities) = 'array'
                             THEN m.entities ELSE '[]' END) AS j
         WHERE (m.redacted = 0 OR m.redacted IS NULL) AND j.type = 'text' AND trim(j.value) <> '' {indexed}
         ORDER BY 1, 2"
        ),
    );
    let actual = links(
        conn,
        "SELECT e.norm, l.rid FROM cmp_memory_entities AS l JOIN cmp_entities AS e ON e.id = l.entity_id
         ORDER BY 1, 2",
    );
    assert_eq!(actual, expected, "entity links drifted from cmp_memories.entities");
    let orphans: i64 = conn
        .query_row(
            "SELECT count(*) FROM cmp_entities
             WHERE id NOT IN (SELECT entity_id FROM cmp_memory_entities)",
            [],
            |r| r.get(0),
        )
        .expect("count orphan entities");
    assert_eq!(orphans, 0, "entities without any linked memory");
    let dangling: i64 = conn
        .query_row(
            "SELECT count(*) FROM cmp_memory_entities
             WHERE entity_id NOT IN (SELECT id FROM cmp_entities)
                OR rid NOT IN (SELECT rid FROM cmp_memories)",
            [],
            |r| r.get(0),
        )
        .expect("count dangling links");
    assert_eq!(dangling, 0, "links to missing entities or rows");
    assert_integrity(conn);
}

/// `PRAGMA integrity_check` returns ok.
pub fn assert_integrity(conn: &Connection) {
    let ok: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).expect("PRAGMA integrity_check");
    assert_eq!(ok, "ok");
}

fn links(conn: &Connection, sql: &str) -> Vec<(String, i64)> {
    let mut st = conn.prepare(sql).expect("prepare link query");
    // Names as stored, invalid UTF-8 replaced (plain SQL can store any bytes as text).
    let name = |r: &rusqlite::Row<'_>| -> rusqlite::Result<String> {
        Ok(String::from_utf8_lossy(r.get_ref(0)?.as_bytes().unwrap_or_default()).into_owned())
    };
    st.query_map([], |r| Ok((name(r)?, r.get(1)?)))
        .expect("run link query")
        .collect::<rusqlite::Result<_>>()
        .expect("read links")
}

/// Entity names (lowercased) linked to the memory `id`, sorted.
pub fn linked_entities(conn: &Connection, id: &str) -> Vec<String> {
    let mut st = conn
        .prepare(
            "SELECT e.norm FROM cmp_memory_entities AS l
             JOIN cmp_entities AS e ON e.id = l.entity_id
             JOIN cmp_memories AS m ON m.rid = l.rid
             WHERE m.id = ?1 ORDER BY 1",
        )
        .expect("prepare");
    st.query_map([id], |r| r.get(0)).expect("query").collect::<rusqlite::Result<_>>().expect("rows")
}

/// True when the FTS index finds row `id` for the FTS5 query `q`.
pub fn fts_finds(conn: &Connection, q: &str, id: &str) -> bool {
    conn.query_row(
        "SELECT 1 FROM cmp_memories_fts JOIN cmp_memories AS m ON m.rid = cmp_memories_fts.rowid
         WHERE cmp_memories_fts MATCH ?1 AND m.id = ?2",
        params![q, id],
        |_| Ok(()),
    )
    .optional()
    .expect("FTS query")
    .is_some()
}

/// Number of rows in the FTS index.
pub fn fts_rows(conn: &Connection) -> i64 {
    // The docsize shadow table has exactly one row per indexed document.
    conn.query_row("SELECT count(*) FROM cmp_memories_fts_docsize", [], |r| r.get(0)).expect("count FTS rows")
}

/// `(used, tokens)` of a `cmp_context` output in any format: from `budget` in SMP and json, from
/// the header line `model X · USED/TOKENS tokens (counter) · ...` in markdown.
pub fn used_and_budget(out: &str) -> (i64, i64) {
    if out.starts_with("# Memory pack") {
        let line = out.lines().nth(1).expect("markdown header line");
        let field = line.split(" · ").nth(1).expect("used/tokens field");
        let nums = field.split(' ').next().expect("USED/TOKENS");
        let (u, t) = nums.split_once('/').expect("USED/TOKENS");
        return (u.parse().expect("used"), t.parse().expect("tokens"));
    }
    let v: serde_json::Value = serde_json::from_str(out).expect("a JSON envelope");
    (v["budget"]["used"].as_i64().expect("budget.used"), v["budget"]["tokens"].as_i64().expect("budget.tokens"))
}

/// Asserts a `cmp_context` output's accounting: `used` is the whole output counted by the model's
/// counter (`cmp_tokens(output, model)`) and is within the budget.
pub fn assert_accounted(conn: &Connection, out: &str, model: Option<&str>) {
    let (used, tokens) = used_and_budget(out);
    assert!(used <= tokens, "{model:?}: used {used} > tokens {tokens}");
    let counted: i64 =
        conn.query_row("SELECT cmp_tokens(?1, ?2)", params![out, model], |r| r.get(0)).expect("cmp_tokens");
    assert_eq!(used, counted, "{model:?}: used is the whole output's count");
}
