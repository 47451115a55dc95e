//! Memories in every language: Chinese, Japanese, Korean and Thai (scripts written without spaces,
//! matched through the character-pair index), mixed English/Chinese text and emoji. For each:
//! `cmp_search` finds the memory and names the matched terms, `cmp_context` packs it, MQL `find`
//! returns it, an entity named in the task is recognised, near-duplicates fold, and the
//! character-pair index stays equal to its view through every write path (also from a connection
//! that never loaded cmp, and across the upgrade from schema 2).

mod common;

use common::*;
use rusqlite::Connection;
use serde_json::{json, Value};

/// A store with `memories` and a few unrelated ones, returning the ids of `memories`.
fn store(memories: &[&str]) -> (Connection, Vec<String>) {
    let conn = open();
    let ids = memories.iter().map(|m| insert_memory(&conn, &Mem::new(m))).collect();
    for other in [
        "Dana prefers short status updates",
        "我的同事喜欢喝咖啡。",
        "猫が好きです。",
        "고양이를 좋아해요.",
        "ฉันชอบแมว",
    ] {
        insert_memory(&conn, &Mem::new(other));
    }
    (conn, ids)
}

fn context(conn: &Connection, task: &str, model: Option<&str>) -> Value {
    let opts = json!({"now": NOW, "format": "json"}).to_string();
    let s: String = conn
        .query_row("SELECT cmp_context(?1, ?2, 1000, NULL, ?3)", rusqlite::params![task, model, opts], |r| r.get(0))
        .unwrap_or_else(|e| panic!("cmp_context({task:?}): {e}"));
    serde_json::from_str(&s).expect("cmp_context returns JSON")
}

fn context_refs(v: &Value) -> Vec<String> {
    v["items"].as_array().expect("items").iter().map(|i| i["ref"].as_str().expect("ref").to_string()).collect()
}

fn query(conn: &Connection, find: &str) -> Vec<String> {
    let mql = json!({"find": find, "now": NOW}).to_string();
    let s: String = conn
        .query_row("SELECT cmp_query(?1)", [mql], |r| r.get(0))
        .unwrap_or_else(|e| panic!("cmp_query({find:?}): {e}"));
    let v: Value = serde_json::from_str(&s).expect("cmp_query returns JSON");
    v["items"].as_array().expect("items").iter().map(|i| i["ref"].as_str().expect("ref").to_string()).collect()
}

/// The memory is the first `cmp_search` hit of `task`, found by full-text search with `terms`
/// among its matched terms; `cmp_context` packs it and MQL `find` returns it.
fn assert_found(conn: &Connection, task: &str, id: &str, terms: &[&str]) {
    assert_found_among(conn, task, id, terms, 1)
}

/// [`assert_found`], the memory among the first `top` hits.
fn assert_found_among(conn: &Connection, task: &str, id: &str, terms: &[&str], top: usize) {
    let hits = search(conn, task);
    let first = hits.iter().take(top).find(|h| h.r#ref == id);
    let first = first.unwrap_or_else(|| panic!("{task:?}: not among the first {top} of {:?}", refs(&hits)));
    assert!(first.retrievers().contains(&"fts".to_string()), "{task:?}: {:?}", first.why);
    for t in terms {
        assert!(first.matched_terms().contains(&t.to_string()), "{task:?}: {t} not in {:?}", first.matched_terms());
    }
    for model in [None, Some("claude")] {
        assert!(context_refs(&context(conn, task, model)).contains(&id.to_string()), "{task:?} {model:?}: not packed");
    }
    assert!(query(conn, task).contains(&id.to_string()), "{task:?}: MQL find misses it");
}

#[test]
fn chinese_words_of_two_characters_match() {
    let (conn, ids) = store(&["我下周二要去北京出差，住三天。", "我的上司名叫赵雅琳。", "我妈妈在上海工作。"]);
    assert_found(&conn, "北京出差", &ids[0], &["北京", "出差"]);
    assert_found(&conn, "我什么时候去北京？", &ids[0], &["北京"]);
    assert_found(&conn, "我上司叫什么名字？", &ids[1], &["上司"]);
    assert_found(&conn, "妈妈在哪里工作", &ids[2], &["妈妈", "工作"]);
    // A task with no pair in common finds nothing rather than everything.
    assert!(search(&conn, "天气预报").is_empty());
}

#[test]
fn a_chinese_question_that_joins_two_facts_finds_both() {
    // Events, each with its place and a plan to go, a day apart (no two are context of each other);
    // the question names the place and asks which event is planned: the plan shares with it only
    // 参加, which every plan holds.
    let conn = open();
    let mut ids = Vec::new();
    let events = [
        ("设计总监项目启动会", "广东广州"),
        ("文学创想阅享会", "上海"),
        ("瑜伽自然之旅", "北京"),
        ("金融科技精英论坛", "深圳"),
    ];
    for (day, (event, city)) in events.iter().enumerate() {
        for (half, content) in [format!("{event}的地点是{city}。"), format!("我将要参加{event}。")].iter().enumerate()
        {
            let at = format!("2026-05-{:02}T10:00:00Z", 1 + 2 * day + half);
            ids.push(insert_memory(&conn, &Mem { captured_at: at, ..Mem::new(content) }));
        }
    }
    let task = "那个地点是广东广州的活动，我要参加的活动是什么？";
    let hits = search(&conn, task);
    assert_eq!(refs(&hits)[..2], ids[..2], "the plan right after the place");
    assert!(hits[1].retrievers().contains(&"bridge".to_string()), "{:?}", hits[1].why);
    assert!(!hits[0].retrievers().contains(&"bridge".to_string()), "{:?}", hits[0].why);
    assert!(context_refs(&context(&conn, task, Some("gpt"))).starts_with(&ids[..2]), "both packed first");
    // A task in English never bridges.
    assert!(search(&conn, "which event will I attend").iter().all(|h| !h.retrievers().contains(&"bridge".to_string())));
}

#[test]
fn japanese_korean_and_thai_match() {
    let (conn, ids) = store(&[
        "来週の月曜日に東京で会議があります。",
        "다음 주 화요일에 서울에서 회의가 있어요.",
        "พรุ่งนี้ฉันจะไปกรุงเทพเพื่อประชุม",
    ]);
    assert_found(&conn, "東京の会議はいつ？", &ids[0], &["東京", "会議"]);
    assert_found(&conn, "서울 회의", &ids[1], &["서울", "회의"]);
    assert_found(&conn, "ไปกรุงเทพเมื่อไหร่", &ids[2], &["กร", "รุ"]);
}

#[test]
fn mixed_english_and_chinese_and_emoji() {
    let (conn, ids) = store(&[
        "明天和Alice开会讨论Atlas项目的上线时间🚀",
        "我用Python写了一个爬虫 🐍",
        "我叔叔今年61岁了。",
        "Atlas ships on Friday 🎉",
    ]);
    // An English word glued to Han text is found by an English task and by a Chinese one.
    let atlas = refs(&search(&conn, "atlas"));
    assert!(atlas.contains(&ids[0]) && atlas.contains(&ids[3]), "{atlas:?}");
    // Both indexes find something: their rankings are fused, the English memory competes.
    assert_found_among(&conn, "Atlas项目什么时候上线", &ids[0], &["项目", "上线", "atla"], 2);
    assert_found(&conn, "Python爬虫", &ids[1], &["python", "爬虫"]);
    // Digits glued to a Han character.
    assert_found(&conn, "那个61岁的人是谁", &ids[2], &["61"]);
    // Emoji are neither words nor pairs: a task of emoji only matches nothing (like an empty task,
    // it is offered the newest memories) and fails nothing.
    let emoji = search(&conn, "🚀🎉");
    assert!(emoji.iter().all(|h| h.retrievers() == ["recency"]), "{emoji:?}");
    assert_found(&conn, "Atlas ships 🎉", &ids[3], &["atla", "ship"]);
}

#[test]
fn chinese_entity_names_are_recognised_in_chinese_tasks() {
    let conn = open();
    let zhao = insert_memory(&conn, &Mem::new("她下个月调去深圳分行。").entities(&["赵雅琳"]));
    insert_memory(&conn, &Mem::new("他下个月调去北京分行。").entities(&["王思琪"]));
    let tokyo = insert_memory(&conn, &Mem::new("出張の準備はできた。").entities(&["東京"]));
    let hits = search(&conn, "赵雅琳什么时候调走？");
    assert_eq!(hits.first().map(|h| &h.r#ref), Some(&zhao), "{hits:?}");
    assert!(hits[0].retrievers().contains(&"entity".to_string()), "{:?}", hits[0].why);
    let v = context(&conn, "赵雅琳什么时候调走？", None);
    assert!(context_refs(&v).contains(&zhao));
    let hits = search(&conn, "来週東京に行く");
    assert_eq!(hits.first().map(|h| &h.r#ref), Some(&tokyo), "{hits:?}");
    // A name is recognised only as a whole: 赵雅 alone is not 赵雅琳.
    assert!(!refs(&search(&conn, "赵雅")).contains(&zhao));
}

#[test]
fn near_duplicate_chinese_memories_fold() {
    let conn = open();
    let a = insert_memory(&conn, &Mem::new("我下周二要去北京出差，住在王府井附近的酒店。"));
    let b = insert_memory(&conn, &Mem::new("我下周二要去北京出差，住在王府井附近的酒店！"));
    let c = insert_memory(&conn, &Mem::new("我下周二不去北京出差了。"));
    for model in ["claude", "gpt", "cursor"] {
        let v = context(&conn, "北京出差住哪里", Some(model));
        let refs = context_refs(&v);
        assert_eq!(v["coverage"]["deduped"], 1, "{model}: {v}");
        assert!(refs.contains(&a) != refs.contains(&b), "{model}: exactly one restatement survives: {refs:?}");
        assert!(refs.contains(&c), "{model}: a different claim is kept: {refs:?}");
    }
}

#[test]
fn the_pair_index_follows_every_write_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cjk.db");
    let conn = open_file(&path);
    let id = insert_memory(&conn, &Mem::new("我下周二要去北京出差"));
    assert_consistent(&conn);
    // Written by a connection that never loaded cmp: the triggers are plain SQL.
    let plain = open_plain(&path);
    plain.execute("UPDATE cmp_memories SET content = '我下周三要去上海开会' WHERE id = ?1", [&id]).unwrap();
    let other = insert_memory(&plain, &Mem::new("서울에서 회의가 있어요"));
    plain.execute("UPDATE cmp_memories SET redacted = 1 WHERE id = ?1", [&other]).unwrap();
    plain.execute("UPDATE cmp_memories SET redacted = 0 WHERE id = ?1", [&other]).unwrap();
    drop(plain);
    assert_consistent(&conn);
    assert!(search(&conn, "北京出差").is_empty(), "the old text is gone from the index");
    assert_eq!(
        refs(&search(&conn, "上海开会")).first(),
        Some(&id),
        "the match ranks first (a context neighbour may follow)"
    );
    assert_eq!(
        refs(&search(&conn, "서울 회의")).first(),
        Some(&other),
        "the match ranks first (a context neighbour may follow)"
    );
    conn.execute("DELETE FROM cmp_memories WHERE id = ?1", [&id]).unwrap();
    assert_consistent(&conn);
    assert!(search(&conn, "上海开会").is_empty());
    // A very long memory costs a bounded amount to index: only its first characters are paired.
    let long = format!("开头的内容{}结尾的内容", "数据".repeat(200_000));
    let t = std::time::Instant::now();
    let long_id = insert_memory(&conn, &Mem::new(&long));
    assert!(t.elapsed().as_secs() < 20, "indexing a long memory took {:?}", t.elapsed());
    assert!(refs(&search(&conn, "开头的内容")).contains(&long_id));
    let pairs: i64 = conn
        .query_row(
            "SELECT length(grams) - length(replace(grams, ' ', '')) + 1 FROM cmp_memories_grams WHERE rid =
                 (SELECT rid FROM cmp_memories WHERE id = ?1)",
            [&long_id],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(pairs as usize, cmp::text::GRAM_MAX_CHARS - 1, "the first GRAM_MAX_CHARS characters are paired");
    assert_consistent(&conn);
}

/// A database file of schema `version` (2, 3 or 4) written with plain SQL, as the cmp of that version
/// left it: schema 4 from its frozen copy, 3 with the unguarded pair triggers of that version, 2
/// without the character-pair index.
fn old_store(path: &std::path::Path, version: i64) -> Connection {
    let conn = open_plain(path);
    conn.execute_batch(include_str!("fixtures/schema_v4.sql")).unwrap();
    if version == 3 {
        // Schema 3's pair triggers ran the view for every row, ASCII or not.
        conn.execute_batch(
            "DROP TRIGGER cmp_memories_ngram_ai; DROP TRIGGER cmp_memories_ngram_bd;
             DROP TRIGGER cmp_memories_ngram_bu; DROP TRIGGER cmp_memories_ngram_au;
             CREATE TRIGGER cmp_memories_ngram_ai AFTER INSERT ON cmp_memories BEGIN
               INSERT INTO cmp_memories_ngram(rowid, grams) SELECT rid, grams FROM cmp_memories_grams WHERE rid = NEW.rid;
             END;
             CREATE TRIGGER cmp_memories_ngram_bd BEFORE DELETE ON cmp_memories BEGIN
               INSERT INTO cmp_memories_ngram(cmp_memories_ngram, rowid, grams)
                 SELECT 'delete', rid, grams FROM cmp_memories_grams WHERE rid = OLD.rid;
             END;
             CREATE TRIGGER cmp_memories_ngram_bu BEFORE UPDATE ON cmp_memories
             WHEN OLD.content IS NOT NEW.content OR OLD.redacted IS NOT NEW.redacted OR OLD.rid IS NOT NEW.rid BEGIN
               INSERT INTO cmp_memories_ngram(cmp_memories_ngram, rowid, grams)
                 SELECT 'delete', rid, grams FROM cmp_memories_grams WHERE rid = OLD.rid;
             END;
             CREATE TRIGGER cmp_memories_ngram_au AFTER UPDATE ON cmp_memories
             WHEN OLD.content IS NOT NEW.content OR OLD.redacted IS NOT NEW.redacted OR OLD.rid IS NOT NEW.rid BEGIN
               INSERT INTO cmp_memories_ngram(rowid, grams) SELECT rid, grams FROM cmp_memories_grams WHERE rid = NEW.rid;
             END;",
        )
        .unwrap();
    }
    if version == 2 {
        conn.execute_batch(
            "DROP TRIGGER cmp_memories_ngram_ai; DROP TRIGGER cmp_memories_ngram_bd;
             DROP TRIGGER cmp_memories_ngram_bu; DROP TRIGGER cmp_memories_ngram_au;
             DROP TABLE cmp_memories_ngram; DROP VIEW cmp_memories_grams; DROP TABLE cmp_positions;",
        )
        .unwrap();
    }
    conn.execute("UPDATE cmp_meta SET value = ?1 WHERE key = 'schema_version'", [version.to_string()]).unwrap();
    conn
}

#[test]
fn upgrading_from_schema_4_keeps_every_index_and_queues_later_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v4.db");
    let (zh, en) = {
        let conn = old_store(&path, 4);
        (
            insert_memory(&conn, &Mem::new("我下周二要去北京出差").entities(&["北京"])),
            insert_memory(&conn, &Mem::new("Atlas ships on Friday").entities(&["Atlas"])),
        )
    };
    let conn = Connection::open(&path).unwrap();
    cmp::register(&conn).unwrap();
    assert_eq!(init(&conn), cmp::store::SCHEMA_VERSION);
    assert_eq!(queued(&conn), 0, "rows written under schema 4 are indexed already");
    assert_eq!(fts_rows(&conn), 2);
    assert_consistent(&conn);
    assert_eq!(refs(&search(&conn, "北京出差")).first(), Some(&zh));
    assert_eq!(refs(&search(&conn, "atlas friday")).first(), Some(&en));
    // Rows indexed by schema 4's triggers change and leave under schema 5's.
    conn.execute("UPDATE cmp_memories SET content = '我妈妈在上海工作。' WHERE id = ?1", [&zh]).unwrap();
    assert_eq!(queued(&conn), 1);
    assert_consistent(&conn);
    assert_eq!(refs(&search(&conn, "上海工作")).first(), Some(&zh));
    // The old words left the indexes; the row still names the entity 北京.
    let hits = search(&conn, "北京出差");
    assert!(hits.iter().all(|h| !h.retrievers().contains(&"fts".to_string())), "{:?}", refs(&hits));
    assert!(hits.iter().any(|h| h.r#ref == zh && h.retrievers().contains(&"entity".to_string())));
    conn.execute("DELETE FROM cmp_memories WHERE id = ?1", [&en]).unwrap();
    assert_consistent(&conn);
    assert!(search(&conn, "atlas friday").is_empty());
}

#[test]
fn upgrading_from_schema_2_indexes_existing_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v2.db");
    let id = {
        let conn = old_store(&path, 2);
        insert_memory(&conn, &Mem::new("我妈妈在上海工作。"));
        insert_memory(&conn, &Mem::new("我下周二要去北京出差"))
    };
    let conn = Connection::open(&path).unwrap();
    cmp::register(&conn).unwrap();
    assert_eq!(init(&conn), cmp::store::SCHEMA_VERSION);
    assert_consistent(&conn);
    assert_eq!(
        refs(&search(&conn, "北京出差")).first(),
        Some(&id),
        "the match ranks first (a context neighbour may follow)"
    );
    assert!(!search(&conn, "上海工作").is_empty());
}

#[test]
fn upgrading_from_schema_3_leaves_no_trigger_that_writes_an_index() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v3.db");
    let (zh, en) = {
        let conn = old_store(&path, 3);
        (
            insert_memory(&conn, &Mem::new("我下周二要去北京出差")),
            insert_memory(&conn, &Mem::new("Atlas ships on Friday")),
        )
    };
    let conn = Connection::open(&path).unwrap();
    cmp::register(&conn).unwrap();
    assert_eq!(init(&conn), cmp::store::SCHEMA_VERSION);
    assert_eq!(queued(&conn), 0, "rows of an older schema are indexed already");
    let writing: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'trigger'
               AND (name LIKE 'cmp_memories_ngram_%' OR sql LIKE '%cmp_memories_fts%' OR sql LIKE '%cmp_memories_ngram%')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(writing, 0, "every pair trigger is dropped: no trigger writes a full-text index (schema 8)");
    assert_consistent(&conn);
    // Rows indexed under schema 3 change and leave under the new triggers.
    conn.execute("UPDATE cmp_memories SET content = '我妈妈在上海工作。' WHERE id = ?1", [&zh]).unwrap();
    conn.execute("UPDATE cmp_memories SET content = 'Atlas ships on 星期五' WHERE id = ?1", [&en]).unwrap();
    assert_consistent(&conn);
    assert_eq!(refs(&search(&conn, "上海工作")).first(), Some(&zh));
    assert_eq!(refs(&search(&conn, "星期五")).first(), Some(&en));
    assert!(search(&conn, "北京出差").is_empty());
    conn.execute("DELETE FROM cmp_memories", []).unwrap();
    assert_consistent(&conn);
}

#[test]
fn a_long_task_of_han_text_takes_bounded_time() {
    let (conn, ids) = store(&["我下周二要去北京出差，住三天。"]);
    // 256 KiB of distinct-ish ideographs (3 bytes each in UTF-8, so about 87,000 characters and as
    // many pairs), with the memory's words at the start.
    let mut task = String::from("北京出差");
    let mut i = 0u32;
    while task.len() < (1 << 18) - 4 {
        task.push(char::from_u32(0x4E00 + (i * 7919) % 0x5000).unwrap());
        i += 1;
    }
    let t0 = std::time::Instant::now();
    let hits = search(&conn, &task);
    assert!(refs(&hits).contains(&ids[0]));
    let v = context(&conn, &task, Some("claude"));
    assert!(v["items"].is_array());
    assert!(t0.elapsed().as_secs() < 30, "{:?}", t0.elapsed());
}

#[test]
fn odd_contents_keep_the_pair_index_consistent() {
    let conn = open();
    // Han text stored as a blob, a blob cut inside a character, a number, invalid UTF-8.
    let han = "我下周二要去北京出差".as_bytes().to_vec();
    let cut = han[..han.len() - 1].to_vec();
    for v in [
        rusqlite::types::Value::Blob(han.clone()),
        rusqlite::types::Value::Blob(cut),
        rusqlite::types::Value::Integer(61),
        rusqlite::types::Value::Blob(vec![0xE5, 0xFF, 0x80, 0xE4, 0xBA, 0xAC]),
    ] {
        conn.execute("INSERT INTO cmp_memories(content) VALUES (?1)", [v]).unwrap();
    }
    assert_consistent(&conn);
    conn.execute("UPDATE cmp_memories SET content = content || '。'", []).unwrap();
    assert_consistent(&conn);
    // Whatever the stored type, search reads the text and never fails.
    let _ = search(&conn, "北京出差");
    conn.execute("DELETE FROM cmp_memories", []).unwrap();
    assert_consistent(&conn);
    let left: i64 = conn.query_row("SELECT count(*) FROM cmp_memories_ngram", [], |r| r.get(0)).unwrap();
    assert_eq!(left, 0);
}
