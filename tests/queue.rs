//! The index queue (schema 5): writes queue rows in `cmp_pending`, reads index them first. A read
//! right after a write sees it; a connection that cannot write still finds queued rows, and never a
//! redacted one or another scope's; indexing through the queue ends in the same index, and the same
//! search results, as indexing every write at once (property test over random write sequences).

mod common;

use common::*;
use proptest::prelude::*;
use rusqlite::{Connection, OpenFlags};

fn flush(conn: &Connection) -> i64 {
    conn.query_row("SELECT cmp_flush()", [], |r| r.get(0)).expect("cmp_flush")
}

#[test]
fn a_read_right_after_a_write_sees_it() {
    let conn = open();
    let id = insert_memory(&conn, &Mem::new("Atlas beta opens to partners").entities(&["Priya"]));
    assert_eq!(queued(&conn), 1);
    let hits = search(&conn, "partners beta");
    assert_eq!(refs(&hits).first(), Some(&id));
    assert_eq!(queued(&conn), 0, "the read indexed the queue");
    assert!(search(&conn, "ask priya").iter().any(|h| h.r#ref == id && h.retrievers().contains(&"entity".into())));

    // Inside the writer's own transaction, and gone with it when it rolls back.
    conn.execute_batch("BEGIN").unwrap();
    let late = insert_memory(&conn, &Mem::new("The Heron pilot starts in March"));
    let pack: String = conn
        .query_row("SELECT cmp_context('heron pilot', 'claude', 2000, NULL, ?1)", [now_opts()], |r| r.get(0))
        .unwrap();
    assert!(pack.contains(&late), "{pack}");
    conn.execute_batch("ROLLBACK").unwrap();
    assert_eq!(queued(&conn), 0);
    assert!(search(&conn, "heron pilot").is_empty());
    assert_consistent(&conn);
}

#[test]
fn cmp_flush_indexes_the_queue_and_says_how_many() {
    let conn = open();
    for i in 0..3 {
        insert_memory(&conn, &Mem::new(&format!("note {i} about the Atlas launch")).entities(&["Atlas"]));
    }
    assert_eq!(fts_rows(&conn), 0, "writes queue, they do not index");
    assert_eq!(flush(&conn), 3);
    assert_eq!(flush(&conn), 0);
    assert_eq!(fts_rows(&conn), 3);
    assert_eq!(sql_error(&conn, "SELECT cmp_flush(1)"), "cmp_flush: takes no arguments, got 1 argument");
    assert_consistent(&conn);
}

/// A writer that never loaded cmp, and a store with a redacted row and a row of another scope, all
/// still queued.
fn queued_store(path: &std::path::Path) -> (String, String, String) {
    drop(open_file(path));
    let w = open_plain(path);
    let found = insert_memory(&w, &Mem::new("Atlas beta opens to partners on Monday").entities(&["Atlas"]));
    let secret = insert_memory(&w, &Mem::new("Atlas partners payroll heron secret").redacted());
    let other = insert_memory(&w, &Mem::new("Atlas partners vault note").scope("vault"));
    (found, secret, other)
}

#[test]
fn a_connection_that_cannot_write_finds_queued_rows_by_their_words() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let (found, secret, other) = queued_store(&path);
    let ro = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    cmp::register(&ro).unwrap();
    let hits = search(&ro, "partners beta");
    assert_eq!(refs(&hits), std::slice::from_ref(&found));
    assert!(hits[0].retrievers().contains(&"fts".to_string()));
    assert_eq!(hits[0].matched_terms(), ["beta", "partner"]);
    for task in ["payroll heron secret", "vault note", "atlas partners"] {
        let r = refs(&search(&ro, task));
        assert!(!r.contains(&secret) && !r.contains(&other), "{task}: {r:?}");
    }
    let pack: String = ro
        .query_row("SELECT cmp_context('partners heron vault', NULL, 2000, NULL, ?1)", [now_opts()], |r| r.get(0))
        .unwrap();
    assert!(pack.contains(&found) && !pack.contains("payroll") && !pack.contains("vault note"), "{pack}");
    assert_eq!(queued(&ro), 3, "a read-only connection leaves the queue");
    assert!(sql_error(&ro, "SELECT cmp_flush()").starts_with("cmp_flush: the queued rows cannot be indexed here"));

    // The next connection that can write indexes the queue when it reads.
    let rw = open_file(&path);
    assert_eq!(refs(&search(&rw, "partners beta")), [found]);
    assert_eq!(queued(&rw), 0);
    assert_consistent(&rw);
}

#[test]
fn a_read_while_another_connection_holds_the_write_lock_answers_from_the_queue() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let (found, _, _) = queued_store(&path);
    let holder = open_plain(&path);
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let r = open_file(&path);
    assert_eq!(refs(&search(&r, "partners beta")), std::slice::from_ref(&found));
    assert_eq!(queued(&r), 3, "the lock is held elsewhere: nothing was indexed");
    holder.execute_batch("COMMIT").unwrap();
    assert_eq!(refs(&search(&r, "partners beta")), [found]);
    assert_eq!(queued(&r), 0);
    assert_consistent(&r);
}

// ------------------------------------------------------------------------------- property test

const WORDS: [&str; 8] = ["atlas", "launch", "friday", "pricing", "beta", "survey", "invoice", "venue"];
const NAMES: [&str; 4] = ["Atlas", "Dana", "Priya", "Lee"];

#[derive(Debug, Clone)]
enum Op {
    Insert {
        words: Vec<usize>,
        names: Vec<usize>,
        redacted: bool,
        other_scope: bool,
    },
    Content {
        row: usize,
        words: Vec<usize>,
    },
    Entities {
        row: usize,
        names: Vec<usize>,
    },
    Redact {
        row: usize,
        on: bool,
    },
    Delete {
        row: usize,
    },
    /// `REPLACE INTO` on the row's rid: a new row (new id) takes its place, without its delete trigger.
    Replace {
        row: usize,
        words: Vec<usize>,
    },
    Read,
}

fn op() -> impl Strategy<Value = Op> {
    let words = || proptest::collection::vec(0..WORDS.len(), 1..5);
    let names = || proptest::collection::vec(0..NAMES.len(), 0..3);
    prop_oneof![
        4 => (words(), names(), proptest::bool::weighted(0.2), proptest::bool::weighted(0.2))
            .prop_map(|(words, names, redacted, other_scope)| Op::Insert { words, names, redacted, other_scope }),
        2 => (0..16usize, words()).prop_map(|(row, words)| Op::Content { row, words }),
        1 => (0..16usize, names()).prop_map(|(row, names)| Op::Entities { row, names }),
        1 => (0..16usize, proptest::bool::ANY).prop_map(|(row, on)| Op::Redact { row, on }),
        1 => (0..16usize).prop_map(|row| Op::Delete { row }),
        1 => (0..16usize, words()).prop_map(|(row, words)| Op::Replace { row, words }),
        1 => Just(Op::Read),
    ]
}

fn text(words: &[usize]) -> String {
    words.iter().map(|&w| WORDS[w]).collect::<Vec<_>>().join(" ")
}

fn names_json(names: &[usize]) -> String {
    serde_json::to_string(&names.iter().map(|&n| NAMES[n]).collect::<Vec<_>>()).unwrap()
}

/// Applies `op` with plain SQL; rows are addressed by their position among the live rows.
fn apply(conn: &Connection, op: &Op, n: &mut usize) {
    let rid = |row: usize| -> Option<i64> {
        conn.query_row("SELECT rid FROM cmp_memories ORDER BY rid LIMIT 1 OFFSET ?1", [row as i64], |r| r.get(0)).ok()
    };
    match op {
        Op::Insert { words, names, redacted, other_scope } => {
            *n += 1;
            conn.execute(
                "INSERT INTO cmp_memories(id, content, entities, redacted, scope, captured_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, '2026-05-01T00:00:00Z')",
                rusqlite::params![
                    format!("mem_{:012x}", *n),
                    text(words),
                    names_json(names),
                    *redacted as i64,
                    if *other_scope { "other" } else { "default" }
                ],
            )
            .unwrap();
        }
        Op::Content { row, words } => {
            if let Some(r) = rid(*row) {
                conn.execute("UPDATE cmp_memories SET content = ?1 WHERE rid = ?2", rusqlite::params![text(words), r])
                    .unwrap();
            }
        }
        Op::Entities { row, names } => {
            if let Some(r) = rid(*row) {
                conn.execute(
                    "UPDATE cmp_memories SET entities = ?1 WHERE rid = ?2",
                    rusqlite::params![names_json(names), r],
                )
                .unwrap();
            }
        }
        Op::Redact { row, on } => {
            if let Some(r) = rid(*row) {
                conn.execute("UPDATE cmp_memories SET redacted = ?1 WHERE rid = ?2", rusqlite::params![*on as i64, r])
                    .unwrap();
            }
        }
        Op::Delete { row } => {
            if let Some(r) = rid(*row) {
                conn.execute("DELETE FROM cmp_memories WHERE rid = ?1", [r]).unwrap();
            }
        }
        Op::Replace { row, words } => {
            if let Some(r) = rid(*row) {
                *n += 1;
                conn.execute(
                    "REPLACE INTO cmp_memories(rid, id, content, captured_at) VALUES (?1, ?2, ?3, '2026-05-01T00:00:00Z')",
                    rusqlite::params![r, format!("mem_{:012x}", *n), text(words)],
                )
                .unwrap();
            }
        }
        Op::Read => {
            search(conn, "atlas launch");
        }
    }
}

/// What every task finds: refs in order, with their relevance.
fn answers(conn: &Connection) -> Vec<Vec<(String, Option<f64>)>> {
    let tasks = WORDS.iter().map(|w| w.to_string()).chain(NAMES.iter().map(|n| format!("ask {n}")));
    tasks.map(|t| search(conn, &t).into_iter().map(|h| (h.r#ref, h.relevance)).collect()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Random writes, indexed through the queue only when a read comes, end in the same index as the
    /// same writes indexed one at a time: the FTS5 and pair indexes match their content views, the
    /// entity links match the rows, and every task finds the same memories with the same scores.
    #[test]
    fn the_queue_ends_in_the_index_of_immediate_indexing(ops in proptest::collection::vec(op(), 1..40)) {
        let (lazy, eager) = (open(), open());
        let (mut n1, mut n2) = (0, 0);
        for op in &ops {
            apply(&lazy, op, &mut n1);
            apply(&eager, op, &mut n2);
            flush(&eager);
            assert_eq!(queued(&eager), 0);
        }
        assert_consistent(&lazy);
        assert_consistent(&eager);
        prop_assert_eq!(answers(&lazy), answers(&eager));
    }

    /// A connection that cannot index reads the indexes as they are while written rows wait in the
    /// queue, and the indexes may still hold the text a row had before it changed, was replaced or
    /// deleted (schema 8: the triggers write no index). No match of such a text surfaces: every hit
    /// the word index found holds the word searched for, now, and is neither redacted nor another
    /// scope's.
    #[test]
    fn a_reader_that_cannot_index_never_matches_a_text_a_row_no_longer_holds(
        ops in proptest::collection::vec(op(), 1..30)
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.db");
        let w = open_file(&path);
        let ro = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        cmp::register(&ro).unwrap();
        let mut n = 0;
        for op in &ops {
            apply(&w, op, &mut n);
            for word in WORDS {
                for h in search(&ro, word) {
                    let (content, redacted, scope): (String, i64, String) = w
                        .query_row("SELECT content, redacted, scope FROM cmp_memories WHERE id = ?1", [&h.r#ref], |r| {
                            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                        })
                        .unwrap();
                    prop_assert!(redacted == 0 && scope == "default", "{word}: {h:?}");
                    if h.retrievers().contains(&"fts".to_string()) {
                        prop_assert!(content.contains(word), "{word} matched {content:?} after {op:?}");
                    }
                }
            }
        }
        assert_consistent(&w);
    }
}
