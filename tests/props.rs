//! Property tests of `cmp_search` over random stores (two scopes, some redacted rows) and arbitrary
//! tasks, including FTS5 syntax and Chinese words (which the character-pair index and the bridge
//! retriever read): it never errors, never returns a redacted row or a row of another
//! scope, and a redacted row changes nothing in what the others return.

mod common;

use common::*;
use proptest::prelude::*;
use rusqlite::Connection;
use serde_json::json;

const WORDS: &[&str] = &[
    "atlas",
    "launch",
    "launches",
    "dana",
    "lee",
    "priya",
    "budget",
    "venue",
    "friday",
    "pricing",
    "review",
    "café",
    "naïve",
    "🚀",
    "the",
    "of",
    "secret",
    "北京",
    "出差",
    "设计总监",
    "项目启动会",
    "参加",
];
const SYNTAX: &[&str] = &[
    "AND",
    "OR",
    "NOT",
    "NEAR",
    "NEAR(",
    "NEAR/2",
    "\"",
    "\"\"",
    "*",
    "(",
    ")",
    ":",
    "content:",
    "content :",
    "{content}:",
    "^",
    "-",
    "+",
    "'",
    "\u{0}",
    "\\",
    "%",
    ",",
    ";",
    "--",
];
const ENTITIES: &[&str] = &["Atlas", "Dana", "Lee", "Priya Shah", "Secret Project", "🚀"];
const SCOPES: [&str; 2] = ["default", "work"];

#[derive(Debug, Clone)]
struct Row {
    words: Vec<&'static str>,
    entities: Vec<&'static str>,
    work: bool,
    redacted: bool,
    embedding: Option<(f32, f32)>,
    day: u8,
}

fn row() -> impl Strategy<Value = Row> {
    (
        prop::collection::vec(prop::sample::select(WORDS), 1..8),
        prop::collection::vec(prop::sample::select(ENTITIES), 0..3),
        any::<bool>(),
        prop::bool::weighted(0.3),
        prop::option::of((-1.0f32..1.0, -1.0f32..1.0)),
        1u8..=28,
    )
        .prop_map(|(words, entities, work, redacted, embedding, day)| Row {
            words,
            entities,
            work,
            redacted,
            embedding,
            day,
        })
}

fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(WORDS).prop_map(String::from),
        prop::sample::select(SYNTAX).prop_map(String::from),
        prop::sample::select(ENTITIES).prop_map(String::from),
        "[a-zA-Z]{1,6}\\*?",
    ]
}

fn task() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        prop::collection::vec(token(), 0..12).prop_map(|t| t.join(" ")),
        prop::collection::vec(token(), 0..8).prop_map(|t| t.concat()),
    ]
}

#[derive(Debug, Clone)]
struct Call {
    task: String,
    work: bool,
    embedding: Option<(f32, f32)>,
    as_of_day: Option<u8>,
}

fn call() -> impl Strategy<Value = Call> {
    (task(), any::<bool>(), prop::option::of((-1.0f32..1.0, -1.0f32..1.0)), prop::option::of(1u8..=28))
        .prop_map(|(task, work, embedding, as_of_day)| Call { task, work, embedding, as_of_day })
}

fn build(rows: &[Row]) -> Connection {
    let conn = open();
    for r in rows {
        let mut m = Mem::new(&r.words.join(" "))
            .entities(&r.entities)
            .scope(SCOPES[usize::from(r.work)])
            .captured_at(&format!("2026-05-{:02}T12:00:00Z", r.day));
        if r.redacted {
            m = m.redacted();
        }
        if let Some((x, y)) = r.embedding {
            m = m.embedding(&[x, y]);
        }
        insert_memory(&conn, &m);
    }
    conn
}

fn options(c: &Call) -> String {
    let mut o = json!({"now": NOW, "scope": SCOPES[usize::from(c.work)]});
    if let Some((x, y)) = c.embedding {
        o["query_embedding"] = json!([x, y]);
    }
    if let Some(d) = c.as_of_day {
        o["as_of"] = json!(format!("2026-05-{d:02}T00:00:00Z"));
    }
    o.to_string()
}

fn run(conn: &Connection, c: &Call) -> Result<Vec<Hit>, TestCaseError> {
    try_search(conn, &c.task, Some(&options(c)))
        .map_err(|e| TestCaseError::fail(format!("cmp_search({:?}, {}) failed: {e}", c.task, options(c))))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn search_never_errors_nor_leaks(
        rows in prop::collection::vec(row(), 1..24),
        calls in prop::collection::vec(call(), 1..6),
    ) {
        let conn = build(&rows);
        let mut before = Vec::new();
        for c in &calls {
            let hits = run(&conn, c)?;
            let scope = SCOPES[usize::from(c.work)];
            let mut seen = std::collections::HashSet::new();
            for h in &hits {
                let (row_scope, redacted): (String, i64) = conn
                    .query_row(
                        "SELECT scope, redacted FROM cmp_memories WHERE id = ?1",
                        [&h.r#ref],
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )
                    .map_err(|e| TestCaseError::fail(format!("ref {} not in the store: {e}", h.r#ref)))?;
                prop_assert_eq!(&row_scope, scope, "row of another scope returned");
                prop_assert_eq!(redacted, 0, "redacted row returned");
                prop_assert!(seen.insert(h.r#ref.clone()), "{} returned twice", h.r#ref);
                if let Some(r) = h.relevance {
                    prop_assert!((0.0..=1.0).contains(&r), "relevance {}", r);
                }
            }
            before.push(hits);
        }
        // Redacted rows are in no index: removing them changes nothing the others return.
        conn.execute("DELETE FROM cmp_memories WHERE redacted <> 0", []).unwrap();
        for (c, hits) in calls.iter().zip(&before) {
            prop_assert_eq!(&run(&conn, c)?, hits, "a redacted row shifted results of {:?}", c.task);
        }
    }
}
