//! What `cmp_search` returns: scope and redaction walls, time travel, the retrievers and their
//! provenance (`why`), user embeddings, and hostile or malformed input.

mod common;

use common::*;
use rusqlite::Connection;
use serde_json::json;

fn opts(v: serde_json::Value) -> String {
    v.to_string()
}

/// Whether an entity named in the task is common (many memories name it) is judged on the reader's
/// own scope: rows of another scope naming it change nothing a reader of this scope gets. (Counted
/// over every scope, 21 rows elsewhere switched the entity retriever off here: a reader could learn
/// whether another scope holds more than 20 rows about a name.)
#[test]
fn another_scopes_rows_do_not_make_an_entity_common_here() {
    let conn = open();
    let mine =
        insert_memory(&conn, &Mem::new("Runs the beta survey every Monday.").kind("procedural").entities(&["Priya"]));
    let before = search(&conn, "Anything from Priya?");
    assert_eq!(refs(&before), std::slice::from_ref(&mine));
    for n in [21, 400] {
        for i in 0..n {
            insert_memory(&conn, &Mem::new(&format!("unrelated note {n}.{i}")).entities(&["Priya"]).scope("other"));
        }
        let after = search(&conn, "Anything from Priya?");
        assert_eq!(refs(&after), refs(&before), "{n} rows in another scope");
        assert_eq!(after[0].why, before[0].why, "{n} rows in another scope");
    }
    // In its own scope the same count does make it common (the rule itself is unchanged).
    for i in 0..30 {
        insert_memory(&conn, &Mem::new(&format!("another note {i}")).entities(&["Priya"]));
    }
    let mixed = search(&conn, "Anything from Priya?");
    let why_of_mine = mixed.iter().find(|h| h.r#ref == mine).map(|h| h.why.clone());
    assert_ne!(why_of_mine, Some(before[0].why.clone()), "30 rows of its own scope make Priya common");
}

/// Whether an entity is common is judged against the size of the store (10 % of its memories, past
/// 20 links). That size counted redacted rows (a store of one scope took its largest rid, a shared
/// one its scope's rows): 150 redacted rows next to 200 rows, 25 of which name Priya, raised the
/// threshold from 20 to 30 links, Priya turned selective, and "Anything from Priya?" found 25 rows
/// it found none of before (a red-team pass), so redacted rows shifted results and a reader could
/// count them. The size is now the count of rows that are not redacted.
#[test]
fn redacted_rows_do_not_make_an_entity_selective() {
    for shared in [false, true] {
        let build = |redacted: usize| -> Connection {
            let conn = open();
            for i in 0..200 {
                let names: &[&str] = if i < 25 { &["Priya"] } else { &[] };
                let m = Mem::new(&format!("note number {i} about things")).id(&format!("mem_{i:012x}"));
                insert_memory(&conn, &m.entities(names));
            }
            for i in 0..redacted {
                let m = Mem::new(&format!("hidden note {i}")).id(&format!("mem_f{i:011x}"));
                insert_memory(&conn, &m.entities(&["Vault"]).redacted());
            }
            if shared {
                insert_memory(&conn, &Mem::new("a row of another scope").id("mem_eeeeeeeeeeee").scope("other"));
            }
            conn
        };
        let (plain, with_redacted) = (build(0), build(150));
        for task in ["Anything from Priya?", "note about things", ""] {
            assert_eq!(search(&with_redacted, task), search(&plain, task), "{task:?}, another scope: {shared}");
        }
    }
}

#[test]
fn scopes_are_isolated() {
    let conn = open();
    let mut home = Vec::new();
    let mut work = Vec::new();
    for i in 0..5 {
        home.push(insert_memory(
            &conn,
            &Mem::new(&format!("Atlas launch checklist item {i}")).entities(&["Atlas", "Dana"]),
        ));
        work.push(insert_memory(
            &conn,
            &Mem::new(&format!("Atlas launch checklist item {i}"))
                .entities(&["Atlas", "Lee"])
                .scope("work")
                .embedding(&[1.0, 0.0]),
        ));
    }
    let work_only =
        insert_memory(&conn, &Mem::new("Quarterly numbers for the board").entities(&["Orion"]).scope("work"));
    for task in ["atlas launch checklist", "ask dana", "ask lee", "orion", "quarterly numbers board", ""] {
        for h in search(&conn, task) {
            assert!(home.contains(&h.r#ref), "{task:?}: {} from another scope", h.r#ref);
        }
        for h in search_with(&conn, task, &scope_opts("work")) {
            assert!(work.contains(&h.r#ref) || h.r#ref == work_only, "{task:?}: {} from another scope", h.r#ref);
        }
    }
    // An entity known only in `work` brings nothing into `default`.
    assert!(!search(&conn, "orion").iter().any(|h| h.r#ref == work_only));
    assert!(search_with(&conn, "orion", &scope_opts("work"))
        .iter()
        .any(|h| h.r#ref == work_only && h.retrievers().contains(&"entity".to_string())));
    // User embeddings are confined too.
    let v = search_with(&conn, "", &opts(json!({"now": NOW, "query_embedding": [1.0, 0.0]})));
    assert!(v.iter().all(|h| home.contains(&h.r#ref)));
    // A scope nobody wrote to is empty.
    assert!(search_with(&conn, "atlas", &scope_opts("nobody")).is_empty());
}

#[test]
fn redacted_rows_never_surface() {
    let conn = open();
    let keep = insert_memory(&conn, &Mem::new("Atlas launch budget is approved").entities(&["Atlas"]));
    let secret = insert_memory(
        &conn,
        &Mem::new("Atlas launch budget secret: Dana's salary")
            .entities(&["Atlas", "Dana"])
            .occurred_at("2026-05-30T00:00:00Z")
            .embedding(&[0.0, 1.0])
            .redacted(),
    );
    conn.execute(
        "UPDATE cmp_memories SET embedding = ?1 WHERE id = ?2",
        rusqlite::params![f32_blob(&[1.0, 0.0]), keep],
    )
    .unwrap();
    for (task, o) in [
        ("atlas launch budget secret salary", now_opts()),
        ("dana", now_opts()),
        ("", now_opts()),
        ("salary", opts(json!({"now": NOW, "query_embedding": [0.0, 1.0]}))),
        ("dana salary", opts(json!({"now": NOW, "as_of": "2026-05-31T00:00:00Z"}))),
    ] {
        let hits = search_with(&conn, task, &o);
        assert!(!refs(&hits).contains(&secret), "{task:?} {o}");
        assert!(hits.iter().all(|h| !h.content.contains("salary")));
    }
}

#[test]
fn a_redacted_row_shifts_nothing() {
    let build = |with_secret: bool| -> Connection {
        let conn = open();
        for (i, c) in [
            "Atlas launch budget is approved",
            "Atlas launch moved to Friday",
            "Dana reviews the launch budget",
            "Lee books the venue",
        ]
        .iter()
        .enumerate()
        {
            insert_memory(
                &conn,
                &Mem::new(c)
                    .id(&format!("mem_00000000000{i}"))
                    .entities(&["Atlas"])
                    .occurred_at(&format!("2026-05-0{}T00:00:00Z", i + 1)),
            );
        }
        if with_secret {
            insert_memory(
                &conn,
                &Mem::new("launch launch budget budget Atlas Dana Lee venue")
                    .entities(&["Secret Project", "Atlas"])
                    .occurred_at("2026-05-31T00:00:00Z")
                    .redacted(),
            );
        }
        conn
    };
    let (plain, with_secret) = (build(false), build(true));
    for task in ["launch budget", "atlas", "secret project", "lee venue", ""] {
        assert_eq!(search(&with_secret, task), search(&plain, task), "{task:?}");
    }
}

#[test]
fn superseded_rows_only_before_they_were_superseded() {
    let conn = open();
    let new = insert_memory(
        &conn,
        &Mem::new("Decision: the Atlas launch is on Monday").kind("decision").captured_at("2026-05-10T00:00:00Z"),
    );
    let old = insert_memory(
        &conn,
        &Mem::new("Decision: the Atlas launch is on Friday")
            .kind("decision")
            .captured_at("2026-04-01T00:00:00Z")
            .superseded(&new, "2026-05-10T00:00:00Z"),
    );
    let task = "when is the atlas launch";
    let now = refs(&search(&conn, task));
    assert!(now.contains(&new) && !now.contains(&old), "{now:?}");
    let before = refs(&search_with(&conn, task, &opts(json!({"now": NOW, "as_of": "2026-05-01T00:00:00Z"}))));
    assert!(before.contains(&old), "as_of before superseded_at: {before:?}");
    assert!(!before.contains(&new), "captured after as_of: {before:?}");
    let after = refs(&search_with(&conn, task, &opts(json!({"now": NOW, "as_of": "2026-05-20T00:00:00Z"}))));
    assert!(after.contains(&new) && !after.contains(&old), "{after:?}");
    // `now` alone (no as_of) is the read point too.
    let early = refs(&search_with(&conn, task, &opts(json!({"now": "2026-05-05T00:00:00Z"}))));
    assert_eq!(early, std::slice::from_ref(&old));

    // Superseded with no time: superseded at every read point.
    let undated = insert_memory(
        &conn,
        &Mem::new("Decision: the Atlas launch is on Sunday").kind("decision").captured_at("2026-03-01T00:00:00Z"),
    );
    conn.execute("UPDATE cmp_memories SET superseded_by = ?1 WHERE id = ?2", [&new, &undated]).unwrap();
    for o in [now_opts(), opts(json!({"now": NOW, "as_of": "2026-03-02T00:00:00Z"}))] {
        assert!(!refs(&search_with(&conn, "sunday atlas", &o)).contains(&undated), "{o}");
    }
}

#[test]
fn rows_captured_after_now_are_not_returned() {
    let conn = open();
    let later = insert_memory(&conn, &Mem::new("Atlas launch postponed").captured_at("2026-07-01T00:00:00Z"));
    let earlier = insert_memory(&conn, &Mem::new("Atlas launch planned"));
    let at_now = refs(&search(&conn, "atlas launch"));
    assert_eq!(at_now, std::slice::from_ref(&earlier));
    let empty = refs(&search(&conn, ""));
    assert!(!empty.contains(&later));
    let in_august = refs(&search_with(&conn, "atlas launch", &opts(json!({"now": "2026-08-01T00:00:00Z"}))));
    assert!(in_august.contains(&later) && in_august.contains(&earlier));
    let as_of = refs(&search_with(
        &conn,
        "atlas launch",
        &opts(json!({"now": "2026-08-01T00:00:00Z", "as_of": "2026-06-15T00:00:00Z"})),
    ));
    assert_eq!(as_of, [earlier]);
}

#[test]
fn entity_links_retrieve_without_a_word_match() {
    let conn = open();
    let linked = insert_memory(&conn, &Mem::new("Runs the quarterly budget review").entities(&["Priya Shah"]));
    for i in 0..12 {
        // Newer rows, so the linked one is not among the recency candidates.
        insert_memory(
            &conn,
            &Mem::new(&format!("Unrelated note {i}")).occurred_at(&format!("2026-05-{:02}T00:00:00Z", 10 + i)),
        );
    }
    let hits = search(&conn, "What should I ask priya shah?");
    let h = hits.iter().find(|h| h.r#ref == linked).expect("entity-linked memory returned");
    assert_eq!(h.retrievers(), ["entity"]);
    assert!(h.matched_terms().is_empty());
    assert!(h.relevance.is_some_and(|r| r > 0.0 && r <= 1.0));
    assert_eq!(h.fused_rank, Some(1));
    assert_eq!(h.entities, ["Priya Shah"]);
    // Entity names match case- and accent-insensitively, but only as whole names.
    assert!(refs(&search(&conn, "PRIYA SHÁH")).contains(&linked));
    assert!(!refs(&search(&conn, "priya")).contains(&linked));
}

/// The entity gazetteer is cached by the entity set's generation. A transaction that added an
/// entity, was read (building the gazetteer with it) and rolled back, then another entity added
/// under the same generation number, must not leave the rolled-back name recognised and the new
/// one not.
#[test]
fn a_rolled_back_entity_leaves_no_stale_name() {
    let conn = open();
    let with = |name: &str, n: usize| {
        for i in 0..n {
            insert_memory(&conn, &Mem::new(&format!("Filler note {i} about the weather")));
        }
        insert_memory(&conn, &Mem::new("Shipping notes").entities(&[name]))
    };
    with("Walter", 12);
    assert!(!search(&conn, "what did walter ship?").is_empty());
    conn.execute_batch("BEGIN").expect("begin");
    let gone = with("Xavier", 0);
    assert!(refs(&search(&conn, "what did xavier ship?")).contains(&gone));
    conn.execute_batch("ROLLBACK").expect("rollback");
    let new = with("Yolanda", 0);
    let for_yolanda = search(&conn, "what did yolanda ship?");
    let h = for_yolanda.iter().find(|h| h.r#ref == new).expect("the new entity is recognised");
    assert!(h.retrievers().contains(&"entity".to_string()), "{:?}", h.retrievers());
    assert!(
        !search(&conn, "what did xavier ship?").iter().any(|h| h.retrievers().contains(&"entity".to_string())),
        "the rolled-back name links to nothing"
    );
}

#[test]
fn recency_only_rows_have_no_relevance() {
    let conn = open();
    for i in 0..3 {
        insert_memory(
            &conn,
            &Mem::new(&format!("Standup notes day {i}"))
                .kind("episodic")
                .occurred_at(&format!("2026-05-2{i}T09:00:00Z")),
        );
    }
    // An unrelated task gets no recency rows: the newest memories are offered only to a task about
    // what is recent, or an empty one.
    assert!(search(&conn, "zebra").is_empty());
    for task in ["", "what happened recently?", "any zebra news"] {
        let hits = search(&conn, task);
        assert_eq!(hits.len(), 3, "{task:?}");
        for h in &hits {
            assert_eq!(h.retrievers(), ["recency"], "{task:?}");
            assert_eq!(h.relevance, None);
            assert_eq!(h.relevance_basis, None);
            assert_eq!(h.fused_rank, None);
        }
        let when: Vec<&str> = hits.iter().map(|h| h.occurred_at.as_str()).collect();
        assert_eq!(when, ["2026-05-22T09:00:00Z", "2026-05-21T09:00:00Z", "2026-05-20T09:00:00Z"], "newest first");
    }
}

#[test]
fn fused_rows_come_first_and_are_ranked() {
    let conn = open();
    for i in 0..15 {
        let c = if i % 3 == 0 { format!("Atlas launch task {i}") } else { format!("Grocery list {i}") };
        insert_memory(&conn, &Mem::new(&c).occurred_at(&format!("2026-05-{:02}T00:00:00Z", i + 1)));
    }
    let hits = search(&conn, "atlas launch");
    let fused: Vec<&Hit> = hits.iter().filter(|h| h.fused_rank.is_some()).collect();
    assert_eq!(fused.len(), 5);
    for (i, h) in hits.iter().enumerate() {
        if i < fused.len() {
            assert_eq!(h.fused_rank, Some(i as i64 + 1));
            let r = h.relevance.expect("fused rows carry relevance");
            assert!((0.0..=1.0).contains(&r));
            assert!(h.relevance_basis.is_some());
            assert!(h.content.starts_with("Atlas"));
        } else {
            assert_eq!(h.fused_rank, None, "recency-only rows come last");
        }
    }
    let rel: Vec<f64> = fused.iter().filter_map(|h| h.relevance).collect();
    assert!(rel.windows(2).all(|w| w[0] >= w[1]), "{rel:?}");
    // Same store, same arguments, same now: same rows.
    assert_eq!(search(&conn, "atlas launch"), hits);
}

#[test]
fn matched_terms_are_porter_stems() {
    let conn = open();
    let id = insert_memory(&conn, &Mem::new("Atlas launch"));
    let hits = search(&conn, "atlas launches");
    let h = hits.iter().find(|h| h.r#ref == id).expect("matched");
    assert_eq!(h.matched_terms(), ["atla", "launch"]);
    assert_eq!(h.retrievers()[0], "fts");
    let id2 = insert_memory(&conn, &Mem::new("We are launching the readiness review"));
    let hits = search(&conn, "launched readiness reviews");
    let h = hits.iter().find(|h| h.r#ref == id2).expect("matched");
    assert_eq!(h.matched_terms(), ["launch", "readi", "review"]);
}

#[test]
fn query_embedding_ranks_by_cosine() {
    let conn = open();
    let a = insert_memory(&conn, &Mem::new("north").embedding(&[1.0, 0.0, 0.0]));
    let b = insert_memory(&conn, &Mem::new("north-east").embedding(&[0.8, 0.6, 0.0]));
    let c = insert_memory(&conn, &Mem::new("up").embedding(&[0.0, 0.0, 1.0]));
    // The literal layout: float32 little-endian, 1.0 = 0x3f800000.
    conn.execute(
        "INSERT INTO cmp_memories(content, captured_at, embedding)
         VALUES ('east', ?1, x'000000000000803f00000000')",
        [CAPTURED],
    )
    .unwrap();
    let _no_embedding = insert_memory(&conn, &Mem::new("nothing stored"));
    let hits = search_with(&conn, "", &opts(json!({"now": NOW, "query_embedding": [2.0, 0.0, 0.0]})));
    let vector: Vec<&Hit> = hits.iter().filter(|h| h.retrievers().contains(&"vector".to_string())).collect();
    assert_eq!(vector[0].r#ref, a);
    assert_eq!(vector[1].r#ref, b);
    assert_eq!(vector[0].relevance_basis.as_deref(), Some("cosine"));
    assert!((vector[0].relevance.unwrap() - 1.0).abs() < 1e-6);
    assert!((vector[1].relevance.unwrap() - 0.8).abs() < 1e-6);
    assert_eq!(vector[0].fused_rank, Some(1));
    let east = search_with(&conn, "", &opts(json!({"now": NOW, "query_embedding": [0.0, 1.0, 0.0]})));
    assert_eq!(east[0].content, "east");
    assert!((east[0].relevance.unwrap() - 1.0).abs() < 1e-6);
    let up = search_with(&conn, "", &opts(json!({"now": NOW, "query_embedding": [0.0, 0.1, 1.0]})));
    assert_eq!(up[0].r#ref, c);

    // With a matching word too, fts and vector are fused.
    let both = search_with(&conn, "north", &opts(json!({"now": NOW, "query_embedding": [1.0, 0.0, 0.0]})));
    for top in &both[..2] {
        assert!(top.r#ref == a || top.r#ref == b, "{both:?}");
        assert_eq!(top.retrievers()[..2], ["fts", "vector"]);
        assert_eq!(top.relevance_basis.as_deref(), Some("rrf"));
    }

    // Rows of another dimension are skipped while some row matches...
    insert_memory(&conn, &Mem::new("flat").embedding(&[1.0, 0.0]));
    assert_eq!(search_with(&conn, "", &opts(json!({"now": NOW, "query_embedding": [1.0, 0.0, 0.0]})),)[0].r#ref, a);
    // ...and a query no stored embedding matches is an error naming both dimensions.
    let e = try_search(&conn, "north", Some(&opts(json!({"now": NOW, "query_embedding": [1.0, 0.0, 0.0, 0.0]}))))
        .unwrap_err();
    assert!(e.starts_with("cmp_search: query_embedding"), "{e}");
    assert!(e.contains('4') && (e.contains('3') || e.contains('2')), "{e}");
}

#[test]
fn wrong_dimension_error_names_both() {
    let conn = open();
    insert_memory(&conn, &Mem::new("a").embedding(&[1.0, 0.0, 0.0]));
    let e = try_search(&conn, "a", Some(&opts(json!({"query_embedding": [1.0, 2.0]})))).unwrap_err();
    assert_eq!(e, "cmp_search: query_embedding has 2 dimensions but stored embeddings have 3");
}

#[test]
fn hostile_tasks_never_error() {
    let conn = open();
    for c in [
        "Atlas launch \"quoted\" AND OR NOT NEAR",
        "content: column filter * prefix",
        "Emoji 🚀 launch 🎉 café naïve",
        "(parentheses) and {braces} [brackets]",
    ] {
        insert_memory(&conn, &Mem::new(c).entities(&["Atlas", "🚀"]));
    }
    let long = "atlas launch ".repeat(800);
    let hostile: Vec<String> = vec![
        "\"".into(),
        "\"\"\"".into(),
        "'; DROP TABLE cmp_memories; --".into(),
        "atlas AND launch".into(),
        "atlas OR".into(),
        "AND".into(),
        "OR OR OR".into(),
        "NOT atlas".into(),
        "NEAR(atlas launch, 2)".into(),
        "NEAR".into(),
        "atla*".into(),
        "*".into(),
        "^atlas".into(),
        "(atlas".into(),
        "atlas)".into(),
        "((()))".into(),
        "content: atlas".into(),
        "content:atlas".into(),
        "{content}: atlas".into(),
        "cmp_memories_fts: x".into(),
        "rank: 1".into(),
        "- atlas + launch".into(),
        "🚀".into(),
        "🚀🚀 launch 🎉".into(),
        "café".into(),
        "\u{202e}rtl override".into(),
        "\u{0}".into(),
        "atlas\u{0}launch".into(),
        "\u{0}\u{0}\u{0}".into(),
        String::new(),
        " ".into(),
        "\n\t\r".into(),
        long,
        "x".repeat(10_000),
        "a ".repeat(5_000),
        "%_\\".into(),
        "atlas".repeat(400),
        "ß ǅ İ ﬁ".into(),
    ];
    for task in &hostile {
        for o in [None, Some(now_opts()), Some(opts(json!({"now": NOW, "query_embedding": [1.0]})))] {
            // No row stores an embedding, so even the vector path has nothing to refuse.
            if let Err(e) = try_search(&conn, task, o.as_deref()) {
                panic!("task {:?} (options {o:?}) failed: {e}", task.chars().take(40).collect::<String>());
            }
        }
    }
    // Through SQL literals and NULL too.
    for sql in [
        "SELECT count(*) FROM cmp_search(NULL)",
        "SELECT count(*) FROM cmp_search('')",
        "SELECT count(*) FROM cmp_search('\"atlas\" NEAR/2 launch')",
        "SELECT count(*) FROM cmp_search(char(0, 34, 0))",
        "SELECT count(*) FROM cmp_search('atlas', NULL)",
    ] {
        conn.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap_or_else(|e| panic!("{sql}: {e}"));
    }
    // A word that FTS5 would read as syntax is searched as a plain word.
    let hits = search(&conn, "NEAR");
    assert_eq!(hits[0].content, "Atlas launch \"quoted\" AND OR NOT NEAR");
    assert_eq!(hits[0].matched_terms(), ["near"]);
    let hits = search(&conn, "content:");
    assert_eq!(hits[0].content, "content: column filter * prefix");
    assert_consistent(&conn);
}

#[test]
fn bad_options_are_errors_naming_the_field() {
    let conn = open();
    insert_memory(&conn, &Mem::new("Atlas launch").embedding(&[1.0]));
    for (o, field) in [
        (r#"{"bogus":1}"#, "unknown option \"bogus\""),
        (r#"{"format":"json"}"#, "unknown option \"format\""),
        (r#"{"now":"yesterday"}"#, "now"),
        (r#"{"now":20260601}"#, "now"),
        (r#"{"now":null}"#, "now"),
        (r#"{"as_of":"2026-13-01"}"#, "as_of"),
        (r#"{"as_of":true}"#, "as_of"),
        (r#"{"scope":""}"#, "scope"),
        (r#"{"scope":7}"#, "scope"),
        (r#"{"scope":["a"]}"#, "scope"),
        (r#"{"query_embedding":"1,2"}"#, "query_embedding"),
        (r#"{"query_embedding":[]}"#, "query_embedding"),
        (r#"{"query_embedding":[1,"a"]}"#, "query_embedding[1]"),
        (r#"{"query_embedding":[null]}"#, "query_embedding[0]"),
        (r#"{"query_embedding":[1e39]}"#, "query_embedding[0]"),
        ("not json", "options"),
        ("[1,2]", "options"),
        ("42", "options"),
        ("", "options"),
    ] {
        let e = try_search(&conn, "atlas", Some(o)).unwrap_err();
        assert!(e.starts_with("cmp_search: "), "{o}: {e}");
        assert!(e.contains(field), "{o}: {e} (should name {field})");
    }
    let long_scope = json!({"scope": "s".repeat(300)}).to_string();
    let e = try_search(&conn, "atlas", Some(&long_scope)).unwrap_err();
    assert!(e.starts_with("cmp_search: scope"), "{e}");
    let e = sql_error(&conn, "SELECT * FROM cmp_search('atlas', 42)");
    assert!(e.starts_with("cmp_search: options"), "{e}");
    let e = sql_error(&conn, "SELECT * FROM cmp_search()");
    assert!(e.starts_with("cmp_search: task"), "{e}");
    let e = sql_error(&conn, "SELECT * FROM cmp_search(42)");
    assert!(e.starts_with("cmp_search: task"), "{e}");
}

#[test]
fn non_utf8_tasks_are_errors() {
    let conn = open();
    insert_memory(&conn, &Mem::new("Atlas launch"));
    for sql in [
        "SELECT * FROM cmp_search(x'fffe')",
        "SELECT * FROM cmp_search(CAST(x'61ff62' AS TEXT))",
        "SELECT * FROM cmp_search(x'41544c4153')",
    ] {
        let e = sql_error(&conn, sql);
        assert!(e.starts_with("cmp_search: task"), "{sql}: {e}");
    }
    let e = sql_error(&conn, "SELECT * FROM cmp_search('atlas', CAST(x'7bff7d' AS TEXT))");
    assert!(e.starts_with("cmp_search: options"), "{e}");
}

#[test]
fn oversized_tasks_are_errors_not_hangs() {
    let conn = open();
    insert_memory(&conn, &Mem::new("Atlas launch"));
    let huge = "atlas ".repeat(200_000);
    let e = try_search(&conn, &huge, None).unwrap_err();
    assert!(e.starts_with("cmp_search: task"), "{e}");
    assert!(e.contains("limit"), "{e}");
}

/// A two-person chat: both speakers are common entities (linked to half the messages each). A task
/// that names one speaker about what the other said (LoCoMo's adversarial questions) still gets the
/// strong match first, ahead of the named speaker's weak ones; between equally strong matches the
/// named speaker's comes first.
#[test]
fn a_named_speaker_does_not_bury_the_other_speakers_strong_match() {
    let conn = open();
    let fillers = ["how do you feel today", "the race was on tv", "what a day", "i feel tired", "see you soon"];
    for i in 0..30 {
        let f = fillers[i % fillers.len()];
        let at = |k: usize| format!("2026-05-{:02}T{:02}:00:00Z", 1 + k / 12, 2 * (k % 12));
        insert_memory(&conn, &Mem::new(&format!("Caroline: {f} {i}")).entities(&["Caroline"]).occurred_at(&at(2 * i)));
        insert_memory(
            &conn,
            &Mem::new(&format!("Melanie: {f} {i}")).entities(&["Melanie"]).occurred_at(&at(2 * i + 1)),
        );
    }
    let answer = insert_memory(
        &conn,
        &Mem::new("Melanie: I ran the charity race for mental health and felt so proud afterwards")
            .entities(&["Melanie"])
            .occurred_at("2026-05-09T10:00:00Z"),
    );
    let hits = search(&conn, "How did Caroline feel after the charity race for mental health?");
    assert_eq!(hits.first().map(|h| h.r#ref.as_str()), Some(answer.as_str()), "{:?}", refs(&hits));

    let mine = insert_memory(
        &conn,
        &Mem::new("Caroline: the pottery workshop glaze came out blue")
            .entities(&["Caroline"])
            .occurred_at("2026-05-09T12:00:00Z"),
    );
    insert_memory(
        &conn,
        &Mem::new("Melanie: the pottery workshop glaze came out blue")
            .entities(&["Melanie"])
            .occurred_at("2026-05-09T14:00:00Z"),
    );
    let hits = search(&conn, "What about Caroline's pottery workshop glaze?");
    assert_eq!(hits.first().map(|h| h.r#ref.as_str()), Some(mine.as_str()), "{:?}", refs(&hits));
}

/// With the caller's embedding and a task that matched text, the embedding's nearest memory anchors
/// the context retriever as the full-text matches do: its neighbour in time joins the candidates.
/// A search by embedding alone stays a pure cosine ranking.
#[test]
fn the_callers_embedding_anchors_context_when_text_matched() {
    let conn = open();
    let at = |t: &str| format!("2026-05-01T{t}:00Z");
    insert_memory(&conn, &Mem::new("the atlas launch date").occurred_at(&at("08:00")).embedding(&[0.0, 1.0]));
    let near = insert_memory(&conn, &Mem::new("we picked june").occurred_at(&at("12:00")).embedding(&[1.0, 0.0]));
    // No embedding: it can only come in as a neighbour.
    let next = insert_memory(&conn, &Mem::new("sounds good").occurred_at(&at("12:01")));
    insert_memory(&conn, &Mem::new("unrelated chatter").occurred_at(&at("18:00")).embedding(&[0.0, 1.0]));
    let context = |task: &str| -> Vec<String> {
        let hits = search_with(&conn, task, &opts(json!({"now": NOW, "query_embedding": [1.0, 0.0]})));
        hits.iter().filter(|h| h.retrievers().contains(&"context".to_string())).map(|h| h.r#ref.clone()).collect()
    };
    assert!(context("atlas").contains(&next), "the neighbour of the nearest memory {near} is a candidate");
    assert!(context("").is_empty(), "no text matched: no context");
}

#[test]
fn a_task_that_names_a_day_finds_what_was_recorded_then() {
    let conn = open();
    let at = |t: &str, text: &str| insert_memory(&conn, &Mem::new(text).occurred_at(t).captured_at(t));
    let yoga_then = at("2026-01-23T08:00:00Z", "Kevin: yoga in the morning, then a long walk");
    let later_that_day = at("2026-01-23T20:00:00Z", "Kevin: cooked pasta for everyone");
    let next_morning = at("2026-01-24T09:00:00Z", "Kevin: my legs hurt from yesterday");
    let yoga_before = at("2026-01-10T08:00:00Z", "Kevin: yoga class was full, so I went running");
    let week_after = at("2026-01-31T08:00:00Z", "Kevin: nothing much");
    for t in ["what did Kevin do on 23.01.2026?", "what did Kevin do on January 23?", "Kevin's day on 23 Jan 2026"] {
        let hits = search(&conn, t);
        let r = refs(&hits);
        for m in [&yoga_then, &later_that_day, &next_morning] {
            let h = hits.iter().find(|h| &h.r#ref == m).unwrap_or_else(|| panic!("{t}: {m} missing from {r:?}"));
            assert!(h.retrievers().contains(&"dated".to_string()), "{t}: {:?}", h.retrievers());
        }
        for m in [&yoga_before, &week_after] {
            let outside = hits.iter().find(|h| &h.r#ref == m).map(|h| h.retrievers()).unwrap_or_default();
            assert!(!outside.contains(&"dated".to_string()), "{t}: {m} is outside the span: {outside:?}");
        }
    }
    // Among the matches of "yoga", the one recorded on the named day comes first.
    let hits = search(&conn, "yoga on 23.01.2026");
    assert_eq!(hits[0].r#ref, yoga_then);
    // Without a date the ranking is the text's alone.
    assert!(search(&conn, "yoga").iter().all(|h| !h.retrievers().contains(&"dated".to_string())));
    // The day's memories of another scope, redacted ones and ones captured after `now` never come.
    let t = "2026-01-23T12:00:00Z";
    let other = insert_memory(&conn, &Mem::new("the other scope's day").occurred_at(t).captured_at(t).scope("work"));
    let hidden = insert_memory(&conn, &Mem::new("a secret of that day").occurred_at(t).captured_at(t));
    conn.execute("UPDATE cmp_memories SET redacted = 1 WHERE id = ?1", [&hidden]).expect("redact");
    let late = insert_memory(
        &conn,
        &Mem::new("written later about that day").occurred_at(t).captured_at("2026-07-01T00:00:00Z"),
    );
    let r = refs(&search(&conn, "what happened on 23.01.2026?"));
    assert!(r.contains(&later_that_day), "{r:?}");
    for m in [&other, &hidden, &late] {
        assert!(!r.contains(m), "{m} surfaced: {r:?}");
    }
}
