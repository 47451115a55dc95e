//! Rows an application might have written badly (issue 7, part 2), inserted with plain SQL next to a
//! few normal rows: malformed `entities` JSON, unparseable timestamps, a kind the CHECK constraint
//! would refuse (written with `PRAGMA ignore_check_constraints`, as a database created before the
//! CHECK existed would hold it), trust that is NaN, infinite, out of range or text, superseded_by
//! cycles and dangling ids, garbage superseded_at, embeddings of the wrong length or type, huge, empty
//! and punctuation-only content, and a few more (content stored as a blob or as invalid UTF-8, ids
//! that are not `mem_…`, a `redacted` flag that is text).
//!
//! For each, [`run_everything`] calls every read function (cmp_search; cmp_context for the four
//! profiles in smp, json and markdown; cmp_items; cmp_query find and ask; cmp_expand document and
//! neighbors for every ref it saw; two session turns; the pack cursor to its end) and checks that
//! none errors, that every pack keeps `used <= tokens` with `used` = Σ(cmp_tokens(content) + 12),
//! that items stay in the eight layers, and that the indexes and the file stay consistent. Each test
//! then states what cmp does with its odd row: these assertions are the documentation.
//!
//! Last, rows a session already holds that become unreadable (redacted, moved to another scope,
//! deleted) are evicted at the next turn. Tests marked `#[ignore = "BUG: …"]` state what cmp should
//! do and does not yet; `cargo test --test odd_rows -- --ignored` runs them.

mod common;

use common::*;
use rusqlite::{params, Connection};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

const LAYERS: [&str; 8] =
    ["constraints", "decisions", "facts", "entity", "procedures", "identity", "open_loops", "recency"];
const MODELS: [Option<&str>; 4] = [None, Some("claude"), Some("gpt-4o"), Some("cursor")];
const FORMATS: [&str; 3] = ["smp", "json", "markdown"];
const SESSION: &str = "odd-session";

/// Normal rows around the odd ones: a decision with a 4-dimensional embedding, a fact with
/// entities, a hard rule, an episode, and an open task.
fn base() -> Connection {
    let conn = open();
    insert_memory(
        &conn,
        &Mem::new("Decision: the Orion launch is on June 12.")
            .id("mem_00000000b001")
            .kind("decision")
            .entities(&["Orion"])
            .embedding(&[1.0, 0.0, 0.0, 0.0]),
    );
    insert_memory(
        &conn,
        &Mem::new("Dana signs off on every Orion launch announcement.")
            .id("mem_00000000b002")
            .entities(&["Dana", "Orion"])
            .embedding(&[0.0, 1.0, 0.0, 0.0]),
    );
    insert_memory(&conn, &Mem::new("Never email customers on weekends.").id("mem_00000000b003").kind("negative"));
    insert_memory(
        &conn,
        &Mem::new("Lee fixed the Orion invoices in staging.")
            .id("mem_00000000b004")
            .kind("episodic")
            .entities(&["Lee"])
            .occurred_at("2026-05-30T10:00:00Z"),
    );
    conn.execute("INSERT INTO cmp_tasks(title, due_at) VALUES ('Draft the Orion launch email', '2026-06-08')", [])
        .expect("task");
    conn
}

/// Inserts a row with plain SQL (`columns`, `values` as SQL literals) and returns its id.
fn raw(conn: &Connection, columns: &str, values: &str) -> String {
    let sql = format!("INSERT INTO cmp_memories({columns}) VALUES ({values}) RETURNING id");
    conn.query_row(&sql, [], |r| r.get(0)).unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// An odd row with `column` set to the SQL literal `value`, content `content`, captured before NOW.
fn odd(conn: &Connection, id: &str, content: &str, column: &str, value: &str) -> String {
    raw(
        conn,
        &format!("id, content, captured_at, {column}"),
        &format!("'{id}', '{content}', '2026-05-20T00:00:00Z', {value}"),
    )
}

fn opts(extra: &Value) -> Value {
    let mut o = json!({"now": NOW});
    for (k, v) in extra.as_object().expect("options object") {
        o[k] = v.clone();
    }
    o
}

fn q1<T: rusqlite::types::FromSql>(conn: &Connection, sql: &str, p: impl rusqlite::Params) -> T {
    conn.query_row(sql, p, |r| r.get(0)).unwrap_or_else(|e| panic!("{sql}: {e}"))
}

fn parse(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("not JSON ({e}): {s}"))
}

fn refs_of(items: &Value) -> Vec<String> {
    items.as_array().expect("items").iter().map(|i| i["ref"].as_str().expect("ref").to_string()).collect()
}

fn item<'a>(items: &'a Value, id: &str) -> Option<&'a Value> {
    items.as_array().expect("items").iter().find(|i| i["ref"] == id)
}

/// Everything every read function returned for one task.
#[derive(Debug, Default)]
struct Seen {
    /// cmp_search rows: ref → (retrievers, relevance, position).
    search: BTreeMap<String, (Vec<String>, Option<f64>, usize)>,
    /// smp packs per profile name.
    packs: BTreeMap<String, Value>,
    /// `warnings` of the json format, claude profile.
    warnings: Value,
    /// MQL find (valid_only true / false) and ask.
    find: Value,
    find_all: Value,
    ask: Value,
    /// cmp_expand documents and neighbours of every ref seen (and the odd ids).
    documents: BTreeMap<String, Value>,
    neighbors: BTreeMap<String, Value>,
    /// working_memory of the first session turn.
    turn1: Value,
    /// Refs paged through the claude pack's cursor.
    paged: Vec<String>,
}

impl Seen {
    fn layer(&self, profile: &str, id: &str) -> Option<String> {
        item(&self.packs[profile]["items"], id).map(|i| i["layer"].as_str().unwrap_or("").to_string())
    }
    fn claude_item(&self, id: &str) -> Option<&Value> {
        item(&self.packs["claude"]["items"], id)
    }
    fn packed_anywhere(&self, id: &str) -> bool {
        self.packs.values().any(|p| item(&p["items"], id).is_some())
    }
    fn found(&self, id: &str) -> bool {
        self.search.contains_key(id)
    }
    fn in_find(&self, id: &str) -> Option<&Value> {
        item(&self.find["items"], id)
    }
}

/// Calls every read function for `task` with the extra options `extra` (e.g. a query_embedding)
/// and checks what must hold whatever the rows: no error, the budget, layers, paging, consistency.
fn run_everything(conn: &Connection, task: &str, extra: Value, odd_ids: &[&str]) -> Seen {
    run_everything_in(conn, task, extra, odd_ids, "ok")
}

/// [`run_everything`] on a database whose `PRAGMA integrity_check` is expected to say `integrity`
/// (a row that breaks the CHECK constraint makes SQLite report it, rightly).
fn run_everything_in(conn: &Connection, task: &str, extra: Value, odd_ids: &[&str], integrity: &str) -> Seen {
    let o = opts(&extra);
    let mut seen = Seen::default();
    // cmp_search
    let hits = try_search(conn, task, Some(&o.to_string())).unwrap_or_else(|e| panic!("cmp_search: {e}"));
    for (i, h) in hits.iter().enumerate() {
        seen.search.insert(h.r#ref.clone(), (h.retrievers(), h.relevance, i));
    }
    // cmp_context: every profile, every format.
    for model in MODELS {
        for format in FORMATS {
            let mut fo = o.clone();
            fo["format"] = json!(format);
            let out: String = conn
                .query_row("SELECT cmp_context(?1, ?2, NULL, NULL, ?3)", params![task, model, fo.to_string()], |r| {
                    r.get(0)
                })
                .unwrap_or_else(|e| panic!("cmp_context({task:?}, {model:?}, {format}): {e}"));
            // The budget bound: used is the whole output as the model counts it.
            common::assert_accounted(conn, &out, model);
            if format == "markdown" {
                assert!(out.starts_with("# Memory pack"), "{out}");
                continue;
            }
            let v = parse(&out);
            for it in v["items"].as_array().expect("items") {
                assert!(LAYERS.contains(&it["layer"].as_str().unwrap_or("")), "{it}");
            }
            let name = v["model"].as_str().expect("model").to_string();
            if format == "smp" {
                // cmp_items packs the same refs.
                let mut st = conn.prepare("SELECT ref FROM cmp_items(?1, ?2, NULL, ?3)").expect("prepare cmp_items");
                let items: Vec<String> = st
                    .query_map(params![task, model, o.to_string()], |r| r.get(0))
                    .expect("cmp_items")
                    .collect::<rusqlite::Result<_>>()
                    .unwrap_or_else(|e| panic!("cmp_items({task:?}, {model:?}): {e}"));
                assert_eq!(items, refs_of(&v["items"]), "cmp_items and cmp_context agree");
                seen.packs.insert(name, v);
            } else if name == "claude" {
                seen.warnings = v["warnings"].clone();
            }
        }
    }
    // The claude pack's cursor pages to its end.
    let mut cursor = seen.packs["claude"]["cursor"].as_str().map(String::from);
    while let Some(c) = cursor {
        let page = parse(&q1::<String>(conn, "SELECT cmp_expand(?1, 'more')", [&c]));
        seen.paged.extend(refs_of(&page["items"]));
        cursor = page["cursor"].as_str().map(String::from);
    }
    // MQL.
    let mql_text = if task.trim().is_empty() { "orion" } else { task };
    let mql = |mode: &str, valid_only: bool| -> Value {
        let mut m = json!({mode: mql_text, "now": NOW, "k": 50, "valid_only": valid_only});
        if let Some(s) = extra.get("scope") {
            m["scope"] = s.clone();
        }
        parse(&q1::<String>(conn, "SELECT cmp_query(?1)", [m.to_string()]))
    };
    seen.find = mql("find", true);
    seen.find_all = mql("find", false);
    seen.ask = mql("ask", true);
    // cmp_expand on every ref seen, and the odd ids.
    let mut all: BTreeSet<String> = seen.search.keys().cloned().collect();
    for p in seen.packs.values() {
        all.extend(refs_of(&p["items"]));
    }
    all.extend(refs_of(&seen.find_all["items"]));
    all.extend(odd_ids.iter().map(|s| s.to_string()));
    let eo = json!({"now": NOW, "scope": extra.get("scope").cloned().unwrap_or(json!("default"))}).to_string();
    for r in &all {
        for d in ["document", "neighbors"] {
            let out = parse(&q1::<String>(conn, "SELECT cmp_expand(?1, ?2, ?3)", params![r, d, eo]));
            if d == "document" {
                seen.documents.insert(r.clone(), out);
            } else {
                seen.neighbors.insert(r.clone(), out);
            }
        }
    }
    // Two session turns: the second sends nothing new.
    let turn = || -> Value {
        let out: String = conn
            .query_row("SELECT cmp_context(?1, 'claude', NULL, ?2, ?3)", params![task, SESSION, o.to_string()], |r| {
                r.get(0)
            })
            .unwrap_or_else(|e| panic!("session turn: {e}"));
        parse(&out)["working_memory"].clone()
    };
    seen.turn1 = turn();
    let turn2 = turn();
    assert_eq!(turn2["new"], json!([]), "second identical turn sends nothing new");
    conn.query_row(
        "SELECT cmp_session_reset(?1, ?2)",
        params![SESSION, json!({"scope": eo_scope(&extra)}).to_string()],
        |r| r.get::<_, i64>(0),
    )
    .expect("reset");
    if integrity == "ok" {
        assert_consistent(conn);
    } else {
        conn.execute("INSERT INTO cmp_memories_fts(cmp_memories_fts, rank) VALUES('integrity-check', 1)", [])
            .expect("FTS5 integrity-check");
        assert_eq!(q1::<String>(conn, "PRAGMA integrity_check", []), integrity);
    }
    if std::env::var("CMP_ODD_PRINT").is_ok() {
        for id in odd_ids {
            eprintln!(
                "{id}: search {:?}; layers {:?}; claude item {}; find {}; find_all {}; document {}; \
                 neighbors {}; warnings {}; turn1 {}",
                seen.search.get(*id),
                seen.packs.keys().map(|p| (p.clone(), seen.layer(p, id))).collect::<Vec<_>>(),
                seen.claude_item(id).map_or("-".into(), Value::to_string),
                seen.in_find(id).map_or("-".into(), Value::to_string),
                item(&seen.find_all["items"], id).map_or("-".into(), Value::to_string),
                seen.documents.get(*id).map_or("-".into(), Value::to_string),
                seen.neighbors.get(*id).map_or("-".into(), Value::to_string),
                seen.warnings,
                seen.turn1,
            );
        }
    }
    seen
}

fn eo_scope(extra: &Value) -> String {
    extra.get("scope").and_then(Value::as_str).unwrap_or("default").to_string()
}

fn entity_links(conn: &Connection, id: &str) -> i64 {
    q1(
        conn,
        "SELECT count(*) FROM cmp_memory_entities AS l JOIN cmp_memories AS m ON m.rid = l.rid WHERE m.id = ?1",
        [id],
    )
}

// ------------------------------------------------------------------------------------- entities

/// Malformed or non-array `entities` link nothing and read as no entities; the row is otherwise a
/// normal memory (found by its words, packed in its kind's layer). In an array, only non-blank
/// strings count.
#[test]
fn malformed_entities_read_as_none() {
    let conn = base();
    let cases = [
        ("mem_0dd000000e01", "NULL", vec![]),
        ("mem_0dd000000e02", "'[oops'", vec![]),
        ("mem_0dd000000e03", "'{\"a\":1}'", vec![]),
        ("mem_0dd000000e04", "'[1,2,null]'", vec![]),
        ("mem_0dd000000e05", "'\"Dana\"'", vec![]),
        ("mem_0dd000000e06", "'[\"Dana\", 5, null, \"\", \"  \", [\"Lee\"], {\"n\":\"Lee\"}]'", vec!["Dana"]),
        ("mem_0dd000000e07", "x'5b22446122'", vec![]),
        ("mem_0dd000000e08", "42", vec![]),
    ];
    for (id, value, _) in &cases {
        odd(&conn, id, &format!("Orion quarterly review notes {id}"), "entities", value);
    }
    let ids: Vec<&str> = cases.iter().map(|c| c.0).collect();
    let seen = run_everything(&conn, "orion quarterly review notes", json!({}), &ids);
    for (id, _, want) in &cases {
        assert!(seen.found(id), "{id} is found by its words");
        assert_eq!(seen.layer("claude", id).as_deref(), Some("facts"), "{id}");
        let it = seen.claude_item(id).expect("packed");
        assert_eq!(it["entities"], json!(want), "{id}");
        assert_eq!(seen.documents[*id]["document"]["entities"], json!(want), "{id}");
        assert_eq!(entity_links(&conn, id), want.len() as i64, "{id}");
        // Neighbours: only through a valid link.
        assert_eq!(seen.neighbors[*id]["found"], true);
    }
    // The row whose array names Dana is Dana's neighbour; the others are nobody's.
    let dana = &seen.neighbors["mem_0dd000000e06"]["neighbors"];
    assert_eq!(dana[0]["entity"], "Dana");
    assert!(refs_of(&dana[0]["items"]).contains(&"mem_00000000b002".to_string()));
    for (id, _, want) in &cases {
        if want.is_empty() {
            assert_eq!(seen.neighbors[*id]["neighbors"], json!([]), "{id}");
        }
    }
}

// ----------------------------------------------------------------------------------- timestamps

/// Unparseable timestamps never hide a row and never fail a call. An unparseable `captured_at`
/// counts as visible at every `now` and `as_of`; an unparseable `occurred_at` is shown verbatim as
/// the item's `occurred_at`, counts as age 0 (fresh) for the recency weight, and sorts by its text in
/// the recency retriever (so `'yesterday'` sorts after every ISO date: it is offered as the newest).
#[test]
fn bad_timestamps_are_visible_and_shown_verbatim() {
    let conn = base();
    let cases = [
        ("mem_0dd000000t01", "occurred_at", "'yesterday'"),
        ("mem_0dd000000t02", "occurred_at", "'2026-13-45'"),
        ("mem_0dd000000t03", "occurred_at", "''"),
        ("mem_0dd000000t04", "occurred_at", "NULL"),
        ("mem_0dd000000t05", "occurred_at", "20260601"),
    ];
    for (id, col, value) in &cases {
        odd(&conn, id, &format!("Orion budget forecast {id}"), col, value);
    }
    // captured_at itself: garbage, empty, an impossible date (NOT NULL refuses a NULL).
    for (id, value) in
        [("mem_0dd000000c01", "'yesterday'"), ("mem_0dd000000c02", "''"), ("mem_0dd000000c03", "'2026-13-45'")]
    {
        raw(&conn, "id, content, captured_at", &format!("'{id}', 'Orion budget forecast {id}', {value}"));
    }
    let e = conn
        .execute("INSERT INTO cmp_memories(content, captured_at) VALUES ('x', NULL)", [])
        .expect_err("captured_at is NOT NULL");
    assert!(e.to_string().contains("NOT NULL"), "{e}");
    let ids = [
        "mem_0dd000000t01",
        "mem_0dd000000t02",
        "mem_0dd000000t03",
        "mem_0dd000000t04",
        "mem_0dd000000t05",
        "mem_0dd000000c01",
        "mem_0dd000000c02",
        "mem_0dd000000c03",
    ];
    let seen = run_everything(&conn, "orion budget forecast", json!({}), &ids);
    for id in ids {
        assert!(seen.found(id), "{id} is visible");
        assert!(seen.claude_item(id).is_some(), "{id} is packed");
    }
    let shown = |id: &str| seen.claude_item(id).expect("packed")["occurred_at"].clone();
    assert_eq!(shown("mem_0dd000000t01"), "yesterday");
    assert_eq!(shown("mem_0dd000000t02"), "2026-13-45");
    assert_eq!(shown("mem_0dd000000t03"), "");
    assert_eq!(shown("mem_0dd000000t04"), "2026-05-20T00:00:00Z", "NULL occurred_at ⇒ captured_at");
    assert_eq!(shown("mem_0dd000000t05"), "20260601", "an integer is read as its text");
    assert_eq!(shown("mem_0dd000000c01"), "yesterday", "captured_at stands in for occurred_at");
    // as_of long ago: rows with an unparseable captured_at are still visible (the rest are not).
    let past = run_everything(&conn, "orion budget forecast", json!({"as_of": "2000-01-01T00:00:00Z"}), &[]);
    let visible: BTreeSet<&str> = past.search.keys().map(String::as_str).collect();
    assert_eq!(visible, BTreeSet::from(["mem_0dd000000c01", "mem_0dd000000c02", "mem_0dd000000c03"]));
    // Recency: a text occurred_at sorts after ISO dates, so it is offered first among recent rows.
    let recent = try_search(&conn, "", Some(&now_opts())).expect("search");
    let first: BTreeSet<&str> = recent[..2].iter().map(|h| h.r#ref.as_str()).collect();
    assert_eq!(first, BTreeSet::from(["mem_0dd000000c01", "mem_0dd000000t01"]), "'yesterday' sorts as the newest");
}

// ----------------------------------------------------------------------------------------- kinds

/// A kind the CHECK refuses (here written with `PRAGMA ignore_check_constraints`, as in a database
/// created before the CHECK existed) is packed in the facts layer, like `semantic`. The same goes
/// for a mis-cased `'Negative'`: it is NOT a hard rule (neither the constraints layer nor the rules
/// every pack receives). MQL `layers` cannot name an unknown kind, so a `layers` filter drops it.
#[test]
fn unknown_kinds_are_facts() {
    let conn = base();
    let e = conn
        .execute("INSERT INTO cmp_memories(content, kind) VALUES ('x', 'gossip')", [])
        .expect_err("the CHECK refuses an unknown kind");
    assert!(e.to_string().contains("CHECK"), "{e}");
    conn.execute_batch("PRAGMA ignore_check_constraints = 1").expect("pragma");
    for (id, kind) in [("mem_0dd000000k01", "gossip"), ("mem_0dd000000k02", "Negative"), ("mem_0dd000000k03", "")] {
        odd(&conn, id, &format!("Orion rumour mill {id}"), "kind", &format!("'{kind}'"));
    }
    conn.execute_batch("PRAGMA ignore_check_constraints = 0").expect("pragma");
    let ids = ["mem_0dd000000k01", "mem_0dd000000k02", "mem_0dd000000k03"];
    // SQLite's integrity_check verifies CHECK constraints, so it names the rows' table: that is the
    // database telling the truth about these rows, not corruption.
    let seen =
        run_everything_in(&conn, "orion rumour mill", json!({}), &ids, "CHECK constraint failed in cmp_memories");
    for id in ids {
        for profile in ["generic", "claude", "gpt", "cursor"] {
            assert_eq!(seen.layer(profile, id).as_deref(), Some("facts"), "{id} in {profile}");
        }
        let doc = &seen.documents[id]["document"];
        assert_eq!(doc["layer"], "facts");
        assert!(seen.in_find(id).is_some(), "{id} in MQL find");
    }
    assert_eq!(seen.documents["mem_0dd000000k01"]["document"]["kind"], "gossip", "the kind is shown as stored");
    // Not a hard rule: an unrelated task gets the real rule but not the 'Negative' row.
    let pack = parse(&q1::<String>(
        &conn,
        "SELECT cmp_context('what about the weather', 'claude', NULL, NULL, ?1)",
        [now_opts()],
    ));
    assert!(item(&pack["items"], "mem_00000000b003").is_some_and(|i| i["layer"] == "constraints"));
    assert!(item(&pack["items"], "mem_0dd000000k02").is_none_or(|i| i["layer"] != "constraints"));
    // MQL layers: no kind name selects 'gossip'.
    let all_kinds = json!(["semantic", "episodic", "style", "decision", "preference", "negative", "procedural"]);
    let v = parse(&q1::<String>(
        &conn,
        "SELECT cmp_query(?1)",
        [json!({"find": "orion rumour mill", "layers": all_kinds, "now": NOW, "k": 50}).to_string()],
    ));
    for id in ids {
        assert!(item(&v["items"], id).is_none(), "{id} survives a layers filter");
    }
}

// ----------------------------------------------------------------------------------------- trust

/// `trust` and `confidence` are read leniently: NULL (SQLite stores NaN as NULL, and `0.0/0.0` is
/// NULL), text that is not a number, and ±infinity read as absent (the item's `confidence` is null
/// and the packer uses trust 0.5); finite values outside [0, 1] are clamped into it.
#[test]
fn trust_out_of_range_or_not_a_number() {
    let conn = base();
    let cases: [(&str, &str, &str, Value); 8] = [
        ("mem_0dd000000r01", "trust", "0.0/0.0", Value::Null),
        ("mem_0dd000000r02", "trust", "'1e999'", Value::Null),
        ("mem_0dd000000r03", "trust", "-5", json!(0.0)),
        ("mem_0dd000000r04", "trust", "7", json!(1.0)),
        ("mem_0dd000000r05", "trust", "'high'", Value::Null),
        ("mem_0dd000000r06", "trust", "-1e999", Value::Null),
        ("mem_0dd000000r07", "confidence", "'1e999'", json!(0.5)),
        ("mem_0dd000000r08", "confidence", "-0.25", json!(0.0)),
    ];
    for (id, col, value, _) in &cases {
        odd(&conn, id, &format!("Orion vendor shortlist {id}"), col, value);
    }
    assert_eq!(q1::<String>(&conn, "SELECT typeof(trust) FROM cmp_memories WHERE id = 'mem_0dd000000r01'", []), "null");
    assert_eq!(q1::<String>(&conn, "SELECT typeof(trust) FROM cmp_memories WHERE id = 'mem_0dd000000r02'", []), "real");
    assert_eq!(q1::<String>(&conn, "SELECT typeof(trust) FROM cmp_memories WHERE id = 'mem_0dd000000r05'", []), "text");
    let ids: Vec<&str> = cases.iter().map(|c| c.0).collect();
    let seen = run_everything(&conn, "orion vendor shortlist", json!({}), &ids);
    for (id, col, value, want) in &cases {
        let it = seen.claude_item(id).unwrap_or_else(|| panic!("{id} packed"));
        assert_eq!(it["confidence"], *want, "{col} = {value}");
        assert!(seen.in_find(id).is_some());
    }
    // min_trust narrows on confidence-else-trust; an absent one counts as 0.
    let v = parse(&q1::<String>(
        &conn,
        "SELECT cmp_query(?1)",
        [json!({"find": "orion vendor shortlist", "min_trust": 0.01, "now": NOW, "k": 50}).to_string()],
    ));
    let kept: BTreeSet<String> = refs_of(&v["items"]).into_iter().filter(|r| r.starts_with("mem_0dd")).collect();
    assert_eq!(kept, BTreeSet::from(["mem_0dd000000r04".to_string(), "mem_0dd000000r07".to_string()]));
}

// ------------------------------------------------------------------------------------ supersession

/// A superseded_by cycle (A→B→A, or A→A) hides every row in it: each names an existing row as its
/// replacement, so each is superseded, and no live head exists. MQL with `valid_only: false` still
/// lists them. A session that held A before the cycle formed is told A was superseded, with a null
/// replacement.
#[test]
fn supersession_cycles_hide_every_row_in_them() {
    let conn = base();
    let a = odd(&conn, "mem_0dd000000s0a", "Orion pricing tier A", "kind", "'decision'");
    let b = odd(&conn, "mem_0dd000000s0b", "Orion pricing tier B", "kind", "'decision'");
    let me = odd(&conn, "mem_0dd000000s0c", "Orion pricing tier C", "kind", "'decision'");
    // A session first holds all three.
    let before = parse(&q1::<String>(
        &conn,
        "SELECT cmp_context('orion pricing tier', 'claude', NULL, 'held', ?1)",
        [now_opts()],
    ));
    let new: BTreeSet<String> =
        before["working_memory"]["new"].as_array().unwrap().iter().map(|n| n["ref"].as_str().unwrap().into()).collect();
    assert!(new.contains(&a) && new.contains(&b) && new.contains(&me));
    conn.execute_batch(
        "UPDATE cmp_memories SET superseded_at = '2026-05-25T00:00:00Z', superseded_by = CASE id
             WHEN 'mem_0dd000000s0a' THEN 'mem_0dd000000s0b'
             WHEN 'mem_0dd000000s0b' THEN 'mem_0dd000000s0a'
             ELSE 'mem_0dd000000s0c' END
         WHERE id IN ('mem_0dd000000s0a', 'mem_0dd000000s0b', 'mem_0dd000000s0c')",
    )
    .expect("cycles");
    let ids = [a.as_str(), b.as_str(), me.as_str()];
    let seen = run_everything(&conn, "orion pricing tier", json!({}), &ids);
    for id in ids {
        assert!(!seen.found(id), "{id} is hidden");
        assert!(!seen.packed_anywhere(id), "{id} is not packed");
        assert!(seen.in_find(id).is_none());
        assert!(item(&seen.find_all["items"], id).is_some(), "{id} is listed with valid_only false");
        // Its document is readable by id, and names its (readable) replacement.
        assert_eq!(seen.documents[id]["found"], true);
    }
    assert_eq!(seen.documents[&a]["document"]["superseded_by"], b);
    assert_eq!(seen.documents[&me]["document"]["superseded_by"], me);
    // As of before the cycle formed, all three are current.
    let past = run_everything(&conn, "orion pricing tier", json!({"as_of": "2026-05-24T00:00:00Z"}), &[]);
    for id in ids {
        assert!(past.found(id), "{id} before the cycle");
    }
    // The session that held them: superseded, no replacement (a cycle has no live head).
    let after = parse(&q1::<String>(
        &conn,
        "SELECT cmp_context('orion pricing tier', 'claude', NULL, 'held', ?1)",
        [now_opts()],
    ));
    let sup = after["working_memory"]["superseded"].as_array().expect("superseded").clone();
    for id in ids {
        assert!(sup.contains(&json!({"ref": id, "replacement": null})), "{id}: {sup:?}");
    }
}

/// A session is told a ref it holds was superseded, and by what, as of its own horizon: a
/// replacement captured after `now` is not named (it was, by id, to a reader that cannot see it),
/// and a replacement that is itself superseded only after `now` is the head.
#[test]
fn a_replacement_is_named_only_when_visible_at_the_horizon() {
    let conn = base();
    let a = odd(&conn, "mem_0dd000000r0a", "Orion pricing plan A", "kind", "'decision'");
    let task = "orion pricing plan";
    let turn = |sid: &str| {
        parse(&q1::<String>(&conn, "SELECT cmp_context(?1, 'claude', NULL, ?2, ?3)", params![task, sid, now_opts()]))
    };
    for sid in ["future", "chain"] {
        assert!(turn(sid)["working_memory"]["new"].to_string().contains(&a));
    }
    // B, captured after NOW, replaces A "since forever" (superseded_at NULL).
    raw(
        &conn,
        "id, content, kind, captured_at",
        "'mem_0dd000000r0b', 'Orion pricing plan B', 'decision', '2026-07-01T00:00:00Z'",
    );
    conn.execute("UPDATE cmp_memories SET superseded_by = 'mem_0dd000000r0b' WHERE id = ?1", [&a]).unwrap();
    let sup = turn("future")["working_memory"]["superseded"].clone();
    assert_eq!(sup, json!([{"ref": a, "replacement": null}]), "a replacement not yet captured is not named");
    // C (visible) replaces A; D replaces C only after NOW: at NOW, C is the head.
    raw(
        &conn,
        "id, content, kind, captured_at",
        "'mem_0dd000000r0c', 'Orion pricing plan C', 'decision', '2026-05-21T00:00:00Z'",
    );
    raw(
        &conn,
        "id, content, kind, captured_at",
        "'mem_0dd000000r0d', 'Orion pricing plan D', 'decision', '2026-05-22T00:00:00Z'",
    );
    conn.execute_batch(
        "UPDATE cmp_memories SET superseded_by = 'mem_0dd000000r0c', superseded_at = '2026-05-25T00:00:00Z'
             WHERE id = 'mem_0dd000000r0a';
         UPDATE cmp_memories SET superseded_by = 'mem_0dd000000r0d', superseded_at = '2026-06-15T00:00:00Z'
             WHERE id = 'mem_0dd000000r0c';",
    )
    .unwrap();
    let sup = turn("chain")["working_memory"]["superseded"].clone();
    assert_eq!(sup, json!([{"ref": a, "replacement": "mem_0dd000000r0c"}]), "the head at the horizon");
}

/// A `superseded_by` naming no row (dangling) does not hide the row, and its document shows no
/// replacement. A `superseded_at` that is NULL or unparseable counts as "superseded since forever"
/// (hidden at every horizon); one in the future hides the row only from then on.
#[test]
fn dangling_replacements_and_bad_superseded_at() {
    let conn = base();
    let dangling = raw(
        &conn,
        "id, content, captured_at, superseded_by, superseded_at",
        "'mem_0dd000000d01', 'Orion supplier contract dangling', '2026-05-20T00:00:00Z', 'mem_ffffffffffff', \
         '2026-05-25T00:00:00Z'",
    );
    let mut hidden = Vec::new();
    for (id, at) in [("mem_0dd000000d02", "NULL"), ("mem_0dd000000d03", "'soon'"), ("mem_0dd000000d04", "''")] {
        hidden.push(raw(
            &conn,
            "id, content, captured_at, superseded_by, superseded_at",
            &format!("'{id}', 'Orion supplier contract {id}', '2026-05-20T00:00:00Z', 'mem_00000000b001', {at}"),
        ));
    }
    let future = raw(
        &conn,
        "id, content, captured_at, superseded_by, superseded_at",
        "'mem_0dd000000d05', 'Orion supplier contract future', '2026-05-20T00:00:00Z', 'mem_00000000b001', \
         '2026-07-01T00:00:00Z'",
    );
    let mut ids = vec![dangling.as_str(), future.as_str()];
    ids.extend(hidden.iter().map(String::as_str));
    let seen = run_everything(&conn, "orion supplier contract", json!({}), &ids);
    assert!(seen.found(&dangling) && seen.claude_item(&dangling).is_some());
    assert_eq!(seen.documents[&dangling]["document"]["superseded_by"], Value::Null);
    let d = item(&seen.find_all["items"], &dangling).expect("listed");
    assert!(seen.in_find(&dangling).is_some(), "valid_only keeps a row whose replacement does not exist: {d}");
    // Right after they were captured, the unparseable ones are already superseded; the dangling
    // one is not.
    let early = try_search(
        &conn,
        "orion supplier contract",
        Some(&json!({"now": NOW, "as_of": "2026-05-21T00:00:00Z"}).to_string()),
    )
    .expect("search");
    assert!(early.iter().any(|x| x.r#ref == dangling));
    for h in &hidden {
        assert!(!seen.found(h) && !seen.packed_anywhere(h), "{h} is superseded");
        assert!(early.iter().all(|x| &x.r#ref != h), "{h} is superseded at every horizon");
    }
    assert!(seen.found(&future), "superseded only from July");
    let later = try_search(&conn, "orion supplier contract", Some(&json!({"now": "2026-08-01T00:00:00Z"}).to_string()))
        .expect("search");
    assert!(later.iter().all(|x| x.r#ref != future));
}

// ------------------------------------------------------------------------------------ embeddings

/// Embeddings of the wrong length or type. Without `query_embedding` they are never read (the
/// hashing embedder ranks by text). With one, a row whose blob has another size, or is not a blob,
/// is skipped, and the json format warns how many were skipped; a query whose size matches no row
/// is the documented error (naming the size of the first mismatching blob, in bytes / 4: a 3-byte
/// blob counts as 0 dimensions). Blobs of the right size holding NaN or infinities score cosine 0.
#[test]
fn embeddings_of_the_wrong_length_or_type() {
    let conn = base();
    let nan = common::f32_blob(&[f32::NAN, 1.0, 0.0, 0.0]);
    let inf = common::f32_blob(&[f32::INFINITY, 0.0, 0.0, 0.0]);
    use rusqlite::types::Value as Sql;
    let cases: Vec<(&str, Sql)> = vec![
        ("mem_0dd000000v01", Sql::Blob(vec![1, 2, 3])),
        ("mem_0dd000000v02", Sql::Blob(common::f32_blob(&[1.0]))),
        ("mem_0dd000000v03", Sql::Text("[1,0,0,0]".into())),
        ("mem_0dd000000v04", Sql::Blob(Vec::new())),
        ("mem_0dd000000v05", Sql::Blob(nan)),
        ("mem_0dd000000v06", Sql::Blob(inf)),
        ("mem_0dd000000v07", Sql::Integer(7)),
    ];
    for (id, emb) in &cases {
        conn.execute(
            "INSERT INTO cmp_memories(id, content, captured_at, embedding) VALUES (?1, ?2, '2026-05-20T00:00:00Z', ?3)",
            params![id, format!("Orion hardware order {id}"), emb],
        )
        .expect("insert");
    }
    let ids: Vec<&str> = cases.iter().map(|c| c.0).collect();
    // Without query_embedding: every row is an ordinary text match.
    let seen = run_everything(&conn, "orion hardware order", json!({}), &ids);
    for id in &ids {
        assert!(seen.found(id) && seen.claude_item(id).is_some(), "{id}");
    }
    assert_eq!(seen.warnings, json!([]));
    // …and the stored embeddings are not read at all: without them, the same results.
    let with = try_search(&conn, "orion hardware order", Some(&now_opts())).expect("search");
    conn.execute_batch(
        "CREATE TEMP TABLE saved AS SELECT rid, embedding FROM cmp_memories;
         UPDATE cmp_memories SET embedding = NULL;",
    )
    .expect("clear embeddings");
    let without = try_search(&conn, "orion hardware order", Some(&now_opts())).expect("search");
    assert_eq!(with, without);
    conn.execute_batch(
        "UPDATE cmp_memories SET embedding = (SELECT s.embedding FROM saved AS s WHERE s.rid = cmp_memories.rid);
         DROP TABLE saved;",
    )
    .expect("restore embeddings");
    // With a 4-dimensional query: mismatched rows are skipped (and counted); NaN/inf rows score 0.
    let seen = run_everything(&conn, "orion hardware order", json!({"query_embedding": [1, 0, 0, 0]}), &ids);
    for id in &ids {
        assert!(seen.found(id), "{id} is still found by its words");
    }
    // v01 (3 bytes), v02 (1 dim), v03 (text), v04 (empty), v07 (integer): skipped.
    assert_eq!(
        seen.warnings,
        json!([{"kind": "skipped_embeddings", "count": 5,
            "why": "stored embeddings with another dimension than query_embedding were not compared"}])
    );
    for id in ["mem_0dd000000v05", "mem_0dd000000v06"] {
        assert!(seen.search[id].0.contains(&"vector".to_string()), "{id} was compared (cosine 0)");
    }
    // A 1-dimensional query matches only the 1-dimensional row; the others are skipped.
    let seen = run_everything(&conn, "orion hardware order", json!({"query_embedding": [1]}), &ids);
    assert!(seen.search["mem_0dd000000v02"].0.contains(&"vector".to_string()));
    // A 3-dimensional query matches no row: the documented error.
    let e = try_search(&conn, "orion", Some(&json!({"now": NOW, "query_embedding": [1, 0, 0]}).to_string()))
        .expect_err("no row has 3 dimensions");
    assert!(e.starts_with("cmp_search: query_embedding has 3 dimensions but stored embeddings have "), "{e}");
    // In a scope where the only embedding is a 3-byte blob, the message names the malformed blob.
    raw(
        &conn,
        "content, scope, captured_at, embedding",
        "'Orion odd blob', 'blobs', '2026-05-20T00:00:00Z', x'010203'",
    );
    let e =
        try_search(&conn, "orion", Some(&json!({"now": NOW, "scope": "blobs", "query_embedding": [1]}).to_string()))
            .expect_err("no row has 1 dimension");
    assert_eq!(
        e,
        "cmp_search: query_embedding has 1 dimensions but the stored embeddings are 3-byte blobs, not float32 arrays"
    );
}

// --------------------------------------------------------------------------------------- content

/// A 200 kB memory (ordinary words) is packed compressed (its head or a truncation) within budget,
/// and `cmp_expand` returns it whole.
#[test]
fn huge_content_is_packed_compressed() {
    let conn = base();
    let big: String = (0..20_000).map(|i| format!("orion{} ", i % 97)).collect::<String>();
    let big = format!("Orion archive dump. {big}");
    assert!(big.len() > 150_000);
    conn.execute(
        "INSERT INTO cmp_memories(id, content, captured_at) VALUES ('mem_0dd000000x01', ?1, '2026-05-31T00:00:00Z')",
        [&big],
    )
    .expect("insert");
    let seen = run_everything(&conn, "orion archive dump", json!({}), &["mem_0dd000000x01"]);
    for profile in ["generic", "claude", "gpt", "cursor"] {
        let it = item(&seen.packs[profile]["items"], "mem_0dd000000x01").expect("the big row is packed");
        assert!(it["content"].as_str().unwrap().len() < big.len());
        assert!(it["why"]["compressed"].is_string(), "{it}");
    }
    assert_eq!(seen.documents["mem_0dd000000x01"]["document"]["content"], big.as_str());
}

/// A large memory (a 2 MB transcript of ordinary words) must pack in bounded time and memory. The
/// packer builds every upgrade step of an item up front, each holding its own truncated copy of the
/// content (`pack::upgrades`: one step per 128 tokens), so time and memory grow with the square of
/// the content's length. Measured in release: 200 kB → 0.17 s and 50 MB resident; 800 kB → 2.6 s,
/// 650 MB; 1.6 MB → 10.7 s, 2.5 GB; 2 MB (this test) → 48 s; 3.2 MB → 52 s. A few-MB memory can
/// exhaust the host's memory.
#[test]
fn a_large_memory_packs_in_bounded_time() {
    let conn = base();
    let big: String = (0..250_000).map(|i| format!("orion{} ", i % 97)).collect::<String>();
    let big = format!("Orion meeting transcript. {big}");
    conn.execute(
        "INSERT INTO cmp_memories(id, content, captured_at) VALUES ('mem_0dd000000x05', ?1, '2026-05-31T00:00:00Z')",
        [&big],
    )
    .expect("insert");
    let t0 = std::time::Instant::now();
    let pack: String =
        q1(&conn, "SELECT cmp_context('orion meeting transcript', 'claude', NULL, NULL, ?1)", [now_opts()]);
    assert!(pack.contains("mem_0dd000000x05"));
    // A guard against the quadratic blow-up above (48 s in release, minutes in a debug build), not a
    // benchmark: the bound leaves room for a debug build on a loaded 2-core machine.
    assert!(t0.elapsed() < std::time::Duration::from_secs(60), "{:?}", t0.elapsed());
}

/// An empty content and a punctuation-only content have no words: only a recall (empty task)
/// offers them, through the recency retriever, with no relevance. A recall gives the facts layer no
/// weight, so as facts they are left out of the pack and reachable through its cursor; as episodes
/// they are packed, `""` costing only its item framing (its content counts 0 tokens).
#[test]
fn empty_and_punctuation_content() {
    let conn = base();
    odd(&conn, "mem_0dd000000x02", "", "kind", "'semantic'");
    odd(&conn, "mem_0dd000000x03", "?!… --- ;;; ((( )))", "kind", "'semantic'");
    let ids = ["mem_0dd000000x02", "mem_0dd000000x03"];
    let seen = run_everything(&conn, "orion launch", json!({}), &ids);
    for id in ids {
        assert!(!seen.found(id) && !seen.packed_anywhere(id), "{id} matches no task words");
    }
    let recall = run_everything(&conn, "", json!({}), &ids);
    for id in ids {
        let (retrievers, relevance, _) = &recall.search[id];
        assert_eq!(retrievers, &vec!["recency".to_string()], "{id}");
        assert_eq!(*relevance, None);
        assert!(recall.paged.contains(&id.to_string()), "{id} is reachable through the pack cursor");
    }
    conn.execute("UPDATE cmp_memories SET kind = 'episodic' WHERE id IN ('mem_0dd000000x02', 'mem_0dd000000x03')", [])
        .expect("update");
    let recall = run_everything(&conn, "", json!({}), &ids);
    let empty = recall.claude_item("mem_0dd000000x02").expect("the empty row is packed for a recall");
    assert_eq!(empty["content"], "");
    assert_eq!(empty["layer"], "recency");
    assert!(recall.claude_item("mem_0dd000000x03").is_some());
    assert_eq!(q1::<i64>(&conn, "SELECT cmp_tokens('')", []), 0);
}

/// A memory whose content is one very long token (a pasted base64 blob, a minified file) is stored
/// fine, but every call that retrieves it stems that token, and the Porter stemmer cmp uses is
/// quadratic in the token's length (FTS5's own porter tokenizer passes tokens over 64 bytes through
/// unstemmed): with a 1 MiB token, this cmp_context call took 67 s in release.
#[test]
fn a_long_single_token_content_takes_bounded_time() {
    let conn = base();
    let blob = format!("Orion logo data {}", "iVBORw0KGgo".repeat((1 << 20) / 11));
    conn.execute(
        "INSERT INTO cmp_memories(id, content, captured_at) VALUES ('mem_0dd000000x04', ?1, '2026-05-31T00:00:00Z')",
        [&blob],
    )
    .expect("insert");
    let t0 = std::time::Instant::now();
    let pack: String = q1(&conn, "SELECT cmp_context('orion logo data', 'claude', NULL, NULL, ?1)", [now_opts()]);
    assert!(pack.contains("mem_0dd000000x04"));
    // A guard against the quadratic blow-up above (48 s in release, minutes in a debug build), not a
    // benchmark: the bound leaves room for a debug build on a loaded 2-core machine.
    assert!(t0.elapsed() < std::time::Duration::from_secs(60), "{:?}", t0.elapsed());
}

/// `n` characters, each `pick` of the next number of a fixed pseudo-random sequence from `seed`.
fn random_run(seed: u64, n: usize, mut pick: impl FnMut(u64) -> char) -> String {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            pick(x)
        })
        .collect()
}

/// A memory holding a long run of letters without a space (one piece for the byte-pair encoder):
/// every growth step of a pack (128 tokens each, up to claude's 12,000) cut it, and each cut
/// encoded a piece of up to 64 bytes per token of room afresh: 300 KB took 4.7 s a call in release
/// (1 MB 46 s). The cuts' parts are now powers of two, kept between steps, and a cut encodes a few
/// times what it keeps (red-team finding).
#[test]
fn a_long_run_without_spaces_packs_in_bounded_time() {
    let conn = base();
    let run = random_run(42, 300_000, |x| (b'a' + (x >> 59) as u8 % 26) as char);
    conn.execute(
        "INSERT INTO cmp_memories(id, content, captured_at) VALUES ('mem_0dd000000x05', ?1, '2026-05-31T00:00:00Z')",
        [format!("Orion launch {run}")],
    )
    .expect("insert");
    let t0 = std::time::Instant::now();
    for model in ["claude", "gpt-4o"] {
        let pack: String =
            q1(&conn, "SELECT cmp_context('orion launch', ?1, NULL, NULL, ?2)", params![model, now_opts()]);
        assert!(pack.contains("mem_0dd000000x05"), "{model}");
        assert_accounted(&conn, &pack, Some(model));
    }
    // A guard, not a benchmark: 52 s before, 8 s after, in a debug build on an idle 2-core machine.
    assert!(t0.elapsed() < std::time::Duration::from_secs(30), "{:?}", t0.elapsed());
}

/// A long run of letters of three scripts mixed at random (Latin, Cyrillic, Han) needs more states
/// of the pieces pattern's lazy DFA than the `regex` crate keeps by default: it cleared and rebuilt
/// them every few bytes, and 1 MB took 16 s a claude pack in release (a fuzzing pass).
#[test]
fn a_long_run_of_mixed_scripts_packs_in_bounded_time() {
    let conn = base();
    let run = random_run(7, 30_000, |x| {
        let r = (x >> 33) as u32;
        let c = match r % 3 {
            0 => 0x61 + r / 3 % 26,
            1 => 0x430 + r / 3 % 32,
            _ => 0x4e00 + r / 3 % 20_000,
        };
        char::from_u32(c).expect("a letter")
    });
    conn.execute(
        "INSERT INTO cmp_memories(id, content, captured_at) VALUES ('mem_0dd000000x06', ?1, '2026-05-31T00:00:00Z')",
        [format!("Orion launch {run}")],
    )
    .expect("insert");
    let t0 = std::time::Instant::now();
    let pack: String = q1(&conn, "SELECT cmp_context('orion launch', 'claude', NULL, NULL, ?1)", [now_opts()]);
    assert!(pack.contains("mem_0dd000000x06"));
    assert_accounted(&conn, &pack, Some("claude"));
    let elapsed = t0.elapsed();
    // A guard, not a benchmark: in a debug build, 5 s after; before, not done after 200 s.
    assert!(elapsed < std::time::Duration::from_secs(30), "{elapsed:?}");
}

/// Content that once broke the token counter: a run of a million spaces (the encoder's own pattern
/// overflowed its stack on it and tiktoken-rs panicked) and 100 KB of digits (counted in quadratic
/// time). Both are packed, counted exactly, within bounded time.
#[test]
fn long_runs_of_spaces_and_digits_pack() {
    let conn = base();
    // Just under cmp_tokens's 1 MiB limit, and long enough to overflow the encoder's pattern.
    let spaces = format!("Orion spaces{}end", " ".repeat((1 << 20) - 32));
    let digits = format!("Orion digits {}", "1234567890".repeat(10_000));
    for (id, content) in [("mem_0dd000000s01", &spaces), ("mem_0dd000000s02", &digits)] {
        conn.execute(
            "INSERT INTO cmp_memories(id, content, captured_at) VALUES (?1, ?2, '2026-05-31T00:00:00Z')",
            params![id, content],
        )
        .expect("insert");
    }
    let t0 = std::time::Instant::now();
    for format in FORMATS {
        let o = json!({"now": NOW, "format": format}).to_string();
        let out: String = q1(&conn, "SELECT cmp_context('orion spaces digits', 'gpt-4o', 4000, NULL, ?1)", [&o]);
        let real: i64 = q1(&conn, "SELECT cmp_tokens(?1, 'gpt-4o')", [&out]);
        assert!(real <= 4000, "{format}: {real}");
        assert!(out.contains("mem_0dd000000s02"), "{format}");
    }
    let n: i64 = q1(&conn, "SELECT cmp_tokens(?1, 'gpt-4o')", [&spaces]);
    assert!(n > (1 << 20) / 128, "{n}");
    // A guard against the quadratic counting (minutes before), with room for a debug build.
    assert!(t0.elapsed() < std::time::Duration::from_secs(120), "{:?}", t0.elapsed());
}

/// Content that is not valid text: a blob (TEXT affinity keeps blobs as blobs) and text holding
/// invalid UTF-8. cmp reads a blob content as empty and invalid UTF-8 with U+FFFD replacements;
/// neither fails a call. FTS5 indexes the raw bytes, so the invalid-UTF-8 row is still found by its
/// valid words.
#[test]
fn content_that_is_not_valid_text() {
    let conn = base();
    raw(
        &conn,
        "id, content, captured_at",
        "'mem_0dd000000u01', x'4f72696f6e2062616467657320ff', '2026-05-31T00:00:00Z'",
    );
    raw(
        &conn,
        "id, content, captured_at",
        "'mem_0dd000000u02', CAST(x'4f72696f6e2062616467657320ff' AS TEXT), '2026-05-31T00:00:00Z'",
    );
    let ids = ["mem_0dd000000u01", "mem_0dd000000u02"];
    let seen = run_everything(&conn, "orion badges", json!({}), &ids);
    assert_eq!(seen.documents["mem_0dd000000u01"]["document"]["content"], "", "a blob content reads as empty");
    assert_eq!(seen.documents["mem_0dd000000u02"]["document"]["content"], "Orion badges \u{fffd}");
    assert!(seen.found("mem_0dd000000u02"));
}

/// Invalid UTF-8 where cmp reads names and tasks: a memory's `entities` (the gazetteer reads every
/// entity name, of every scope) and an open task's title, entities and due date. Each is read with
/// U+FFFD replacements: one such row, even in another scope, never fails a read.
#[test]
fn entities_and_tasks_that_are_not_valid_text() {
    let conn = base();
    raw(
        &conn,
        "id, content, captured_at, entities, scope",
        "'mem_0dd000000u03', 'hello', '2026-05-31T00:00:00Z', CAST(x'5b224174c3' AS TEXT) || '\"]', 'other'",
    );
    raw(
        &conn,
        "id, content, captured_at, entities",
        "'mem_0dd000000u04', 'Orion badges arrive', '2026-05-31T00:00:00Z', CAST(x'5b224f72c3' AS TEXT) || '\"]'",
    );
    conn.execute(
        "INSERT INTO cmp_tasks(title, entities, due_at) VALUES (CAST(x'4f72696f6ec3' AS TEXT),
         CAST(x'5b224174c3' AS TEXT) || '\"]', CAST(x'323032c3' AS TEXT))",
        [],
    )
    .expect("task");
    let seen = run_everything(&conn, "orion badges", json!({}), &["mem_0dd000000u04"]);
    assert!(seen.found("mem_0dd000000u04"));
    let other = run_everything(&conn, "hello", json!({"scope": "other"}), &["mem_0dd000000u03"]);
    assert!(other.found("mem_0dd000000u03"));
}

/// Ids that are not `mem_` + 12 hex: any text works as a ref (cited, expanded, held by a session);
/// an integer id is stored as its text (TEXT affinity).
#[test]
fn ids_that_are_not_mem_hex() {
    let conn = base();
    raw(&conn, "id, content, captured_at", "'hello world', 'Orion mascot vote hello', '2026-05-31T00:00:00Z'");
    raw(&conn, "id, content, captured_at", "42, 'Orion mascot vote integer', '2026-05-31T00:00:00Z'");
    raw(&conn, "id, content, captured_at", "'', 'Orion mascot vote empty id', '2026-05-31T00:00:00Z'");
    conn.execute(
        "INSERT INTO cmp_memories(id, content, captured_at)
         VALUES (?1, 'Orion mascot vote emoji id', '2026-05-31T00:00:00Z')",
        ["🚀\u{0}x"],
    )
    .expect("insert");
    let ids = ["hello world", "42", "", "🚀\u{0}x"];
    let seen = run_everything(&conn, "orion mascot vote", json!({}), &ids);
    for id in ids {
        assert!(seen.found(id), "{id:?}");
        assert!(seen.claude_item(id).is_some(), "{id:?}");
        assert_eq!(seen.documents[id]["found"], true, "{id:?}");
    }
    assert_eq!(q1::<String>(&conn, "SELECT typeof(id) FROM cmp_memories WHERE content LIKE '%integer'", []), "text");
}

/// Ids that are blobs (TEXT affinity keeps a blob a blob): such a row has no ref a caller could cite
/// or expand, and two of them would read as one ref (`""`), so no read ever shows them; the other
/// rows read as usual (a red-team pass found two blob ids sharing a ref in one pack).
#[test]
fn ids_that_are_blobs_are_never_read() {
    let conn = base();
    conn.execute_batch(
        "INSERT INTO cmp_memories(id, content, captured_at) VALUES
           (x'01', 'Orion mascot vote first blob', '2026-05-31T00:00:00Z'),
           (x'02', 'Orion mascot vote second blob', '2026-05-31T00:00:00Z')",
    )
    .expect("blob ids");
    raw(&conn, "id, content, captured_at", "'mem_0dd000000b01', 'Orion mascot vote text', '2026-05-31T00:00:00Z'");
    let seen = run_everything(&conn, "orion mascot vote", json!({}), &["mem_0dd000000b01"]);
    assert!(seen.found("mem_0dd000000b01"));
    assert!(!seen.found(""), "a blob id surfaced as the ref \"\"");
    for (r, _) in seen.search.iter() {
        assert!(!r.is_empty(), "cmp_search returned an empty ref");
    }
}

/// The same for open tasks: `cmp_tasks.id` has TEXT affinity too, so a blob stays a blob. Two open
/// tasks with blob ids read as the ref `""` both: one pack held two items with the ref `""` and a
/// session's first delta announced `""` twice (a red-team pass). A task whose id is not text is
/// never read, like such a memory.
#[test]
fn task_ids_that_are_blobs_are_never_read() {
    let conn = base();
    conn.execute_batch(
        "INSERT INTO cmp_tasks(id, title) VALUES (x'01', 'Email the Orion vendor'), (x'02', 'Book the Orion venue')",
    )
    .expect("blob task ids");
    let seen = run_everything(&conn, "orion vendor venue", json!({}), &[]);
    for (profile, pack) in &seen.packs {
        let refs = refs_of(&pack["items"]);
        assert!(refs.iter().any(|r| r.starts_with("task_")), "{profile}: the text-id task is packed: {refs:?}");
        assert!(!refs.iter().any(String::is_empty), "{profile}: a blob task id surfaced as the ref \"\": {refs:?}");
    }
    let new = refs_of(&seen.turn1["new"]);
    assert!(!new.iter().any(String::is_empty), "a session announced the ref \"\": {new:?}");
}

/// A task whose id is also a memory's id in its scope (written on purpose: generated ids differ in
/// their prefix) is not read: a pack held both under one ref, and a session announced it twice
/// (a red-team pass). The ref names the memory, as `cmp_expand` reads it. A task that shares its id
/// with a memory of another scope is read as usual, so nothing of that scope shows.
#[test]
fn a_task_sharing_a_memory_id_is_not_read() {
    let conn = base();
    conn.execute_batch(
        "INSERT INTO cmp_tasks(id, title) VALUES ('mem_00000000b001', 'Email the Orion vendor');
         INSERT INTO cmp_memories(id, content, scope) VALUES ('task_shared', 'Orion vendor notes', 'other');
         INSERT INTO cmp_tasks(id, title) VALUES ('task_shared', 'Book the Orion venue');",
    )
    .expect("colliding ids");
    let seen = run_everything(&conn, "orion vendor venue", json!({}), &[]);
    for (profile, pack) in &seen.packs {
        let refs = refs_of(&pack["items"]);
        let unique: std::collections::BTreeSet<&String> = refs.iter().collect();
        assert_eq!(unique.len(), refs.len(), "{profile}: a ref twice: {refs:?}");
        assert!(refs.iter().any(|r| r == "task_shared"), "{profile}: the other task is packed: {refs:?}");
    }
    let new = refs_of(&seen.turn1["new"]);
    let unique: std::collections::BTreeSet<&String> = new.iter().collect();
    assert_eq!(unique.len(), new.len(), "a session announced a ref twice: {new:?}");
}

// ------------------------------------------------------------------------------ redacted / scope

/// `redacted` is meant to be 0 or 1. Retrieval and the FTS index treat any value other than 0 or
/// NULL as redacted (text 'yes', 0.5, -1, 2): such a row never surfaces. `cmp_expand` and the
/// session's status check must then treat it the same way: found false / evicted, never an error.
///
/// Today `store::memory_by_id` and `store::ref_status` (and `store::live_head`) read
/// `coalesce(redacted, 0)` with `r.get::<i64>`, which fails on text or a real: `cmp_expand(id)`
/// fails with `cmp_expand: Invalid column type Text at index: 15, name: coalesce(m.redacted, 0)`
/// (an error where a hidden id should be `found: false`, so the error reveals that the id exists),
/// and every later turn of a session that held the row fails with `cmp_context: Invalid column type
/// Text at index: 2, name: coalesce(m.redacted, 0)` until the session is reset.
#[test]
fn redacted_flags_that_are_not_integers() {
    let conn = base();
    let cases = [("mem_0dd000000h01", "'yes'"), ("mem_0dd000000h02", "0.5"), ("mem_0dd000000h03", "-1")];
    for (id, _) in &cases {
        odd(&conn, id, &format!("Orion payroll secret {id}"), "kind", "'semantic'");
    }
    // A session holds them while they are readable.
    let first: String = conn
        .query_row("SELECT cmp_context('orion payroll secret', 'claude', NULL, 'h', ?1)", [now_opts()], |r| r.get(0))
        .expect("turn 1");
    assert!(cases.iter().all(|(id, _)| first.contains(id)));
    for (id, v) in &cases {
        conn.execute(&format!("UPDATE cmp_memories SET redacted = {v} WHERE id = ?1"), [id]).expect("redact");
    }
    let ids: Vec<&str> = cases.iter().map(|c| c.0).collect();
    let next: String = conn
        .query_row("SELECT cmp_context('orion payroll secret', 'claude', NULL, 'h', ?1)", [now_opts()], |r| r.get(0))
        .expect("turn 2 of a session that held a now-redacted row");
    let evicted = parse(&next)["working_memory"]["evicted"].clone();
    for id in &ids {
        assert!(evicted.as_array().unwrap().contains(&json!(id)), "{id} evicted: {evicted}");
    }
    let seen = run_everything(&conn, "orion payroll secret", json!({}), &ids);
    for id in &ids {
        assert!(!seen.found(id) && !seen.packed_anywhere(id), "{id}");
        assert_eq!(seen.documents[*id]["found"], false, "{id}");
    }
}

/// The same rows, seen only through the paths that work today: retrieval, packs, MQL and the FTS
/// index treat a non-integer `redacted` as redacted.
#[test]
fn redacted_flags_that_are_not_integers_never_surface_in_packs() {
    let conn = base();
    for (id, v) in [("mem_0dd000000h01", "'yes'"), ("mem_0dd000000h02", "0.5"), ("mem_0dd000000h03", "-1")] {
        odd(&conn, id, &format!("Orion payroll secret {id}"), "redacted", v);
    }
    let queued: i64 = conn.query_row("SELECT cmp_flush()", [], |r| r.get(0)).unwrap();
    assert!(queued >= 3, "the odd rows were queued");
    assert_eq!(fts_rows(&conn), 4, "only the four base rows are indexed");
    let hits = search(&conn, "orion payroll secret");
    assert!(hits.iter().all(|h| !h.r#ref.starts_with("mem_0dd")));
    let pack: String = q1(&conn, "SELECT cmp_context('orion payroll secret', NULL, NULL, NULL, ?1)", [now_opts()]);
    assert!(!pack.contains("mem_0dd") && !pack.contains("payroll secret"));
    let q: String = q1(
        &conn,
        "SELECT cmp_query(?1)",
        [json!({"find": "orion payroll secret", "valid_only": false, "now": NOW}).to_string()],
    );
    assert!(!q.contains("mem_0dd"));
    assert_consistent(&conn);
}

/// A `scope` that is not text (a blob) matches no scope name: the row is invisible everywhere.
/// `cmp_expand` on its id must say found false, like any id of another scope. Today it fails with
/// `cmp_expand: Invalid column type Blob at index: 14, name: scope` (`store::memory_by_id` reads the
/// scope with `r.get::<String>`), and a session that held the row fails every later turn with
/// `cmp_context: Invalid column type Blob at index: 1, name: scope` (`store::ref_status`; also
/// `store::live_head`) until it is reset.
#[test]
fn scope_that_is_a_blob() {
    let conn = base();
    odd(&conn, "mem_0dd000000q01", "Orion blob scope", "kind", "'semantic'");
    let first: String = q1(&conn, "SELECT cmp_context('orion blob scope', 'claude', NULL, 'q', ?1)", [now_opts()]);
    assert!(first.contains("mem_0dd000000q01"));
    conn.execute("UPDATE cmp_memories SET scope = x'00' WHERE id = 'mem_0dd000000q01'", []).expect("update");
    let next: String = conn
        .query_row("SELECT cmp_context('orion blob scope', 'claude', NULL, 'q', ?1)", [now_opts()], |r| r.get(0))
        .expect("turn 2 of a session that held the row");
    assert_eq!(parse(&next)["working_memory"]["evicted"], json!(["mem_0dd000000q01"]));
    let seen = run_everything(&conn, "orion blob scope", json!({}), &["mem_0dd000000q01"]);
    assert!(!seen.found("mem_0dd000000q01"));
    assert_eq!(seen.documents["mem_0dd000000q01"]["found"], false);
}

// ------------------------------------------------------------------------- rows a session loses

/// A session holds X, Y and Z; then X is redacted, Y moved to another scope and Z deleted. The
/// next turn evicts all three (the consumer should drop them) and nothing else of the output names
/// them or shows their content; the following turn names them no more. Un-redacting X makes it
/// readable again: it is announced as new. (The ids in `evicted` were served to this session
/// before they became unreadable; no other output ever carries a redacted id.)
#[test]
fn a_session_evicts_rows_that_become_unreadable() {
    let conn = base();
    let x = odd(&conn, "mem_0dd000000w01", "Orion payroll bands X", "entities", "'[\"Orion\"]'");
    let y = odd(&conn, "mem_0dd000000w02", "Orion payroll bands Y", "entities", "'[\"Orion\"]'");
    let z = odd(&conn, "mem_0dd000000w03", "Orion payroll bands Z", "entities", "'[\"Orion\"]'");
    let turn = |format: &str| -> String {
        let o = json!({"now": NOW, "format": format}).to_string();
        q1(&conn, "SELECT cmp_context('orion payroll bands', 'claude', NULL, 's', ?1)", [o])
    };
    let first = parse(&turn("smp"));
    let new: Vec<String> =
        first["working_memory"]["new"].as_array().unwrap().iter().map(|n| n["ref"].as_str().unwrap().into()).collect();
    for id in [&x, &y, &z] {
        assert!(new.contains(id), "{id} served at turn 1");
    }
    conn.execute("UPDATE cmp_memories SET redacted = 1 WHERE id = ?1", [&x]).unwrap();
    conn.execute("UPDATE cmp_memories SET scope = 'other' WHERE id = ?1", [&y]).unwrap();
    conn.execute("DELETE FROM cmp_memories WHERE id = ?1", [&z]).unwrap();
    // Unreadable now: `cmp_session` names them nowhere, even before the next turn evicts them.
    let shown = q1::<String>(&conn, "SELECT cmp_session('s')", []);
    for id in [&x, &y, &z] {
        assert!(!shown.contains(id.as_str()), "{id} shown by cmp_session before the turn: {shown}");
    }
    let out = turn("smp");
    let second = parse(&out);
    let wm = &second["working_memory"];
    assert_eq!(wm["evicted"], json!([x, y, z]), "{wm}");
    let mut rest = second.clone();
    rest["working_memory"]["evicted"] = json!([]);
    let rest = rest.to_string();
    for id in [&x, &y, &z] {
        assert!(!rest.contains(id.as_str()), "{id} named outside `evicted`: {rest}");
    }
    assert!(!out.contains("bands X") && !out.contains("bands Y") && !out.contains("bands Z"));
    let state = q1::<String>(&conn, "SELECT cmp_session('s')", []);
    for id in [&x, &y, &z] {
        assert!(!state.contains(id.as_str()), "{id} still known or in the trajectory: {state}");
    }
    // Evicted once: the next turns (json and markdown formats too) name them nowhere.
    for format in ["json", "markdown", "smp"] {
        let out = turn(format);
        for id in [&x, &y, &z] {
            assert!(!out.contains(id.as_str()), "{format}: {id} named again: {out}");
        }
    }
    // Readable again ⇒ new again.
    conn.execute("UPDATE cmp_memories SET redacted = 0 WHERE id = ?1", [&x]).unwrap();
    let back = parse(&turn("smp"));
    assert!(back["working_memory"]["new"].as_array().unwrap().iter().any(|n| n["ref"] == x.as_str()));
    assert_consistent(&conn);
}

/// Entity names that thousands of spellings share (one row of another scope names "Atlas!",
/// "Atlas?!", …: each its own entity, one gazetteer key), and a task naming thousands of entities:
/// the task's entities were deduplicated by comparing each with every one kept (seconds to a minute
/// a call at 100,000), then counted one query each. A task is now read as naming at most
/// `MAX_TASK_ENTITIES`, found in one pass.
#[test]
fn tasks_read_as_naming_thousands_of_entities_cost_what_a_few_do() {
    let conn = base();
    let variants: Vec<String> = (0..20_000)
        .map(|i| {
            format!(
                "Atlas{}",
                ["!", "?", ".", "#", "*"].iter().cycle().take(1 + i % 7).copied().collect::<String>()
                    + &"~".repeat(i / 7)
            )
        })
        .collect();
    raw(
        &conn,
        "content, entities, scope, captured_at",
        &format!("'variants', '{}', 'other', '2026-05-01T00:00:00Z'", serde_json::to_string(&variants).expect("names")),
    );
    let many: Vec<String> = (0..20_000).map(|i| format!("Guest{i:05}")).collect();
    raw(
        &conn,
        "content, entities, scope, captured_at",
        &format!("'guests', '{}', 'other', '2026-05-01T00:00:00Z'", serde_json::to_string(&many).expect("names")),
    );
    raw(
        &conn,
        "id, content, entities, captured_at",
        "'mem_0dd000000e02', 'Atlas launch review', '[\"Atlas\"]', '2026-05-02T00:00:00Z'",
    );
    let t0 = std::time::Instant::now();
    let opts = json!({"now": NOW}).to_string();
    let n: i64 = q1(
        &conn,
        "SELECT count(*) FROM cmp_search('When is the Atlas launch?', ?1) WHERE ref = 'mem_0dd000000e02'",
        [&opts],
    );
    assert_eq!(n, 1);
    let task = many.join(" and ");
    let out: String = q1(&conn, "SELECT cmp_context(?1, NULL, 2000, NULL, ?2)", params![task, opts]);
    assert!(parse(&out)["items"].is_array(), "{}", &out[..out.len().min(300)]);
    // Quadratic: 200 million comparisons and 20,000 queries a call, minutes in a debug build.
    assert!(t0.elapsed() < std::time::Duration::from_secs(60), "{:?}", t0.elapsed());
}

/// A memory naming 20,000 entities (plain SQL does not bound them; `remember` does): its names were
/// deduplicated by comparing each with every name kept before it, seconds per read of the row, and
/// every pack reads it (a context neighbour). Now one pass; repeats that differ only in case still
/// fold into the first spelling.
#[test]
fn a_memory_naming_thousands_of_entities_reads_in_linear_time() {
    let conn = base();
    let mut names: Vec<String> = (0..20_000).map(|i| format!("Guest{i:05}")).collect();
    names.extend(["guest00007".to_string(), " GUEST00007 ".to_string(), String::new()]);
    let id = raw(
        &conn,
        "id, content, entities, captured_at",
        &format!(
            "'mem_0dd000000e01', 'Orion launch party guest list', '{}', '2026-05-31T00:00:00Z'",
            serde_json::to_string(&names).expect("names")
        ),
    );
    let t0 = std::time::Instant::now();
    let out: String =
        q1(&conn, "SELECT cmp_context('orion launch party', NULL, 2000, NULL, ?1)", [json!({"now": NOW}).to_string()]);
    assert!(parse(&out)["items"].is_array(), "{out}");
    let n: i64 = q1(&conn, "SELECT count(*) FROM cmp_search('orion launch', ?1)", [json!({"now": NOW}).to_string()]);
    assert!(n >= 1);
    let doc: String = q1(&conn, "SELECT cmp_expand(?1, 'document')", [&id]);
    let shown = parse(&doc)["document"]["entities"].as_array().map(Vec::len);
    // 20,000 names: the three spellings of Guest00007 and the empty name fold away.
    assert_eq!(shown, Some(20_000), "{}", &doc[..doc.len().min(300)]);
    // Quadratic: 200 million comparisons a read, minutes in a debug build.
    assert!(t0.elapsed() < std::time::Duration::from_secs(60), "{:?}", t0.elapsed());
}
