//! Writes that would not last fail loudly. A session turn (or a pin, a reset, a schema creation) on a database that cannot durably
//! take the write must fail with an error naming the fix, never answer as if the turn were stored:
//! on a libSQL (sqld) read replica the write would land on the local copy and vanish at the next
//! replicated change (tests/cluster/run.sh shows it against real sqld servers). Reads without a session
//! keep working there, and give the same bytes as on a writable copy.

mod common;

use common::*;
use rusqlite::{Connection, OpenFlags};
use std::path::Path;

const TASK: &str = "when does Atlas ship?";

fn seed(path: &Path) {
    let conn = open_file(path);
    conn.execute(
        "INSERT INTO cmp_memories(id, content, entities, captured_at) VALUES ('mem_000000000001', 'Atlas ships on Friday', '[\"Atlas\"]', ?1)",
        [CAPTURED],
    )
    .unwrap();
}

fn context(conn: &Connection, sid: Option<&str>, opts: &str) -> rusqlite::Result<String> {
    conn.query_row("SELECT cmp_context(?1, 'gpt', 500, ?2, ?3)", rusqlite::params![TASK, sid, opts], |r| r.get(0))
}

fn message(e: rusqlite::Error) -> String {
    e.to_string()
}

fn registered(conn: Connection) -> Connection {
    cmp::register(&conn).unwrap();
    conn
}

#[test]
fn sqld_replica_refuses_session_turns_pins_and_resets() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("data");
    seed(&db);
    let primary = registered(Connection::open(&db).unwrap());
    let before = context(&primary, None, &now_opts()).unwrap();
    // What sqld keeps beside a replica's database file.
    std::fs::write(dir.path().join("client_wal_index"), b"").unwrap();
    let replica = registered(Connection::open(&db).unwrap());

    let e = message(context(&replica, Some("s1"), &now_opts()).unwrap_err());
    assert!(e.starts_with("cmp_context: session \"s1\" cannot be stored here: "), "{e}");
    assert!(e.contains("sqld") && e.contains("read replica") && e.contains("on the primary"), "{e}");
    let e = message(context(&replica, None, &format!(r#"{{"now":"{NOW}","pin":true}}"#)).unwrap_err());
    assert!(e.starts_with("cmp_context: the pin (pin: true) cannot be stored here: "), "{e}");
    let e = message(replica.query_row("SELECT cmp_session_reset('s1')", [], |r| r.get::<_, i64>(0)).unwrap_err());
    assert!(e.starts_with("cmp_session_reset: session \"s1\" cannot be reset here: "), "{e}");
    // Nothing was written.
    let n: i64 = replica.query_row("SELECT count(*) FROM cmp_sessions", [], |r| r.get(0)).unwrap();
    assert_eq!(n, 0);

    // Session-less reads still work, byte for byte as before.
    assert_eq!(context(&replica, None, &now_opts()).unwrap(), before);
    let q: String = replica
        .query_row("SELECT cmp_query(?1)", [format!(r#"{{"find":"atlas","now":"{NOW}"}}"#)], |r| r.get(0))
        .unwrap();
    assert!(q.contains("mem_000000000001"), "{q}");
    let x: String = replica.query_row("SELECT cmp_expand('mem_000000000001')", [], |r| r.get(0)).unwrap();
    assert!(x.contains("Atlas ships on Friday"), "{x}");
}

#[test]
fn sqld_replica_refuses_to_create_the_schema_but_reports_a_current_one() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("data");
    std::fs::write(dir.path().join("client_wal_index"), b"").unwrap();
    let empty = registered(Connection::open(&db).unwrap());
    let e = message(empty.query_row("SELECT cmp_init()", [], |r| r.get::<_, i64>(0)).unwrap_err());
    assert!(e.starts_with("cmp_init: the schema needs creating or upgrading, which cannot be done here: "), "{e}");
    assert!(e.contains("sqld") && e.ends_with("run it on the primary"), "{e}");
    let n: i64 = empty.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0)).unwrap();
    assert_eq!(n, 0, "nothing was created");

    std::fs::remove_file(dir.path().join("client_wal_index")).unwrap();
    seed(&db);
    std::fs::write(dir.path().join("client_wal_index"), b"").unwrap();
    let replica = registered(Connection::open(&db).unwrap());
    let v: i64 = replica.query_row("SELECT cmp_init()", [], |r| r.get(0)).unwrap();
    assert!(v >= 2, "an up-to-date schema needs no write: cmp_init reports it");
}

#[test]
fn primary_layout_takes_session_turns() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("data");
    seed(&db);
    // sqld's primary keeps a `wallog` there: no marker of a replica.
    std::fs::write(dir.path().join("wallog"), b"").unwrap();
    let conn = registered(Connection::open(&db).unwrap());
    let pack = context(&conn, Some("s1"), &now_opts()).unwrap();
    assert!(pack.contains("mem_000000000001"), "{pack}");
    let turn: i64 = conn.query_row("SELECT turn FROM cmp_sessions WHERE session_id = 's1'", [], |r| r.get(0)).unwrap();
    assert_eq!(turn, 1);
}

#[test]
fn read_only_database_and_query_only_refuse_session_turns() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("memories.db");
    seed(&db);
    let ro = registered(Connection::open_with_flags(&db, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap());
    let e = message(context(&ro, Some("s1"), &now_opts()).unwrap_err());
    assert!(e.starts_with("cmp_context: session \"s1\" cannot be stored here: the database is open read-only"), "{e}");
    assert!(context(&ro, None, &now_opts()).unwrap().contains("mem_000000000001"));

    let conn = registered(Connection::open(&db).unwrap());
    conn.execute_batch("PRAGMA query_only = ON").unwrap();
    let e = message(context(&conn, Some("s1"), &now_opts()).unwrap_err());
    assert!(e.contains("PRAGMA query_only is on"), "{e}");
    conn.execute_batch("PRAGMA query_only = OFF").unwrap();
    assert!(context(&conn, Some("s1"), &now_opts()).is_ok());
}

#[test]
fn in_memory_databases_take_session_turns() {
    let conn = open();
    assert!(context(&conn, Some("s1"), &now_opts()).is_ok());
}
