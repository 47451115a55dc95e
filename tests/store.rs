//! The store: schema, triggers and migrations. Every write path keeps the FTS5 index and the entity
//! tables in step with `cmp_memories`, whether the writer loaded cmp or is plain SQLite; ids are
//! generated; `cmp_init()` is idempotent, upgrades a version-1 file in place, repairs a schema object
//! dropped by hand and refuses a newer one.

mod common;

use common::*;
use rusqlite::{params, Connection};

/// True when cmp_search(task) returns `id` with `retriever` among its `why.retrievers`.
fn found_by(r: &Connection, task: &str, id: &str, retriever: &str) -> bool {
    search(r, task).iter().any(|h| h.r#ref == id && h.retrievers().iter().any(|x| x == retriever))
}

/// True when cmp_search(task, scope) returns `id` at all.
fn returned(r: &Connection, task: &str, scope: &str, id: &str) -> bool {
    search_with(r, task, &scope_opts(scope)).iter().any(|h| h.r#ref == id)
}

/// Every write path, made on `w`, checked on `w` (plain SQL) and on the registered `r`.
fn write_paths(w: &Connection, r: &Connection) {
    let check = || {
        assert_consistent(w);
        assert_consistent(r);
    };

    // INSERT: indexed, linked, retrievable by a word and by an entity that no word names.
    let a = insert_memory(w, &Mem::new("The Atlas launch moved to Friday").entities(&["Atlas", "Priya"]));
    let b = insert_memory(w, &Mem::new("Dana owns the pricing page").entities(&["dana", " Atlas "]));
    check();
    assert_eq!(fts_rows(r), 2);
    assert_eq!(linked_entities(r, &a), ["atlas", "priya"]);
    assert_eq!(linked_entities(r, &b), ["atlas", "dana"]);
    assert!(fts_finds(r, "friday", &a));
    assert!(found_by(r, "when is friday", &a, "fts"));
    assert!(found_by(r, "ask priya", &a, "entity"));
    assert!(!found_by(r, "ask priya", &a, "fts"));

    // UPDATE content: the old words leave the index, the new ones enter it.
    w.execute("UPDATE cmp_memories SET content = 'The Atlas launch moved to Monday' WHERE id = ?1", [&a]).unwrap();
    check();
    assert!(!fts_finds(r, "friday", &a));
    assert!(fts_finds(r, "monday", &a));
    assert!(!found_by(r, "friday", &a, "fts"));
    assert!(found_by(r, "monday", &a, "fts"));

    // UPDATE entities: links follow; an entity nobody names any more disappears.
    w.execute("UPDATE cmp_memories SET entities = '[\"Atlas\",\"Lee\"]' WHERE id = ?1", [&a]).unwrap();
    check();
    assert_eq!(linked_entities(r, &a), ["atlas", "lee"]);
    let priya: i64 = r.query_row("SELECT count(*) FROM cmp_entities WHERE norm = 'priya'", [], |x| x.get(0)).unwrap();
    assert_eq!(priya, 0, "an entity no memory names is removed");
    assert!(!found_by(r, "ask priya", &a, "entity"));
    assert!(found_by(r, "ask lee", &a, "entity"));

    // Malformed or non-array entities link nothing, and do not fail the write.
    for raw in ["not json", "{\"a\":1}", "[1, null, \"\"]", "\"Atlas\""] {
        w.execute("UPDATE cmp_memories SET entities = ?1 WHERE id = ?2", params![raw, a]).unwrap();
        check();
        assert!(linked_entities(r, &a).is_empty(), "{raw}");
    }
    w.execute("UPDATE cmp_memories SET entities = NULL WHERE id = ?1", [&a]).unwrap();
    check();
    w.execute("UPDATE cmp_memories SET entities = '[\"Atlas\",\"Lee\"]' WHERE id = ?1", [&a]).unwrap();
    check();

    // UPDATE kind: visible in results; indexes untouched.
    w.execute("UPDATE cmp_memories SET kind = 'decision' WHERE id = ?1", [&a]).unwrap();
    check();
    let hit = search(r, "monday").into_iter().find(|h| h.r#ref == a).expect("a is found");
    assert_eq!(hit.kind, "decision");

    // UPDATE scope: the row moves to the other scope's reads.
    w.execute("UPDATE cmp_memories SET scope = 'work' WHERE id = ?1", [&a]).unwrap();
    check();
    assert!(!returned(r, "monday atlas", "default", &a));
    assert!(returned(r, "monday atlas", "work", &a));
    w.execute("UPDATE cmp_memories SET scope = 'default' WHERE id = ?1", [&a]).unwrap();
    check();

    // Redact: out of the FTS index and the entity tables, never returned, whatever the task.
    w.execute("UPDATE cmp_memories SET redacted = 1 WHERE id = ?1", [&a]).unwrap();
    check();
    assert_eq!(fts_rows(r), 1);
    assert!(linked_entities(r, &a).is_empty());
    for task in ["monday", "atlas launch", "ask lee", ""] {
        assert!(!returned(r, task, "default", &a), "{task:?}");
    }
    // Editing a redacted row keeps it out of every index.
    w.execute("UPDATE cmp_memories SET content = 'Monday it is', entities = '[\"Zed\"]' WHERE id = ?1", [&a]).unwrap();
    check();
    assert!(!fts_finds(r, "monday", &a));
    assert!(!returned(r, "monday zed", "default", &a));

    // Unredact: back in every index, with its current content and entities.
    w.execute("UPDATE cmp_memories SET redacted = 0 WHERE id = ?1", [&a]).unwrap();
    check();
    assert_eq!(fts_rows(r), 2);
    assert_eq!(linked_entities(r, &a), ["zed"]);
    assert!(found_by(r, "monday", &a, "fts"));
    assert!(found_by(r, "what about zed", &a, "entity"));

    // A row inserted already redacted is never indexed.
    let c = insert_memory(w, &Mem::new("Secret salary numbers for Dana").entities(&["Dana", "Payroll"]).redacted());
    check();
    assert_eq!(fts_rows(r), 2);
    assert!(!fts_finds(r, "salary", &c));
    assert!(!returned(r, "salary payroll dana", "default", &c));
    let payroll: i64 =
        r.query_row("SELECT count(*) FROM cmp_entities WHERE norm = 'payroll'", [], |x| x.get(0)).unwrap();
    assert_eq!(payroll, 0, "a redacted row creates no entity");

    // Content and redaction changed in one statement.
    w.execute("UPDATE cmp_memories SET content = 'Salary bands are public now', redacted = 0 WHERE id = ?1", [&c])
        .unwrap();
    check();
    assert!(fts_finds(r, "bands", &c));
    assert!(!fts_finds(r, "secret", &c));

    // Changing the integer key moves the index entries with the row.
    w.execute("UPDATE cmp_memories SET rid = rid + 1000 WHERE id = ?1", [&c]).unwrap();
    check();
    assert!(fts_finds(r, "bands", &c));
    assert_eq!(linked_entities(r, &c), ["dana", "payroll"]);

    // DELETE: gone from every index; entities only it named are gone too.
    w.execute("DELETE FROM cmp_memories WHERE id = ?1", [&c]).unwrap();
    check();
    assert!(!fts_finds(r, "bands", &c));
    assert!(!returned(r, "salary bands payroll", "default", &c));
    let left: Vec<String> = r
        .prepare("SELECT norm FROM cmp_entities ORDER BY norm")
        .unwrap()
        .query_map([], |x| x.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(left, ["atlas", "dana", "zed"]);

    // Delete a redacted row, then everything.
    let d = insert_memory(w, &Mem::new("Hidden note").entities(&["Ghost"]).redacted());
    w.execute("DELETE FROM cmp_memories WHERE id = ?1", [&d]).unwrap();
    check();
    w.execute("DELETE FROM cmp_memories", []).unwrap();
    check();
    assert_eq!(fts_rows(r), 0);
    let n: i64 = r.query_row("SELECT count(*) FROM cmp_entities", [], |x| x.get(0)).unwrap();
    assert_eq!(n, 0);
    assert!(search(r, "atlas").is_empty());
}

#[test]
fn write_paths_keep_indexes_in_step() {
    let conn = open();
    write_paths(&conn, &conn);
}

/// `INSERT OR REPLACE` (also `REPLACE INTO`, and `UPDATE OR REPLACE`) deletes the row it conflicts
/// with (on `id` or `rid`) without running its delete trigger unless the writing connection has
/// `PRAGMA recursive_triggers = ON` (SQLite's rule, off by default): that row's word and pair index
/// entries and entity links stayed behind, FTS5's integrity check failed, and the row that took the
/// old rid was found by the old row's words, across scopes (a red-team pass). Schema 7 unindexes the
/// row before the write ([`replace_paths`] below covers each path); here, with the pragma on or off,
/// and through an UPSERT, every index stays in step and nothing of the replaced row is found.
#[test]
fn replace_keeps_every_index_in_step_with_or_without_recursive_triggers() {
    let replace = |conn: &Connection, recursive: bool| {
        conn.pragma_update(None, "recursive_triggers", recursive).unwrap();
        let a = insert_memory(conn, &Mem::new("Priya's diagnosis is private").entities(&["Priya"]));
        let b = insert_memory(conn, &Mem::new("Lee books the venue").entities(&["Lee"]));
        conn.query_row("SELECT cmp_flush()", [], |_| Ok(())).unwrap();
        let rid_b: i64 = conn.query_row("SELECT rid FROM cmp_memories WHERE id = ?1", [&b], |r| r.get(0)).unwrap();
        conn.execute(
            "INSERT OR REPLACE INTO cmp_memories(id, content, captured_at) VALUES (?1, 'Nothing to see', ?2)",
            params![a, CAPTURED],
        )
        .unwrap();
        conn.execute(
            "REPLACE INTO cmp_memories(rid, content, scope, captured_at) VALUES (?1, 'The weather is mild', 'other', ?2)",
            params![rid_b, CAPTURED],
        )
        .unwrap();
        let c = insert_memory(conn, &Mem::new("Dana signs the payroll").entities(&["Dana"]));
        conn.query_row("SELECT cmp_flush()", [], |_| Ok(())).unwrap();
        conn.execute("UPDATE OR REPLACE cmp_memories SET id = ?1 WHERE id = ?2", params![c, a]).unwrap();
        rid_b
    };
    let conn = open();
    let rid_b = replace(&conn, true);
    assert_consistent(&conn);
    let other = search_with(&conn, "venue", &scope_opts("other"));
    assert!(other.is_empty(), "the replaced row's words are gone: {other:?}");

    // An UPSERT is an UPDATE: its triggers run whatever the pragma.
    let conn = open();
    conn.pragma_update(None, "recursive_triggers", false).unwrap();
    let a = insert_memory(&conn, &Mem::new("Priya's diagnosis is private").entities(&["Priya"]));
    conn.query_row("SELECT cmp_flush()", [], |_| Ok(())).unwrap();
    conn.execute(
        "INSERT INTO cmp_memories(id, content, captured_at) VALUES (?1, 'Nothing to see', ?2)
         ON CONFLICT(id) DO UPDATE SET content = excluded.content, entities = NULL",
        params![a, CAPTURED],
    )
    .unwrap();
    assert_consistent(&conn);
    assert!(search(&conn, "diagnosis").is_empty());

    // Without the pragma: the same.
    let conn = open();
    assert_eq!(replace(&conn, false), rid_b);
    assert_consistent(&conn);
    let other = search_with(&conn, "venue", &scope_opts("other"));
    assert!(other.is_empty(), "the replaced row's words are gone: {other:?}");
}

#[test]
fn write_paths_from_a_connection_without_cmp() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let registered = open_file(&path);
    let plain = open_plain(&path);
    let has_cmp: i64 = plain
        .query_row(
            "SELECT count(*) FROM pragma_function_list WHERE name = 'cmp_search' OR name = 'cmp_init'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(has_cmp, 0, "the plain connection must not know cmp");
    write_paths(&plain, &registered);

    // A fresh registered connection sees what the plain one wrote.
    let id = insert_memory(&plain, &Mem::new("Atlas beta opens to partners").entities(&["Atlas"]));
    drop(plain);
    drop(registered);
    let reader = open_file(&path);
    assert_consistent(&reader);
    assert!(found_by(&reader, "partners beta", &id, "fts"));
    assert!(found_by(&reader, "atlas", &id, "entity"));
}

fn is_hex_id(id: &str, prefix: &str) -> bool {
    id.len() == prefix.len() + 12
        && id.starts_with(prefix)
        && id[prefix.len()..].bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn generated_ids(conn: &Connection) {
    let implicit: String = conn
        .query_row(
            "INSERT INTO cmp_memories(content, captured_at) VALUES ('implicit id', ?1) RETURNING rid",
            [CAPTURED],
            |r| r.get::<_, i64>(0),
        )
        .and_then(|rid| conn.query_row("SELECT id FROM cmp_memories WHERE rid = ?1", [rid], |r| r.get(0)))
        .unwrap();
    assert!(is_hex_id(&implicit, "mem_"), "{implicit}");
    let explicit_null = insert_memory(conn, &Mem::new("explicit NULL id"));
    assert!(is_hex_id(&explicit_null, "mem_"), "{explicit_null}");
    let given = insert_memory(conn, &Mem::new("given id").id("mem_0123456789ab"));
    assert_eq!(given, "mem_0123456789ab");
    conn.execute("UPDATE cmp_memories SET id = NULL WHERE id = 'mem_0123456789ab'", []).unwrap();
    let regenerated: String =
        conn.query_row("SELECT id FROM cmp_memories WHERE content = 'given id'", [], |r| r.get(0)).unwrap();
    assert!(is_hex_id(&regenerated, "mem_"), "{regenerated}");
    let nulls: i64 = conn.query_row("SELECT count(*) FROM cmp_memories WHERE id IS NULL", [], |r| r.get(0)).unwrap();
    assert_eq!(nulls, 0);
    let many: Vec<String> = (0..200).map(|i| insert_memory(conn, &Mem::new(&format!("row {i}")))).collect();
    let mut distinct = many.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), many.len(), "generated ids collide");
    assert!(many.iter().all(|id| is_hex_id(id, "mem_")));

    conn.execute("INSERT INTO cmp_tasks(title) VALUES ('Ship Atlas')", []).unwrap();
    conn.execute("INSERT INTO cmp_tasks(id, title) VALUES (NULL, 'Email Dana')", []).unwrap();
    let mut st = conn.prepare("SELECT id, status, scope FROM cmp_tasks ORDER BY title").unwrap();
    let tasks: Vec<(Option<String>, String, String)> =
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap().collect::<rusqlite::Result<_>>().unwrap();
    assert_eq!(tasks.len(), 2);
    for (id, status, scope) in &tasks {
        let id = id.as_deref().expect("task id generated");
        assert!(is_hex_id(id, "task_"), "{id}");
        assert_eq!(status, "open");
        assert_eq!(scope, "default");
    }
    assert_consistent(conn);
}

#[test]
fn ids_are_generated() {
    generated_ids(&open());
}

#[test]
fn ids_are_generated_without_cmp() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ids.db");
    drop(open_file(&path));
    generated_ids(&open_plain(&path));
}

#[test]
fn schema_checks_kind() {
    let conn = open();
    let e = conn.execute("INSERT INTO cmp_memories(content, kind) VALUES ('x', 'gossip')", []).unwrap_err().to_string();
    assert!(e.contains("CHECK constraint failed"), "{e}");
    for kind in ["semantic", "episodic", "style", "decision", "preference", "negative", "procedural"] {
        insert_memory(&conn, &Mem::new("fine").kind(kind));
    }
    assert_consistent(&conn);
}

fn objects(conn: &Connection) -> Vec<(String, String)> {
    conn.prepare("SELECT type, name FROM sqlite_master ORDER BY type, name")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap()
}

fn meta(conn: &Connection, key: &str) -> String {
    conn.query_row("SELECT value FROM cmp_meta WHERE key = ?1", [key], |r| r.get(0)).unwrap()
}

#[test]
fn init_is_idempotent() {
    let conn = open();
    let id = insert_memory(&conn, &Mem::new("Atlas ships on Friday").entities(&["Atlas"]));
    let before = objects(&conn);
    let (db_id, secret) = (meta(&conn, "db_id"), meta(&conn, "secret"));
    let hits = search(&conn, "atlas friday");
    assert_eq!(init(&conn), 8);
    assert_eq!(init(&conn), 8);
    assert_eq!(objects(&conn), before);
    assert_eq!(meta(&conn, "schema_version"), "8");
    assert_eq!(meta(&conn, "db_id"), db_id);
    assert_eq!(meta(&conn, "secret"), secret);
    assert_eq!(search(&conn, "atlas friday"), hits);
    assert_eq!(refs(&hits), [id]);
    assert_consistent(&conn);
}

/// `cmp_init()` repairs a store that lost part of its schema (an object dropped by hand, a full-text
/// index's shadow table, a row of `cmp_meta`), damaged by another connection: the object comes back,
/// every row is indexed again where the loss could touch an index, and the store answers as before;
/// on a connection that cannot write it fails naming what is missing.
#[test]
fn init_repairs_a_schema_object_dropped_by_hand() {
    let mut damage: Vec<(String, &str)> = [
        ("DROP TABLE cmp_pending", "cmp_pending"),
        ("DROP TABLE cmp_stale", "cmp_stale"),
        // Lost while it held a changed row's old text (entries the index still held).
        (
            "UPDATE cmp_memories SET content = 'Dana owns the pricing page and the budget' WHERE content LIKE 'Dana%';
             DROP TABLE cmp_stale",
            "cmp_stale",
        ),
        ("DROP VIEW cmp_memories_indexed", "cmp_memories_indexed"),
        ("DROP TABLE cmp_entities", "cmp_entities"),
        ("DROP TABLE cmp_memory_entities", "cmp_memory_entities"),
        ("DROP TABLE cmp_positions", "cmp_positions"),
        ("DROP TABLE cmp_sessions", "cmp_sessions"),
        ("DROP VIEW cmp_memories_indexable", "cmp_memories_indexable"),
        ("DROP VIEW cmp_memories_grams", "cmp_memories_grams"),
        ("DROP TRIGGER cmp_memories_ai", "cmp_memories_ai"),
        ("DROP INDEX cmp_memories_scope_time", "cmp_memories_scope_time"),
        ("DELETE FROM cmp_meta WHERE key = 'secret'", "cmp_meta.secret"),
    ]
    .iter()
    .map(|(sql, name)| (sql.to_string(), *name))
    .collect();
    for index in ["cmp_memories_fts", "cmp_memories_ngram"] {
        damage.push((format!("DROP TABLE {index}"), index));
        for shadow in ["data", "idx", "docsize", "config"] {
            damage.push((format!("DROP TABLE {index}_{shadow}"), index));
        }
    }
    let tasks = ["atlas friday", "北京出差", "ask priya"];
    for (i, (sql, name)) in damage.iter().enumerate() {
        let path = std::env::temp_dir().join(format!("cmp-repair-{}-{i}.db", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let conn = open_file(&path);
        insert_memory(&conn, &Mem::new("Atlas ships on Friday").entities(&["Atlas", "Priya"]));
        insert_memory(&conn, &Mem::new("我下周二要去北京出差，住三天。"));
        insert_memory(&conn, &Mem::new("Dana owns the pricing page").entities(&["Dana"]));
        let before: Vec<_> = tasks.iter().map(|t| search(&conn, t)).collect();
        assert!(before.iter().all(|h| !h.is_empty()), "{sql}: every task finds something");
        drop(conn);
        // The damage, by a connection without cmp; then a write made while the object is missing
        // (where it can be made), which the repair indexes too.
        let plain = Connection::open(&path).unwrap();
        plain.execute_batch(sql).unwrap();
        let late = plain
            .execute(
                "INSERT INTO cmp_memories(id, content, captured_at)
                 VALUES ('mem_00000000a7e0', 'Atlas retro on Friday afternoon', '2026-05-01T00:00:00Z')",
                [],
            )
            .ok()
            .map(|_| "mem_00000000a7e0".to_string());
        drop(plain);
        let ro = Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        cmp::register(&ro).unwrap();
        let e = sql_error(&ro, "SELECT cmp_init()");
        assert!(e.starts_with("cmp_init: the cmp schema is damaged (missing: ") && e.contains(name), "{sql}: {e}");
        drop(ro);
        let conn = open_file(&path);
        assert_consistent(&conn);
        assert_eq!(queued(&conn), 0, "{sql}: indexed at once");
        for (t, hits) in tasks.iter().zip(&before) {
            let now = search(&conn, t);
            let late_hit = late.as_ref().is_some_and(|l| now.iter().any(|h| &h.r#ref == l));
            assert_eq!(now.len() - usize::from(late_hit), hits.len(), "{sql}: {t}");
            assert!(refs(hits).iter().all(|r| refs(&now).contains(r)), "{sql}: {t}");
        }
        if let Some(l) = &late {
            assert!(refs(&search(&conn, "atlas retro")).contains(l), "{sql}: the late write is found");
        }
        insert_memory(&conn, &Mem::new("Lee reviews the budget"));
        assert!(!search(&conn, "lee budget").is_empty(), "{sql}: writes work after the repair");
        assert_consistent(&conn);
        drop(conn);
        let _ = std::fs::remove_file(&path);
    }
}

/// A dropped `cmp_memories` takes its rows with it: `cmp_init()` makes the store usable again, empty.
#[test]
fn init_repairs_a_store_whose_memory_table_was_dropped() {
    let conn = open();
    insert_memory(&conn, &Mem::new("Atlas ships on Friday").entities(&["Atlas"]));
    conn.execute_batch("DROP TABLE cmp_memories").unwrap();
    assert_eq!(init(&conn), 8);
    assert_consistent(&conn);
    assert!(search(&conn, "atlas friday").is_empty());
    let id = insert_memory(&conn, &Mem::new("Atlas ships on Monday").entities(&["Atlas"]));
    assert_eq!(refs(&search(&conn, "atlas monday")), [id]);
    assert_consistent(&conn);
}

#[test]
fn search_before_init_says_so() {
    let conn = Connection::open_in_memory().unwrap();
    cmp::register(&conn).unwrap();
    let e = sql_error(&conn, "SELECT * FROM cmp_search('atlas')");
    assert!(e.starts_with("cmp_search: the cmp schema is missing; run SELECT cmp_init()"), "{e}");
    assert_integrity(&conn);
}

#[test]
fn upgrades_a_version_1_database_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.db");
    let ids: Vec<String> = {
        let old = open_plain(&path);
        old.execute_batch(include_str!("fixtures/schema_v1.sql")).unwrap();
        let ids = vec![
            insert_memory(&old, &Mem::new("Atlas launch is on Friday").entities(&["Atlas", "Dana"])),
            insert_memory(&old, &Mem::new("Never email customers on weekends").kind("negative")),
            insert_memory(&old, &Mem::new("Salary of Lee").redacted()),
            insert_memory(
                &old,
                &Mem::new("Dana prefers short status updates").kind("preference").entities(&["Dana"]).scope("work"),
            ),
        ];
        old.execute("INSERT INTO cmp_tasks(title) VALUES ('Book the venue')", []).unwrap();
        assert_consistent(&old);
        ids
    };

    let conn = Connection::open(&path).unwrap();
    cmp::register(&conn).unwrap();
    let debug: String = conn.query_row("SELECT cmp_debug()", [], |r| r.get(0)).unwrap();
    assert!(debug.contains("schema 1"), "{debug}");
    assert_eq!(init(&conn), 8);
    assert_eq!(meta(&conn, "schema_version"), "8");
    let names: Vec<String> = objects(&conn).into_iter().map(|o| o.1).collect();
    for want in ["cmp_sessions", "cmp_pins", "cmp_memories_scope_time"] {
        assert!(names.iter().any(|n| n == want), "{want} missing after upgrade");
    }
    let kept: Vec<String> = conn
        .prepare("SELECT id FROM cmp_memories ORDER BY rid")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(kept, ids);
    let tasks: i64 = conn.query_row("SELECT count(*) FROM cmp_tasks", [], |r| r.get(0)).unwrap();
    assert_eq!(tasks, 1);

    let hits = search(&conn, "when is the atlas launch");
    assert_eq!(hits[0].r#ref, ids[0]);
    assert!(hits[0].retrievers().contains(&"fts".to_string()));
    assert!(!refs(&hits).contains(&ids[2]), "redacted row surfaced");
    let work = search_with(&conn, "dana", &scope_opts("work"));
    assert_eq!(refs(&work), [ids[3].clone()]);
    assert_consistent(&conn);

    // Upgraded once: a second open is a no-op (a read-only connection's cmp_init() finds every view and
    // trigger as this build creates it, so there is nothing to repair).
    drop(conn);
    let ro = Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    cmp::register(&ro).unwrap();
    assert_eq!(ro.query_row("SELECT cmp_init()", [], |r| r.get::<_, i64>(0)).unwrap(), 8);
    drop(ro);
    let again = open_file(&path);
    assert_eq!(init(&again), 8);
    assert_consistent(&again);
}

/// Version 6 only replaced the two triggers that mark a change of the entity set (and version 7 only
/// added two): a version-5 store is read as it is, and `cmp_init()` upgrades it to the random marks.
#[test]
fn a_version_5_store_is_read_as_it_is_and_upgraded_by_init() {
    let conn = open();
    let id = insert_memory(&conn, &Mem::new("Atlas ships on Friday").entities(&["Atlas"]));
    conn.execute_batch(
        "DROP TRIGGER cmp_entities_ai; DROP TRIGGER cmp_entities_ad;
         CREATE TRIGGER cmp_entities_ai AFTER INSERT ON cmp_entities BEGIN
           UPDATE cmp_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'entity_gen';
         END;
         CREATE TRIGGER cmp_entities_ad AFTER DELETE ON cmp_entities BEGIN
           UPDATE cmp_meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'entity_gen';
         END;
         UPDATE cmp_meta SET value = '5' WHERE key = 'schema_version';",
    )
    .unwrap();
    let version_5 = objects(&conn);
    assert_eq!(refs(&search(&conn, "atlas")), [id]);
    let dana = insert_memory(&conn, &Mem::new("Signs off on launches").entities(&["Dana"]));
    let hits = search(&conn, "what does dana do");
    assert!(hits.iter().any(|h| h.r#ref == dana && h.retrievers().contains(&"entity".to_string())), "{hits:?}");
    assert_eq!(objects(&conn), version_5, "a read changes no object");
    assert_eq!(init(&conn), 8);
    let trigger: String =
        conn.query_row("SELECT sql FROM sqlite_master WHERE name = 'cmp_entities_ai'", [], |r| r.get(0)).unwrap();
    assert!(trigger.contains("random()"), "{trigger}");
    assert_consistent(&conn);
}

#[test]
fn refuses_a_newer_schema() {
    let conn = open();
    let id = insert_memory(&conn, &Mem::new("Atlas ships on Friday"));
    conn.execute("UPDATE cmp_meta SET value = '99' WHERE key = 'schema_version'", []).unwrap();
    let before = objects(&conn);
    let e = sql_error(&conn, "SELECT cmp_init()");
    assert!(e.starts_with("cmp_init: database schema version 99"), "{e}");
    assert!(e.contains("(8)"), "names this build's version: {e}");
    assert_eq!(meta(&conn, "schema_version"), "99");
    assert_eq!(objects(&conn), before);
    let n: i64 = conn.query_row("SELECT count(*) FROM cmp_memories WHERE id = ?1", [&id], |r| r.get(0)).unwrap();
    assert_eq!(n, 1);
    assert_integrity(&conn);
}

fn seed_for_vacuum(conn: &Connection) -> Vec<String> {
    let words = ["atlas", "launch", "pricing", "dana", "lee", "priya", "budget", "venue", "friday", "beta"];
    let mut ids = Vec::new();
    for i in 0..60 {
        let content = format!(
            "{} {} {} note {i}",
            words[i % words.len()],
            words[(i * 3 + 1) % words.len()],
            words[(i * 7 + 2) % words.len()]
        );
        let mut m = Mem::new(&content)
            .entities(&[words[(i * 5) % words.len()]])
            .occurred_at(&format!("2026-04-{:02}T10:00:00Z", 1 + i % 28));
        if i % 11 == 0 {
            m = m.redacted();
        }
        if i % 2 == 0 {
            m = m.embedding(&[i as f32, 1.0, (60 - i) as f32]);
        }
        ids.push(insert_memory(conn, &m));
    }
    // Holes in the rowid sequence: what VACUUM would renumber if the key were implicit.
    conn.execute("DELETE FROM cmp_memories WHERE rid % 4 = 0 OR rid < 5", []).unwrap();
    ids
}

fn snapshot(conn: &Connection) -> Vec<Vec<Hit>> {
    let tasks = ["atlas launch", "pricing budget for dana", "what happened recently", "", "priya venue friday beta"];
    let mut out: Vec<Vec<Hit>> = tasks.iter().map(|t| search(conn, t)).collect();
    out.push(search_with(
        conn,
        "note",
        &serde_json::json!({"now": NOW, "query_embedding": [1.0, 0.5, 0.0]}).to_string(),
    ));
    out
}

#[test]
fn vacuum_keeps_search_results() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("vacuum.db");
    let conn = open_file(&path);
    seed_for_vacuum(&conn);
    let before = snapshot(&conn);
    assert!(before.iter().all(|hits| !hits.is_empty()));
    conn.execute_batch("VACUUM").unwrap();
    assert_eq!(snapshot(&conn), before);
    assert_consistent(&conn);

    // A copy made with VACUUM INTO answers the same.
    let copy = dir.path().join("copy.db");
    conn.execute("VACUUM INTO ?1", [copy.to_str().unwrap()]).unwrap();
    let other = open_file(&copy);
    assert_eq!(snapshot(&other), before);
    assert_consistent(&other);
}

#[test]
fn search_on_an_unmigrated_database_asks_for_init() {
    let conn = Connection::open_in_memory().unwrap();
    conn.execute_batch(include_str!("fixtures/schema_v1.sql")).unwrap();
    cmp::register(&conn).unwrap();
    insert_memory(&conn, &Mem::new("Atlas ships on Friday"));
    let e = try_search(&conn, "atlas", Some(&now_opts())).unwrap_err();
    assert!(e.starts_with("cmp_search: "), "{e}");
    assert!(e.contains("cmp_init()"), "{e}");
}

/// Every way to REPLACE a row, made by `w`, leaves no index entry or entity link of the replaced
/// row behind (SQLite runs no delete trigger for a row a REPLACE deletes unless
/// `recursive_triggers` is on): a row that takes the replaced row's rid is not found by its words,
/// not even from another scope, and every index agrees with the rows (schema 7, a red-team pass).
/// The writes that do not replace (refused, ignored, upserted) keep the old row findable.
fn replace_paths(w: &Connection, r: &Connection) {
    let check = || {
        assert_consistent(w);
        assert_consistent(r);
    };
    // INSERT OR REPLACE by id; then a row that takes the replaced row's rid.
    insert_memory(w, &Mem::new("Lee books the venue").entities(&["Lee"]));
    let last = insert_memory(w, &Mem::new("Priya's diagnosis is private, 北京 clinic").entities(&["Priya"]));
    check();
    let old_rid: i64 = w.query_row("SELECT rid FROM cmp_memories WHERE id = ?1", [&last], |x| x.get(0)).unwrap();
    w.execute(
        "INSERT OR REPLACE INTO cmp_memories(id, content, entities, captured_at)
         VALUES (?1, 'The weather is mild', '[\"Dana\"]', '2026-05-01T00:00:00Z')",
        [&last],
    )
    .unwrap();
    check();
    let taker: String = w
        .query_row("INSERT INTO cmp_memories(rid, content, captured_at) VALUES (?1, 'Tea at five', '2026-05-01T00:00:00Z') RETURNING id", [old_rid], |x| {
            x.get(0)
        })
        .unwrap();
    check();
    for (task, id) in [("diagnosis", &last), ("diagnosis", &taker), ("北京", &taker), ("private priya", &taker)] {
        assert!(!returned(r, task, "default", id), "{task} found {id}");
    }
    assert!(returned(r, "weather", "default", &last));
    assert!(returned(r, "tea five", "default", &taker));
    assert_eq!(linked_entities(r, &last), ["dana"]);
    assert!(linked_entities(r, &taker).is_empty());

    // REPLACE INTO naming a row's rid, into another scope: nothing of the old row reaches it.
    let secret = insert_memory(w, &Mem::new("Kai's salary is confidential").entities(&["Kai"]));
    check();
    let rid: i64 = w.query_row("SELECT rid FROM cmp_memories WHERE id = ?1", [&secret], |x| x.get(0)).unwrap();
    w.execute("REPLACE INTO cmp_memories(rid, content, scope, captured_at) VALUES (?1, 'Lunch is at noon', 'other', '2026-05-01T00:00:00Z')", [rid])
        .unwrap();
    check();
    let other: String = w.query_row("SELECT id FROM cmp_memories WHERE rid = ?1", [rid], |x| x.get(0)).unwrap();
    assert!(!returned(r, "salary confidential", "other", &other));
    assert!(returned(r, "lunch noon", "other", &other));

    // UPDATE OR REPLACE taking another row's id: that row goes with its entries.
    let a = insert_memory(w, &Mem::new("Atlas ships on Friday").entities(&["Atlas"]));
    let b = insert_memory(w, &Mem::new("Orion moved to Berlin").entities(&["Orion"]));
    check();
    w.execute("UPDATE OR REPLACE cmp_memories SET id = ?1 WHERE id = ?2", [&a, &b]).unwrap();
    check();
    assert!(!returned(r, "atlas ships friday", "default", &a));
    assert!(returned(r, "orion berlin", "default", &a));

    // Refused (a plain INSERT, OR FAIL) and ignored writes keep the row as it was, findable.
    for sql in ["INSERT INTO", "INSERT OR FAIL INTO", "INSERT OR ABORT INTO", "INSERT OR IGNORE INTO"] {
        let _ = w.execute(
            &format!(
                "{sql} cmp_memories(id, content, captured_at) VALUES (?1, 'Something else', '2026-05-01T00:00:00Z')"
            ),
            [&a],
        );
        check();
        assert!(returned(r, "orion berlin", "default", &a), "{sql}");
        assert!(!returned(r, "something else", "default", &a), "{sql}");
    }
    // An UPSERT updates in place.
    w.execute(
        "INSERT INTO cmp_memories(id, content, captured_at) VALUES (?1, 'Orion moved to Lisbon', '2026-05-01T00:00:00Z')
         ON CONFLICT(id) DO UPDATE SET content = excluded.content",
        [&a],
    )
    .unwrap();
    check();
    assert!(returned(r, "lisbon", "default", &a));
    assert!(!returned(r, "berlin", "default", &a));
}

#[test]
fn replace_leaves_nothing_of_the_replaced_row() {
    let conn = open();
    replace_paths(&conn, &conn);
}

#[test]
fn replace_from_a_connection_without_cmp_leaves_nothing_of_the_replaced_row() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let registered = open_file(&path);
    let plain = open_plain(&path);
    replace_paths(&plain, &registered);
}

/// A trigger's statements take the conflict policy of the statement that fired them when it names
/// one: the triggers that queue a rid must not rely on `INSERT OR IGNORE`, or `INSERT OR ABORT` at the
/// rid of a deleted row (still queued) would fail.
#[test]
fn a_write_that_names_its_conflict_policy_is_not_refused_by_the_queue() {
    let conn = open();
    for policy in ["OR ABORT", "OR FAIL", "OR ROLLBACK", "OR REPLACE", "OR IGNORE", ""] {
        let id = insert_memory(&conn, &Mem::new("Atlas ships on Friday"));
        let rid: i64 = conn.query_row("SELECT rid FROM cmp_memories WHERE id = ?1", [&id], |r| r.get(0)).unwrap();
        conn.query_row("SELECT cmp_flush()", [], |_| Ok(())).unwrap();
        conn.execute("DELETE FROM cmp_memories WHERE rid = ?1", [rid]).unwrap();
        conn.execute(
            &format!(
                "INSERT {policy} INTO cmp_memories(rid, content, captured_at)
                 VALUES (?1, 'Heron pilot in March', '2026-05-01T00:00:00Z')"
            ),
            [rid],
        )
        .unwrap_or_else(|e| panic!("INSERT {policy}: {e}"));
        conn.execute(&format!("UPDATE {policy} cmp_memories SET content = 'Heron pilot in May' WHERE rid = ?1"), [rid])
            .unwrap_or_else(|e| panic!("UPDATE {policy}: {e}"));
        assert_eq!(refs(&search(&conn, "heron pilot")).len(), 1, "{policy}");
        assert!(search(&conn, "atlas friday").is_empty(), "{policy}");
        conn.execute("DELETE FROM cmp_memories", []).unwrap();
        assert_consistent(&conn);
    }
}

/// Schema 8: no trigger writes a full-text index or calls a JSON function. SQLite 3.40 (Debian 12's
/// library) refuses both in a trigger under `PRAGMA trusted_schema = OFF`, and its FTS5 left a
/// connection's next read on an old snapshot after a refused statement had written the index
/// (`tests/system_sqlite.py` checks both against the system library).
#[test]
fn no_trigger_writes_an_index_or_reads_json() {
    let conn = open();
    let mut st = conn.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'").unwrap();
    let triggers: Vec<(String, String)> =
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().collect::<Result<_, _>>().unwrap();
    assert!(triggers.len() >= 8, "{triggers:?}");
    for (name, sql) in triggers {
        for word in ["cmp_memories_fts", "cmp_memories_ngram", "cmp_memories_grams", "json"] {
            assert!(!sql.contains(word), "{name} names {word}");
        }
    }
    conn.pragma_update(None, "trusted_schema", false).unwrap();
    let id = insert_memory(&conn, &Mem::new("Atlas ships on Friday").entities(&["Atlas"]));
    conn.execute(
        "REPLACE INTO cmp_memories(id, content, captured_at) VALUES (?1, 'Atlas ships on Monday', '2026-05-01T00:00:00Z')",
        [&id],
    )
    .unwrap();
    assert_eq!(refs(&search(&conn, "atlas monday")), [id]);
    conn.execute("DELETE FROM cmp_memories", []).unwrap();
    assert_consistent(&conn);
}

/// A TEMP table takes the place of a main table of the same name in a statement that does not name
/// its schema. The application's own TEMP tables named like cmp's (a scratch `cmp_pending`, a copy of
/// `cmp_memories`) change nothing cmp writes or reads: every statement of cmp names `main`.
#[test]
fn temp_tables_named_like_cmps_change_nothing() {
    let plain = open();
    let shadowed = open();
    shadowed
        .execute_batch(
            "CREATE TEMP TABLE cmp_pending(rid INTEGER PRIMARY KEY);
             CREATE TEMP TABLE cmp_stale(rid INTEGER PRIMARY KEY, content TEXT);
             CREATE TEMP TABLE cmp_meta(key TEXT PRIMARY KEY, value TEXT);
             INSERT INTO temp.cmp_meta VALUES ('secret', 'not the secret'), ('schema_version', '99');
             CREATE TEMP TABLE cmp_memories(rid INTEGER PRIMARY KEY, id TEXT, content TEXT, scope TEXT);
             INSERT INTO temp.cmp_memories VALUES (1, 'mem_0000000decoy', 'Atlas decoy in temp', 'default');
             CREATE TEMP TABLE cmp_sessions(session_id TEXT, scope TEXT, turn INT, cursor INT, state TEXT, updated_at TEXT);
             CREATE TEMP TABLE cmp_entities(id INTEGER PRIMARY KEY, name TEXT, norm TEXT UNIQUE);
             CREATE TEMP TABLE cmp_memory_entities(entity_id INT, rid INT);",
        )
        .unwrap();
    let opts = now_opts();
    let answers = |conn: &Connection| -> Vec<String> {
        let mut out = Vec::new();
        for i in 0..4 {
            conn.execute(
                "INSERT INTO main.cmp_memories(id, content, entities, captured_at)
                 VALUES (?1, ?2, '[\"Atlas\",\"Priya\"]', '2026-05-01T00:00:00Z')",
                [format!("mem_00000000b00{i}"), format!("Atlas launch note {i} with Priya")],
            )
            .unwrap();
        }
        conn.execute(
            "UPDATE main.cmp_memories SET content = 'Atlas moved to Lisbon' WHERE id = 'mem_00000000b001'",
            [],
        )
        .unwrap();
        conn.execute("DELETE FROM main.cmp_memories WHERE id = 'mem_00000000b002'", []).unwrap();
        out.push(format!("{:?}", refs(&search(conn, "atlas lisbon"))));
        out.push(format!("{:?}", refs(&search(conn, "ask priya"))));
        let pack: String =
            conn.query_row("SELECT cmp_context('atlas launch', 'gpt', 1000, 's1', ?1)", [&opts], |r| r.get(0)).unwrap();
        let v: serde_json::Value = serde_json::from_str(&pack).unwrap();
        let items: Vec<String> =
            v["items"].as_array().unwrap().iter().map(|i| i["ref"].as_str().unwrap_or("").to_string()).collect();
        out.push(format!("{items:?}"));
        let turns: i64 = conn.query_row("SELECT count(*) FROM main.cmp_sessions", [], |r| r.get(0)).unwrap();
        out.push(format!("sessions {turns}"));
        out
    };
    let want = answers(&plain);
    assert_eq!(answers(&shadowed), want);
    assert!(!want[0].contains("decoy"));
    let temp_rows: i64 = shadowed
        .query_row(
            "SELECT (SELECT count(*) FROM temp.cmp_pending) + (SELECT count(*) FROM temp.cmp_sessions)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(temp_rows, 0, "cmp wrote nothing into the application's TEMP tables");
    for t in
        ["cmp_pending", "cmp_stale", "cmp_meta", "cmp_memories", "cmp_sessions", "cmp_entities", "cmp_memory_entities"]
    {
        shadowed.execute_batch(&format!("DROP TABLE temp.{t}")).unwrap();
    }
    assert_consistent(&shadowed);
}

/// `cmp_init()` also repairs a view or trigger replaced by hand with another of the same name: a queue
/// trigger that queues nothing, a content view that lets redacted rows into the word index.
#[test]
fn init_repairs_a_view_or_trigger_replaced_by_hand() {
    let damage = [
        (
            "cmp_memories_ai",
            "DROP TRIGGER cmp_memories_ai;
             CREATE TRIGGER cmp_memories_ai AFTER INSERT ON cmp_memories BEGIN SELECT 1; END;",
        ),
        (
            "cmp_memories_indexed",
            "DROP VIEW cmp_memories_indexed;
             CREATE VIEW cmp_memories_indexed AS SELECT rid, content FROM cmp_memories;",
        ),
    ];
    for (i, (name, sql)) in damage.iter().enumerate() {
        let path = std::env::temp_dir().join(format!("cmp-changed-{}-{i}.db", std::process::id()));
        let _ = std::fs::remove_file(&path);
        drop(open_file(&path));
        let plain = open_plain(&path);
        plain.execute_batch(sql).unwrap();
        plain
            .execute_batch(
                "INSERT INTO cmp_memories(id, content, captured_at)
                 VALUES ('mem_00000000c001', 'Atlas ships on Friday', '2026-05-01T00:00:00Z');
                 INSERT INTO cmp_memories(id, content, redacted, captured_at)
                 VALUES ('mem_00000000c002', 'Orion payroll secret', 1, '2026-05-01T00:00:00Z');",
            )
            .unwrap();
        drop(plain);
        let ro = Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        cmp::register(&ro).unwrap();
        let e = sql_error(&ro, "SELECT cmp_init()");
        assert!(e.starts_with("cmp_init: the cmp schema is damaged (changed: ") && e.contains(name), "{e}");
        drop(ro);
        let conn = open_file(&path);
        assert_consistent(&conn);
        assert_eq!(refs(&search(&conn, "atlas friday")), ["mem_00000000c001"], "{name}");
        assert!(search(&conn, "orion payroll").is_empty(), "{name}");
        assert_eq!(fts_rows(&conn), 1, "{name}: only the row that may surface is indexed");
        let sql_now: String =
            conn.query_row("SELECT sql FROM sqlite_master WHERE name = ?1", [name], |r| r.get(0)).unwrap();
        assert!(!sql_now.contains("SELECT 1;") && sql_now.contains("cmp_pending"), "{name}: {sql_now}");
        drop(conn);
        let _ = std::fs::remove_file(&path);
    }
}
