//! `cmp_query` (MQL) and `cmp_expand`: every validation rule with its exact message, the result
//! shape of find and ask, narrowing, paging through tamper-evident cursors, expand's document and
//! neighbours, and the scope/redaction walls.

mod common;

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine;
use common::*;
use rusqlite::{params, Connection};
use serde_json::{json, Value};
use std::collections::HashSet;

const ITEM_FIELDS: [&str; 10] = [
    "ref",
    "content",
    "layer",
    "relevance",
    "relevance_basis",
    "why",
    "source_url",
    "confidence",
    "occurred_at",
    "entities",
];
const RESULT_KEYS: [&str; 7] = ["mode", "items", "count", "offset", "coverage", "cursor", "follow_ups"];
const INVALID: &str = "cursor is invalid: it was altered, truncated, or issued by another database";
const RED_ID: &str = "mem_5ec7e75ec7e7";
const RED_WORD: &str = "BLUEHERON";
const KINDS: &str = "(kinds: semantic, episodic, style, decision, preference, negative, procedural)";
const NUMBER: &str = "must be a number within [0, 1], got";
const BUDGET: &str = "budget_tokens must be an integer within [300, 6000], got";
const EXPAND: &str = "expand must be one of document, neighbors, more, got";

// ------------------------------------------------------------------------------------------ helpers

fn try_query(conn: &Connection, mql: &str) -> Result<String, String> {
    conn.query_row("SELECT cmp_query(?1)", [mql], |r| r.get(0)).map_err(|e| e.to_string())
}

fn query_text(conn: &Connection, mql: &Value) -> String {
    try_query(conn, &mql.to_string()).unwrap_or_else(|e| panic!("cmp_query({mql}): {e}"))
}

/// `cmp_query(mql)` at `NOW` (added when absent), parsed.
fn query(conn: &Connection, mql: Value) -> Value {
    let mut m = mql;
    if m.get("now").is_none() && m.get("cursor").is_none() {
        m["now"] = json!(NOW);
    }
    parse(&query_text(conn, &m))
}

fn try_expand(conn: &Connection, r: &str, direction: Option<&str>, opts: Option<&str>) -> Result<String, String> {
    conn.query_row("SELECT cmp_expand(?1, ?2, ?3)", params![r, direction, opts], |x| x.get(0))
        .map_err(|e| e.to_string())
}

fn expand_text(conn: &Connection, r: &str, direction: &str, opts: Option<&str>) -> String {
    try_expand(conn, r, Some(direction), opts).unwrap_or_else(|e| panic!("cmp_expand({r}, {direction}): {e}"))
}

fn expand(conn: &Connection, r: &str, direction: &str) -> Value {
    parse(&expand_text(conn, r, direction, Some(&now_opts())))
}

fn parse(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("not JSON ({e}): {s}"))
}

fn keys(v: &Value) -> Vec<String> {
    v.as_object().unwrap_or_else(|| panic!("not an object: {v}")).keys().cloned().collect()
}

fn item_refs(v: &Value) -> Vec<String> {
    v["items"].as_array().expect("items").iter().map(|i| i["ref"].as_str().expect("ref").to_string()).collect()
}

fn error_of(r: Result<String, String>) -> String {
    match r {
        Ok(v) => panic!("expected an error, got {v}"),
        Err(e) => e,
    }
}

fn kind_of(conn: &Connection, id: &str) -> String {
    conn.query_row("SELECT kind FROM cmp_memories WHERE id = ?1", [id], |r| r.get(0)).expect("kind")
}

fn entities_of(conn: &Connection, id: &str) -> Vec<String> {
    let raw: Option<String> =
        conn.query_row("SELECT entities FROM cmp_memories WHERE id = ?1", [id], |r| r.get(0)).expect("entities");
    raw.map(|s| serde_json::from_str(&s).expect("entity JSON")).unwrap_or_default()
}

/// Ids of the query store.
struct Store {
    review: String,
    billing: String,
    constraint: String,
    decision: String,
    preference: String,
    standup: String,
    procedure: String,
    old_review: String,
    work: String,
    garden: String,
    leaks: String,
    task: String,
    fillers: Vec<String>,
}

fn seed(conn: &Connection) -> Store {
    let review = insert_memory(
        conn,
        &Mem::new("Atlas launch review moved to Thursday with Dana.").entities(&["Atlas", "Dana"]).trust(0.9),
    );
    let billing = insert_memory(conn, &Mem::new("Atlas billing runs on Postgres 16.").entities(&["Atlas"]).trust(0.3));
    let constraint = insert_memory(
        conn,
        &Mem::new("Never deploy the Atlas launch on Fridays.").kind("negative").entities(&["Atlas"]).trust(0.8),
    );
    let mut d = Mem::new("We decided the Atlas launch ships with the new onboarding flow.")
        .kind("decision")
        .entities(&["Atlas", "Onboarding"]);
    d.confidence = Some(0.95);
    let decision = insert_memory(conn, &d);
    let preference = insert_memory(
        conn,
        &Mem::new("Dana prefers Atlas launch updates as short bullet lists.").kind("preference").entities(&["Dana"]),
    );
    let standup = insert_memory(
        conn,
        &Mem::new("Atlas standup on Monday: launch risks were discussed.").kind("episodic").entities(&["Atlas"]),
    );
    let procedure =
        insert_memory(conn, &Mem::new("To release Atlas, run make release and tag the commit.").kind("procedural"));
    let old_review = insert_memory(
        conn,
        &Mem::new("Atlas launch review is on Tuesday.")
            .entities(&["Atlas"])
            .captured_at("2026-03-01T00:00:00Z")
            .superseded(&review, "2026-04-01T00:00:00Z"),
    );
    insert_memory(
        conn,
        &Mem::new(&format!("Atlas launch secret codename is {RED_WORD}, known to Dana."))
            .id(RED_ID)
            .entities(&["Atlas", "Dana"])
            .redacted(),
    );
    let work = insert_memory(
        conn,
        &Mem::new("Atlas launch work budget is forty thousand.").entities(&["Atlas", "Dana"]).scope("work"),
    );
    let garden = insert_memory(conn, &Mem::new("Garden watering schedule is every Tuesday.").entities(&["Garden"]));
    // Superseded by the redacted row: its document must not reveal that id.
    let leaks = insert_memory(
        conn,
        &Mem::new("Orion kickoff is in the small room.")
            .entities(&["Orion"])
            .superseded(RED_ID, "2026-05-20T00:00:00Z"),
    );
    let fillers = (0..12)
        .map(|i| {
            insert_memory(
                conn,
                &Mem::new(&format!("Atlas launch checklist item {i}: {} owner confirms {}.", WORDS[i], WORDS[11 - i]))
                    .entities(&["Atlas"])
                    .trust(0.1 + 0.07 * i as f64),
            )
        })
        .collect();
    let task: String = conn
        .query_row(
            "INSERT INTO cmp_tasks(title, entities) VALUES ('Prepare Atlas launch notes', '[\"Atlas\"]') RETURNING id",
            [],
            |r| r.get(0),
        )
        .expect("task");
    Store {
        review,
        billing,
        constraint,
        decision,
        preference,
        standup,
        procedure,
        old_review,
        work,
        garden,
        leaks,
        task,
        fillers,
    }
}

const WORDS: [&str; 12] = [
    "venue", "catering", "press", "slides", "budget", "hiring", "legal", "pricing", "support", "docs", "security",
    "demo",
];

fn assert_result_shape(v: &Value, mode: &str, ctx: &str) {
    assert_eq!(keys(v), RESULT_KEYS, "{ctx}: result keys");
    assert_eq!(v["mode"], mode, "{ctx}");
    assert_eq!(keys(&v["coverage"]), ["narrowed_from", "narrowed_to", "returned", "has_more"], "{ctx}");
    let items = v["items"].as_array().expect("items");
    assert_eq!(v["count"].as_u64(), Some(items.len() as u64), "{ctx}");
    assert_eq!(v["coverage"]["returned"], v["count"], "{ctx}");
    let from = v["coverage"]["narrowed_from"].as_u64().unwrap();
    let to = v["coverage"]["narrowed_to"].as_u64().unwrap();
    let offset = v["offset"].as_u64().unwrap();
    assert!(to <= from, "{ctx}: narrowing only removes");
    assert!(offset + items.len() as u64 <= to, "{ctx}");
    let more = offset + (items.len() as u64) < to;
    assert_eq!(v["coverage"]["has_more"], more, "{ctx}");
    assert_eq!(v["cursor"].is_string(), more, "{ctx}: a cursor exactly when more remain");
    if let Some(c) = v["cursor"].as_str() {
        assert!(c.starts_with("mqlc:"), "{ctx}: {c}");
    }
    assert!(v["follow_ups"].is_array());
    let mut seen = HashSet::new();
    for it in items {
        assert_eq!(keys(it), ITEM_FIELDS, "{ctx}: {it}");
        assert!(seen.insert(it["ref"].as_str().unwrap().to_string()), "{ctx}: repeated {}", it["ref"]);
        if mode == "find" {
            assert!(it["why"].get("compressed").is_none(), "{ctx}: find never compresses");
        }
    }
}

// ------------------------------------------------------------------------------------------ validation

#[test]
fn every_validation_rule_has_its_message() {
    let conn = open();
    let long_entity = "e".repeat(161);
    let long_entity_shown = format!("\"{}…", "e".repeat(58));
    let too_many: Vec<String> = (0..21).map(|i| format!("e{i}")).collect();
    let cases: Vec<(Value, String)> = vec![
        (
            json!({"find": "x", "whatever": 1}),
            "unknown field \"whatever\" (accepted: ask, find, layers, entities, as_of, valid_only, scope, now, \
             min_relevance, min_trust, budget_tokens, model, expand, k, offset)"
                .into(),
        ),
        (json!({"ask": "x", "find": "y"}), "give exactly one of ask or find, got both".into()),
        (json!({"k": 3}), "give exactly one of ask or find, got neither".into()),
        (json!({}), "give exactly one of ask or find, got neither".into()),
        (json!({"find": "   "}), "find must be a non-blank string".into()),
        (json!({"ask": ""}), "ask must be a non-blank string".into()),
        (json!({"find": "x".repeat(501)}), "find must be at most 500 characters, got 501".into()),
        (json!({"ask": "é".repeat(501)}), "ask must be at most 500 characters, got 501".into()),
        (json!({"find": 5}), "find must be a string, got 5".into()),
        (json!({"ask": null}), "ask must be a string, got null".into()),
        (json!({"find": "x", "layers": ["semantic", "gossip"]}), format!("layers: unknown kind \"gossip\" {KINDS}")),
        (json!({"find": "x", "layers": ["facts"]}), format!("layers: unknown kind \"facts\" {KINDS}")),
        (json!({"find": "x", "layers": []}), "layers must list at least one kind".into()),
        (json!({"find": "x", "layers": "semantic"}), "layers must be an array of strings, got \"semantic\"".into()),
        (json!({"find": "x", "layers": ["semantic", 3]}), "layers[1] must be a string, got 3".into()),
        (json!({"find": "x", "entities": too_many}), "entities must list at most 20 names, got 21".into()),
        (json!({"find": "x", "entities": [""]}), "entities: each name must be 1..160 characters, got \"\"".into()),
        (json!({"find": "x", "entities": ["  "]}), "entities: each name must be 1..160 characters, got \"  \"".into()),
        (
            json!({"find": "x", "entities": [long_entity]}),
            format!("entities: each name must be 1..160 characters, got {long_entity_shown}"),
        ),
        (json!({"find": "x", "entities": ["Atlas", 7]}), "entities[1] must be a string, got 7".into()),
        (json!({"find": "x", "entities": "Atlas"}), "entities must be an array of strings, got \"Atlas\"".into()),
        (json!({"find": "x", "as_of": "soon"}), "as_of must be an ISO-8601 timestamp, got \"soon\"".into()),
        (json!({"find": "x", "as_of": 20260101}), "as_of must be an ISO-8601 string, got 20260101".into()),
        (json!({"find": "x", "now": "yesterday"}), "now must be an ISO-8601 timestamp, got \"yesterday\"".into()),
        (json!({"find": "x", "valid_only": "yes"}), "valid_only must be a boolean, got \"yes\"".into()),
        (json!({"find": "x", "valid_only": 1}), "valid_only must be a boolean, got 1".into()),
        (json!({"find": "x", "min_relevance": 2.5}), "min_relevance must be within [0, 1], got 2.5".into()),
        (json!({"find": "x", "min_relevance": -0.1}), "min_relevance must be within [0, 1], got -0.1".into()),
        (json!({"find": "x", "min_relevance": "0.5"}), format!("min_relevance {NUMBER} \"0.5\"")),
        (json!({"find": "x", "min_trust": 1.01}), "min_trust must be within [0, 1], got 1.01".into()),
        (json!({"find": "x", "min_trust": -1}), "min_trust must be within [0, 1], got -1".into()),
        (json!({"find": "x", "min_trust": true}), format!("min_trust {NUMBER} true")),
        (json!({"ask": "x", "budget_tokens": 299}), format!("{BUDGET} 299")),
        (json!({"ask": "x", "budget_tokens": 6001}), format!("{BUDGET} 6001")),
        (json!({"ask": "x", "budget_tokens": 1000.5}), format!("{BUDGET} 1000.5")),
        (json!({"ask": "x", "budget_tokens": "1000"}), format!("{BUDGET} \"1000\"")),
        (json!({"find": "x", "budget_tokens": 1000}), "budget_tokens applies to ask, not find".into()),
        (json!({"find": "x", "model": "claude"}), "model applies to ask, not find".into()),
        (json!({"ask": "x", "model": 4}), "model must be a string of at most 200 characters, got 4".into()),
        (json!({"find": "x", "expand": "sideways"}), format!("{EXPAND} \"sideways\"")),
        (json!({"find": "x", "expand": 1}), format!("{EXPAND} 1")),
        (json!({"find": "x", "k": 0}), "k must be an integer within [1, 50], got 0".into()),
        (json!({"find": "x", "k": 51}), "k must be an integer within [1, 50], got 51".into()),
        (json!({"find": "x", "k": 2.5}), "k must be an integer within [1, 50], got 2.5".into()),
        (json!({"find": "x", "k": "2"}), "k must be an integer within [1, 50], got \"2\"".into()),
        (json!({"find": "x", "offset": -1}), "offset must be an integer within [0, 1000000], got -1".into()),
        (json!({"find": "x", "scope": ""}), "scope must be a non-empty string".into()),
        (json!([]), "mql must be a JSON object, got []".into()),
        (json!("find atlas"), "mql must be a JSON object, got \"find atlas\"".into()),
        (json!(5), "mql must be a JSON object, got 5".into()),
        (json!(null), "mql must be a JSON object, got null".into()),
    ];
    for (mql, want) in cases {
        let e = error_of(try_query(&conn, &mql.to_string()));
        assert_eq!(e, format!("cmp_query: {want}"), "{mql}");
    }
    // Edges that are accepted.
    for ok in [
        json!({"find": "x".repeat(500), "now": NOW}),
        json!({"find": "x", "k": 1, "min_relevance": 0, "min_trust": 1, "now": NOW}),
        json!({"find": "x", "k": 50, "entities": (0..20).map(|i| format!("e{i}")).collect::<Vec<_>>(), "now": NOW}),
        json!({"find": "x", "entities": ["e".repeat(160)], "now": NOW}),
        json!({"ask": "x", "budget_tokens": 300, "model": "gpt-4o", "now": NOW}),
        json!({"ask": "x", "budget_tokens": 6000, "valid_only": false, "now": NOW}),
    ] {
        query_text(&conn, &ok);
    }
    // Not JSON, NULL, a blob, wrong argument counts.
    assert!(error_of(try_query(&conn, "{\"find\":")).starts_with("cmp_query: mql must be a JSON object: "));
    assert_eq!(sql_error(&conn, "SELECT cmp_query(NULL)"), "cmp_query: mql must be a JSON object, got NULL");
    assert_eq!(sql_error(&conn, "SELECT cmp_query(x'7b7d')"), "cmp_query: mql must be text, got a blob");
    assert!(sql_error(&conn, "SELECT cmp_query()").starts_with("cmp_query: takes 1 argument"));
    assert!(sql_error(&conn, "SELECT cmp_query('{}', '{}')").starts_with("cmp_query: takes 1 argument"));
    // A cursor must come alone, as a string.
    assert_eq!(
        error_of(try_query(&conn, r#"{"cursor":"mqlc:x.y","k":2}"#)),
        "cmp_query: cursor must be given alone: {\"cursor\": \"mqlc:…\"}"
    );
    assert_eq!(error_of(try_query(&conn, r#"{"cursor":5}"#)), "cmp_query: cursor must be a string");
}

#[test]
fn before_init_says_to_run_cmp_init() {
    let conn = Connection::open_in_memory().unwrap();
    cmp::register(&conn).unwrap();
    let e = error_of(try_query(&conn, r#"{"find":"atlas"}"#));
    assert!(e.starts_with("cmp_query:") && e.contains("cmp_init"), "{e}");
    for (r, d) in [("mem_000000000001", "document"), ("mem_000000000001", "neighbors"), ("mqlc:x.y", "more")] {
        let e = error_of(try_expand(&conn, r, Some(d), None));
        assert!(e.starts_with("cmp_expand:") && e.contains("cmp_init"), "{d}: {e}");
    }
}

// ------------------------------------------------------------------------------------------ results

#[test]
fn find_and_ask_results_have_their_shape() {
    let conn = open();
    let s = seed(&conn);
    let f = query(&conn, json!({"find": "atlas launch", "k": 50}));
    assert_result_shape(&f, "find", "find");
    assert_eq!(f["offset"], 0);
    assert!(f["cursor"].is_null());
    let refs = item_refs(&f);
    for id in [&s.review, &s.constraint, &s.decision, &s.standup] {
        assert!(refs.contains(id), "find lacks {id}");
    }
    assert!(!refs.contains(&s.old_review), "valid_only is the default");
    assert!(!refs.contains(&s.work), "another scope's row");
    // The garden row matches no task word; rows stored beside a match (same time, next rowid) may
    // come back as its conversational neighbours, through the context retriever only.
    if let Some(g) = f["items"].as_array().unwrap().iter().find(|i| i["ref"] == json!(s.garden)) {
        assert_eq!(g["why"]["retrievers"], json!(["context"]), "{g}");
    }
    assert!(!refs.contains(&s.task), "find returns memories");
    for it in f["items"].as_array().unwrap() {
        assert!(it["relevance"].as_f64().is_some(), "find items are scored: {it}");
    }
    // The relevance order is non-increasing.
    let rel: Vec<f64> = f["items"].as_array().unwrap().iter().map(|i| i["relevance"].as_f64().unwrap()).collect();
    assert!(rel.windows(2).all(|w| w[0] >= w[1]), "{rel:?}");
    // ask = the packed rows of cmp_context, in order.
    // (ask items carry the full `why`; cmp_context's only with audit, which costs budget: compare
    // the items without it.)
    for (model, budget) in [(None, None), (Some("claude"), Some(700)), (Some("gpt-4o"), Some(1200))] {
        let mut mql = json!({"ask": "atlas launch", "k": 50});
        if let Some(m) = model {
            mql["model"] = json!(m);
        }
        if let Some(b) = budget {
            mql["budget_tokens"] = json!(b);
        }
        let a = query(&conn, mql);
        assert_result_shape(&a, "ask", "ask");
        let pack: String = conn
            .query_row(
                "SELECT cmp_context('atlas launch', ?1, ?2, NULL, ?3)",
                params![model, budget, now_opts()],
                |r| r.get(0),
            )
            .unwrap();
        let pack = parse(&pack);
        let strip = |v: &Value| -> Vec<Value> {
            v.as_array()
                .unwrap()
                .iter()
                .map(|i| {
                    let mut i = i.clone();
                    i["why"] = Value::Null;
                    i
                })
                .collect()
        };
        assert_eq!(strip(&a["items"]), strip(&pack["items"]), "ask {model:?} {budget:?} = cmp_context's items");
    }
    // k defaults to 8; an offset past the end is an empty page.
    let d = query(&conn, json!({"find": "atlas launch"}));
    assert_result_shape(&d, "find", "default k");
    assert_eq!(d["count"], 8);
    let past = query(&conn, json!({"find": "atlas launch", "offset": 1000}));
    assert_eq!(
        (&past["count"], &past["coverage"]["has_more"], &past["cursor"]),
        (&json!(0), &json!(false), &Value::Null)
    );
    // A small k pages; expand suggests a follow-up on the top hit.
    let p = query(&conn, json!({"find": "atlas launch", "k": 2, "expand": "neighbors"}));
    assert_result_shape(&p, "find", "k=2");
    assert_eq!(p["count"], 2);
    let cursor = p["cursor"].as_str().expect("cursor");
    let fu = p["follow_ups"].as_array().unwrap();
    assert!(fu.iter().any(|x| x["call"] == "cmp_expand" && x["args"] == json!([cursor, "more"])), "{fu:?}");
    assert!(fu.iter().any(|x| x["args"] == json!([p["items"][0]["ref"], "neighbors"])), "{fu:?}");
    // FTS5 syntax in the text is just text.
    for text in ["\"atlas OR NEAR(", "atlas* AND -launch", "col:atlas ^ {x}", "'); DROP TABLE cmp_memories; --"] {
        let v = query(&conn, json!({"find": text}));
        assert_result_shape(&v, "find", text);
    }
    // Nothing matches: empty, not an error.
    let none = query(&conn, json!({"find": "zzqx wombat"}));
    assert_result_shape(&none, "find", "no match");
    assert_eq!(none["coverage"], json!({"narrowed_from": 0, "narrowed_to": 0, "returned": 0, "has_more": false}));
}

#[test]
fn narrowing_only_removes() {
    let conn = open();
    let s = seed(&conn);
    let base = query(&conn, json!({"find": "atlas launch", "k": 50}));
    let base_items = base["items"].as_array().unwrap().clone();
    let from = base["coverage"]["narrowed_from"].clone();
    let keep = |pred: &dyn Fn(&Value) -> bool| -> Vec<String> {
        base_items.iter().filter(|i| pred(i)).map(|i| i["ref"].as_str().unwrap().to_string()).collect()
    };
    // Relevance chain: each result ⊆ the previous, and exactly the unfiltered list filtered.
    let mut prev = item_refs(&base);
    let mut shrank = false;
    for min in [0.1, 0.3, 0.5, 0.7] {
        let v = query(&conn, json!({"find": "atlas launch", "k": 50, "min_relevance": min}));
        assert_result_shape(&v, "find", "min_relevance");
        assert_eq!(v["coverage"]["narrowed_from"], from, "narrowed_from is the unnarrowed count");
        let refs = item_refs(&v);
        assert!(refs.iter().all(|r| prev.contains(r)), "min_relevance {min}: not a subset");
        assert_eq!(refs, keep(&|i| i["relevance"].as_f64().unwrap() >= min), "min_relevance {min}");
        shrank |= refs.len() < prev.len();
        prev = refs;
    }
    assert!(shrank, "the relevance chain never removed anything: thresholds too low for this store");
    // Layers = kinds.
    let v = query(&conn, json!({"find": "atlas launch", "k": 50, "layers": ["negative", "decision"]}));
    let refs = item_refs(&v);
    assert!(refs.contains(&s.constraint) && refs.contains(&s.decision), "{refs:?}");
    assert!(refs.iter().all(|r| ["negative", "decision"].contains(&kind_of(&conn, r).as_str())));
    let sem = query(&conn, json!({"find": "atlas launch", "k": 50, "layers": ["semantic"]}));
    assert!(item_refs(&sem).iter().all(|r| kind_of(&conn, r) == "semantic"));
    assert!(!item_refs(&sem).is_empty());
    // Entities: any match, case-insensitive.
    let v = query(&conn, json!({"find": "atlas launch", "k": 50, "entities": ["dana"]}));
    let refs = item_refs(&v);
    assert!(refs.contains(&s.review) && refs.contains(&s.preference), "{refs:?}");
    assert_eq!(refs, keep(&|i| i["entities"].as_array().unwrap().iter().any(|e| e == "Dana")));
    let v = query(&conn, json!({"find": "atlas launch", "k": 50, "entities": ["Onboarding", "nobody"]}));
    assert_eq!(item_refs(&v), vec![s.decision.clone()]);
    // min_trust reads confidence, else trust.
    for min in [0.0, 0.5, 0.9, 1.0] {
        let v = query(&conn, json!({"find": "atlas launch", "k": 50, "min_trust": min}));
        assert_eq!(item_refs(&v), keep(&|i| i["confidence"].as_f64().unwrap_or(0.0) >= min), "min_trust {min}");
    }
    let high = item_refs(&query(&conn, json!({"find": "atlas launch", "k": 50, "min_trust": 0.9})));
    assert!(high.contains(&s.decision) && high.contains(&s.review) && !high.contains(&s.billing), "{high:?}");
    // valid_only: false brings back the superseded version that true drops.
    let all = item_refs(&query(&conn, json!({"find": "atlas launch review", "k": 50, "valid_only": false})));
    let valid = item_refs(&query(&conn, json!({"find": "atlas launch review", "k": 50, "valid_only": true})));
    assert!(all.contains(&s.old_review) && !valid.contains(&s.old_review));
    assert!(valid.iter().all(|r| all.contains(r)));
    // as_of before the supersession: the old version is current then.
    let then =
        item_refs(&query(&conn, json!({"find": "atlas launch review", "k": 50, "as_of": "2026-03-15T00:00:00Z"})));
    assert!(then.contains(&s.old_review), "{then:?}");
    assert!(!then.contains(&s.review), "captured after as_of: {then:?}");
    // Filters compose: each adds a restriction.
    let v = query(
        &conn,
        json!({
            "find": "atlas launch", "k": 50, "layers": ["semantic"], "entities": ["Atlas"],
            "min_trust": 0.5, "min_relevance": 0.1,
        }),
    );
    for r in item_refs(&v) {
        assert_eq!(kind_of(&conn, &r), "semantic");
        assert!(entities_of(&conn, &r).contains(&"Atlas".to_string()));
    }
    // Scope.
    let w = item_refs(&query(&conn, json!({"find": "atlas launch", "k": 50, "scope": "work"})));
    assert_eq!(w, vec![s.work.clone()]);
}

fn pages_via(mode: &str, first: &Value, resume: &dyn Fn(&str) -> Value) -> Vec<String> {
    let mut out = item_refs(first);
    let mut cursor = first["cursor"].as_str().map(String::from);
    let mut n = 0;
    while let Some(c) = cursor {
        let page = resume(&c);
        assert_result_shape(&page, mode, "page");
        assert_eq!(page["offset"].as_u64(), Some(out.len() as u64), "offset of page {n}");
        assert!(page["count"].as_u64().unwrap() <= 2);
        let refs = item_refs(&page);
        assert!(refs.iter().all(|r| !out.contains(r)), "pages overlap: {refs:?} in {out:?}");
        out.extend(refs);
        cursor = page["cursor"].as_str().map(String::from);
        n += 1;
        assert!(n < 100);
    }
    out
}

#[test]
fn cursors_page_to_the_unpaged_result() {
    let conn = open();
    seed(&conn);
    for mql in [
        json!({"find": "atlas launch"}),
        json!({"find": "atlas launch", "min_relevance": 0.2, "entities": ["Atlas"]}),
        json!({"find": "atlas launch review", "valid_only": false}),
        json!({"ask": "atlas launch", "model": "claude"}),
        json!({"ask": "atlas launch", "budget_tokens": 1000}),
    ] {
        let mode = if mql.get("ask").is_some() { "ask" } else { "find" };
        let mut whole = mql.clone();
        whole["k"] = json!(50);
        let whole = query(&conn, whole);
        let mut small = mql.clone();
        small["k"] = json!(2);
        let first = query(&conn, small);
        assert_eq!(first["coverage"]["narrowed_to"], whole["coverage"]["narrowed_to"]);
        let via_query = pages_via(mode, &first, &|c| parse(&query_text(&conn, &json!({"cursor": c}))));
        let via_expand = pages_via(mode, &first, &|c| parse(&expand_text(&conn, c, "more", None)));
        assert_eq!(via_query, item_refs(&whole), "{mql} ({mode}): pages via cmp_query");
        assert_eq!(via_expand, item_refs(&whole), "{mql} ({mode}): pages via cmp_expand");
        assert!(whole["count"].as_u64().unwrap() > 2, "{mql}: too few results to page");
        // An explicit offset is the same page.
        let mut at2 = mql.clone();
        at2["k"] = json!(2);
        at2["offset"] = json!(2);
        assert_eq!(item_refs(&query(&conn, at2)), item_refs(&whole)[2..4].to_vec(), "{mql}");
    }
}

fn first_cursor(conn: &Connection) -> String {
    query(conn, json!({"find": "atlas launch", "k": 2}))["cursor"].as_str().expect("cursor").to_string()
}

fn flip(s: &str, at: usize) -> String {
    let mut b: Vec<char> = s.chars().collect();
    b[at] = if b[at] == 'A' { 'B' } else { 'A' };
    b.into_iter().collect()
}

#[test]
fn altered_or_foreign_cursors_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let a = open_file(&dir.path().join("a.db"));
    let b = open_file(&dir.path().join("b.db"));
    seed(&a);
    seed(&b);
    let c = first_cursor(&a);
    let (body, tag) = c["mqlc:".len()..].rsplit_once('.').unwrap();
    let dot = "mqlc:".len() + body.len();
    let mut bad = vec![
        flip(&c, "mqlc:".len() + body.len() / 2),
        flip(&c, "mqlc:".len()),
        flip(&c, dot + 1 + tag.len() / 2),
        flip(&c, c.len() - 1),
        c[..c.len() - 4].to_string(),
        c[..dot].to_string(),
        c[..dot + 1].to_string(),
        "mqlc:".to_string(),
        format!("{c}x"),
        c.replacen("mqlc:", "cmpc:", 1),
        c.replacen("mqlc:", "xxxx:", 1),
        "garbage".to_string(),
        first_cursor(&b),
    ];
    // Forged: a payload of my choosing (another scope, a wider page) under the real tag, or under none.
    let mut payload: Value = serde_json::from_slice(&B64.decode(body).unwrap()).unwrap();
    payload["mql"]["scope"] = json!("work");
    payload["mql"]["valid_only"] = json!(false);
    let forged = B64.encode(payload.to_string());
    bad.push(format!("mqlc:{forged}.{tag}"));
    bad.push(format!("mqlc:{forged}.{}", B64.encode([0u8; 32])));
    bad.push(format!("mqlc:{forged}"));
    for x in &bad {
        assert_eq!(
            error_of(try_query(&a, &json!({"cursor": x}).to_string())),
            format!("cmp_query: {INVALID}"),
            "cmp_query accepted {x}"
        );
        assert_eq!(
            error_of(try_expand(&a, x, Some("more"), None)),
            format!("cmp_expand: {INVALID}"),
            "cmp_expand accepted {x}"
        );
    }
    // The genuine cursor still works on its own database, and only there.
    assert_eq!(query(&a, json!({"cursor": c}))["offset"], 2);
    // A cursor issued for one scope is not replayed in another.
    assert_eq!(
        error_of(try_expand(&a, &c, Some("more"), Some(&scope_opts("work")))),
        "cmp_expand: cursor was issued for another scope"
    );
    // A pack cursor is not an MQL cursor.
    let pack = pack_cursor(&a);
    assert_eq!(
        error_of(try_query(&a, &json!({"cursor": pack}).to_string())),
        "cmp_query: cursor is a pack cursor; page it with cmp_expand(cursor, 'more')"
    );
}

/// A pack cursor from a small-budget `cmp_context`.
fn pack_cursor(conn: &Connection) -> String {
    let v: String = conn
        .query_row("SELECT cmp_context('atlas launch', 'claude', 300, NULL, ?1)", [now_opts()], |r| r.get(0))
        .unwrap();
    parse(&v)["cursor"].as_str().expect("a partial pack").to_string()
}

#[test]
fn cursor_bodies_carry_no_content() {
    let conn = open();
    seed(&conn);
    let contents: Vec<(String, String)> = {
        let mut st = conn.prepare("SELECT id, content FROM cmp_memories").unwrap();
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().collect::<rusqlite::Result<_>>().unwrap()
    };
    let mut cursors = vec![pack_cursor(&conn)];
    for mql in [
        json!({"find": "atlas launch", "k": 1}),
        json!({"ask": "atlas launch", "k": 1}),
        json!({"find": "atlas launch", "k": 1, "valid_only": false, "entities": ["Atlas"]}),
    ] {
        let mut c = query(&conn, mql)["cursor"].as_str().unwrap().to_string();
        cursors.push(c.clone());
        // and a later page's cursor
        c = query(&conn, json!({"cursor": c}))["cursor"].as_str().unwrap().to_string();
        cursors.push(c);
    }
    for c in cursors {
        let rest = c.split_once(':').unwrap().1;
        let (body, _) = rest.rsplit_once('.').unwrap();
        let decoded = if c.starts_with("cmpc:") {
            // A pack cursor rides in the envelope: its fields are plain text joined by `|`.
            assert_eq!(body.split('|').count(), 8, "{c}");
            body.to_string()
        } else {
            let decoded = String::from_utf8(B64.decode(body).expect("base64url body")).unwrap();
            assert!(parse(&decoded).is_object());
            decoded
        };
        for (id, content) in &contents {
            assert!(!decoded.contains(content.as_str()), "cursor body carries content: {decoded}");
            assert!(!decoded.contains(id.as_str()), "cursor body carries a memory id: {decoded}");
        }
    }
}

// ------------------------------------------------------------------------------------------ expand

#[test]
fn expand_document() {
    let conn = open();
    let s = seed(&conn);
    let v = expand(&conn, &s.decision, "document");
    assert_eq!(keys(&v), ["ref", "direction", "found", "document"]);
    assert_eq!((&v["ref"], &v["direction"], &v["found"]), (&json!(s.decision), &json!("document"), &json!(true)));
    let d = &v["document"];
    assert_eq!(d["ref"], s.decision);
    assert_eq!(d["content"], "We decided the Atlas launch ships with the new onboarding flow.");
    assert_eq!(d["kind"], "decision");
    assert_eq!(d["layer"], "decisions");
    assert_eq!(d["confidence"], json!(0.95));
    assert_eq!(d["entities"], json!(["Atlas", "Onboarding"]));
    assert_eq!(d["captured_at"], CAPTURED);
    assert!(d["superseded_by"].is_null());
    // Superseded: its replacement is named.
    let old = expand(&conn, &s.old_review, "document");
    assert_eq!(old["found"], true);
    assert_eq!(old["document"]["superseded_by"], s.review);
    assert_eq!(old["document"]["superseded_at"], "2026-04-01T00:00:00Z");
    // Superseded by a redacted row: the replacement's id is not revealed.
    let leaks = expand_text(&conn, &s.leaks, "document", Some(&now_opts()));
    assert_eq!(parse(&leaks)["found"], true);
    assert!(parse(&leaks)["document"]["superseded_by"].is_null());
    assert!(!leaks.contains(RED_ID), "{leaks}");
    // A task.
    let t = expand(&conn, &s.task, "document");
    assert_eq!(t["found"], true);
    assert_eq!(t["document"]["title"], "Prepare Atlas launch notes");
    // Not found: unknown, redacted, another scope, not yet captured, a task of another scope.
    for r in ["mem_000000000000", "nonsense", "", RED_ID, s.work.as_str()] {
        let text = expand_text(&conn, r, "document", Some(&now_opts()));
        let v = parse(&text);
        assert_eq!(v["found"], false, "{r}");
        assert!(v["document"].is_null(), "{r}");
        assert!(!text.contains(RED_WORD) && !text.contains("forty thousand"), "{text}");
    }
    let early = parse(&expand_text(&conn, &s.decision, "document", Some(r#"{"now":"2026-01-01T00:00:00Z"}"#)));
    assert_eq!(early["found"], false, "captured after now");
    let w = parse(&expand_text(&conn, &s.work, "document", Some(&scope_opts("work"))));
    assert_eq!(w["found"], true);
    assert_eq!(w["document"]["content"], "Atlas launch work budget is forty thousand.");
    let t = parse(&expand_text(&conn, &s.task, "document", Some(&scope_opts("work"))));
    assert_eq!(t["found"], false, "tasks are scoped");
    // document is the default direction.
    let dflt: String = conn.query_row("SELECT cmp_expand(?1)", [&s.decision], |r| r.get(0)).unwrap();
    assert_eq!(parse(&dflt)["document"]["ref"], s.decision);
}

#[test]
fn expand_neighbors_stay_inside_the_walls() {
    let conn = open();
    let s = seed(&conn);
    let v = expand(&conn, &s.review, "neighbors");
    assert_eq!(keys(&v), ["ref", "direction", "found", "neighbors"]);
    assert_eq!(v["found"], true);
    let groups = v["neighbors"].as_array().unwrap();
    let names: Vec<&str> = groups.iter().map(|g| g["entity"].as_str().unwrap()).collect();
    assert_eq!(names, ["Atlas", "Dana"], "one group per entity of the ref");
    for g in groups {
        let entity = g["entity"].as_str().unwrap();
        let items = g["items"].as_array().unwrap();
        assert!(!items.is_empty() && items.len() <= 8);
        for it in items {
            assert_eq!(keys(it), ITEM_FIELDS);
            let r = it["ref"].as_str().unwrap();
            assert_ne!(r, s.review, "the ref is not its own neighbour");
            assert_ne!(r, RED_ID);
            assert_ne!(r, s.work);
            assert_ne!(r, s.old_review, "superseded rows are not neighbours");
            assert!(entities_of(&conn, r).iter().any(|e| e.eq_ignore_ascii_case(entity)), "{r} is not about {entity}");
        }
    }
    let dana: Vec<String> =
        groups[1]["items"].as_array().unwrap().iter().map(|i| i["ref"].as_str().unwrap().to_string()).collect();
    assert_eq!(dana, vec![s.preference.clone()], "Dana's only other live default-scope memory");
    let text = expand_text(&conn, &s.review, "neighbors", Some(&now_opts()));
    assert!(!text.contains(RED_WORD) && !text.contains(RED_ID) && !text.contains("forty thousand"));
    // A memory without entities has no neighbours; unknown, redacted and foreign refs are not found.
    let lone = expand(&conn, &s.procedure, "neighbors");
    assert_eq!((&lone["found"], &lone["neighbors"]), (&json!(true), &json!([])));
    for r in ["mem_000000000000", RED_ID, s.work.as_str()] {
        let text = expand_text(&conn, r, "neighbors", Some(&now_opts()));
        let v = parse(&text);
        assert_eq!((&v["found"], &v["neighbors"]), (&json!(false), &json!([])), "{r}");
        assert!(!text.contains(RED_WORD));
    }
    // In scope work, the work memory's neighbours come from work only.
    let w = parse(&expand_text(&conn, &s.work, "neighbors", Some(&scope_opts("work"))));
    assert_eq!(w["found"], true);
    assert_eq!(w["neighbors"], json!([]), "no other work memory shares its entities");
}

#[test]
fn expand_arguments_are_checked() {
    let conn = open();
    let s = seed(&conn);
    for (r, d, o, want) in [
        (
            Some(s.review.as_str()),
            Some("sideways"),
            None,
            "cmp_expand: direction must be one of document, neighbors, more, got \"sideways\"",
        ),
        (
            Some(s.review.as_str()),
            Some(""),
            None,
            "cmp_expand: direction must be one of document, neighbors, more, got \"\"",
        ),
        (
            Some(s.review.as_str()),
            Some("document"),
            Some(r#"{"format":"json"}"#),
            "cmp_expand: unknown option \"format\" (accepted: scope, now)",
        ),
        (Some(s.review.as_str()), Some("neighbors"), Some("[]"), "cmp_expand: options must be a JSON object, got []"),
        (
            Some(s.review.as_str()),
            Some("document"),
            Some(r#"{"now":"later"}"#),
            "cmp_expand: now must be an ISO-8601 timestamp, got \"later\"",
        ),
        (None, Some("document"), None, "cmp_expand: ref must not be NULL"),
    ] {
        let e = conn
            .query_row("SELECT cmp_expand(?1, ?2, ?3)", params![r, d, o], |x| x.get::<_, String>(0))
            .map(|v| panic!("expected {want}, got {v}"))
            .unwrap_err()
            .to_string();
        assert_eq!(e, want);
    }
    assert!(sql_error(&conn, "SELECT cmp_expand()").starts_with("cmp_expand: takes 1 to 3 arguments"));
    assert!(sql_error(&conn, "SELECT cmp_expand('a', 'document', '{}', 4)")
        .starts_with("cmp_expand: takes 1 to 3 arguments"));
    assert_eq!(sql_error(&conn, "SELECT cmp_expand(x'00')"), "cmp_expand: ref must be text, got a blob");
    assert_eq!(sql_error(&conn, "SELECT cmp_expand('mem_1', 2)"), "cmp_expand: direction must be text, got an integer");
}

// ------------------------------------------------------------------------------------------ isolation

#[test]
fn redacted_rows_never_surface() {
    let conn = open();
    let s = seed(&conn);
    let mut outputs: Vec<String> = Vec::new();
    let texts = ["atlas launch secret codename blueheron", "atlas launch", "dana", "blueheron", "known to dana"];
    for t in texts {
        for extra in [
            json!({}),
            json!({"valid_only": false}),
            json!({"entities": ["Dana"]}),
            json!({"layers": ["semantic"], "min_trust": 0.0}),
            json!({"as_of": "2026-05-15T00:00:00Z"}),
        ] {
            for mode in ["find", "ask"] {
                let mut m = extra.clone();
                m[mode] = json!(t);
                m["now"] = json!(NOW);
                m["k"] = json!(3);
                let mut out = query_text(&conn, &m);
                // Follow every page.
                loop {
                    let cursor = parse(&out)["cursor"].as_str().map(String::from);
                    outputs.push(out.clone());
                    let Some(c) = cursor else { break };
                    out = expand_text(&conn, &c, "more", None);
                }
            }
        }
    }
    let ids: Vec<String> = {
        let mut st = conn.prepare("SELECT id FROM cmp_memories WHERE id <> ?1").unwrap();
        st.query_map([RED_ID], |r| r.get(0)).unwrap().collect::<rusqlite::Result<_>>().unwrap()
    };
    for id in ids.iter().chain([&s.task]) {
        for d in ["document", "neighbors"] {
            outputs.push(expand_text(&conn, id, d, Some(&now_opts())));
            outputs.push(expand_text(&conn, id, d, Some(&scope_opts("work"))));
        }
    }
    let pack = pack_cursor(&conn);
    let mut c = Some(pack);
    while let Some(x) = c {
        let out = expand_text(&conn, &x, "more", None);
        c = parse(&out)["cursor"].as_str().map(String::from);
        outputs.push(out);
    }
    assert!(outputs.len() > 100);
    for out in &outputs {
        assert!(!out.contains(RED_ID), "redacted id surfaced: {out}");
        assert!(!out.contains(RED_WORD) && !out.contains("codename"), "redacted content surfaced: {out}");
    }
    // Asked directly, it is not found and its content stays hidden.
    for d in ["document", "neighbors"] {
        let out = expand_text(&conn, RED_ID, d, Some(&now_opts()));
        assert_eq!(parse(&out)["found"], false);
        assert!(!out.contains(RED_WORD) && !out.contains("codename"), "{out}");
    }
    // The fillers exist, so the searches above had competition.
    assert_eq!(s.fillers.len(), 12);
}

/// Output with the cursors (keyed per database) blanked.
fn without_cursors(v: &Value) -> Value {
    let mut v = v.clone();
    v["cursor"] = Value::Null;
    v["follow_ups"] = Value::Null;
    v["receipt"] = Value::Null;
    // A cursor's tag is keyed per database, so its token count (part of `used`) differs too.
    if v["budget"].is_object() {
        v["budget"]["used"] = Value::Null;
    }
    v
}

/// Which rows a store holds besides the plain ones.
#[derive(Clone, Copy, PartialEq)]
enum Hidden {
    None,
    /// Redacted rows, present and pending: removed from every index.
    Redacted,
    /// Another scope's rows, present and pending: in the shared full-text index.
    OtherScope,
}

#[test]
fn hidden_rows_shift_no_count() {
    let build = |hidden: Hidden| -> Connection {
        let conn = open();
        for (i, c) in [
            "Atlas launch review moved to Thursday",
            "Atlas launch budget is approved",
            "Dana reviews the launch budget",
            "Lee books the launch venue",
            "Atlas launch press kit is ready",
        ]
        .iter()
        .enumerate()
        {
            insert_memory(&conn, &Mem::new(c).id(&format!("mem_00000000000{i}")).entities(&["Atlas"]));
        }
        if hidden == Hidden::Redacted {
            insert_memory(&conn, &Mem::new("Atlas launch launch budget review Dana").entities(&["Atlas"]).redacted());
            insert_memory(
                &conn,
                &Mem::new("Atlas launch budget pending secret").captured_at("2026-07-01T00:00:00Z").redacted(),
            );
        }
        if hidden == Hidden::OtherScope {
            insert_memory(&conn, &Mem::new("Atlas launch budget for work").entities(&["Atlas"]).scope("work"));
            insert_memory(
                &conn,
                &Mem::new("Atlas launch budget for work, later").scope("work").captured_at("2026-07-01T00:00:00Z"),
            );
        }
        conn
    };
    // What another scope's rows may not change: every count, and which rows a query returns when it
    // returns them all. (They share the full-text index's statistics, so BM25 scores, and with them
    // the order of near-ties, may move: the README says so.)
    let counts = |v: &Value| -> Value {
        let mut refs: Vec<&str> =
            v["items"].as_array().into_iter().flatten().filter_map(|i| i["ref"].as_str()).collect();
        refs.sort_unstable();
        let all = v["coverage"]["has_more"] == false;
        json!([v["count"], v["coverage"]["narrowed_from"], v["coverage"]["narrowed_to"], all.then_some(refs)])
    };
    let plain = build(Hidden::None);
    for hidden in [Hidden::Redacted, Hidden::OtherScope] {
        let other = build(hidden);
        for text in ["atlas launch budget", "dana review", "atlas"] {
            for mql in [
                json!({"find": text, "k": 2}),
                json!({"find": text, "k": 50, "valid_only": false}),
                json!({"ask": text, "k": 2}),
            ] {
                let (a, b) = (query(&plain, mql.clone()), query(&other, mql.clone()));
                if hidden == Hidden::Redacted {
                    assert_eq!(without_cursors(&a), without_cursors(&b), "{mql}");
                }
                assert_eq!(counts(&a), counts(&b), "{mql}");
            }
            for model in [None, Some("claude")] {
                let ctx = |c: &Connection| -> Value {
                    let s: String = c
                        .query_row("SELECT cmp_context(?1, ?2, 300, NULL, ?3)", params![text, model, now_opts()], |r| {
                            r.get(0)
                        })
                        .unwrap();
                    without_cursors(&parse(&s))
                };
                let (a, b) = (ctx(&plain), ctx(&other));
                assert_eq!(a["coverage"], b["coverage"], "cmp_context({text:?}, {model:?})");
                if hidden == Hidden::Redacted {
                    assert_eq!(a, b, "cmp_context({text:?}, {model:?})");
                }
            }
        }
    }
}

/// `as_of` only looks back: an `as_of` after `now` reads at `now`, so a row captured after `now` stays
/// invisible in MQL, search and context alike (narrowing never widens the result).
#[test]
fn an_as_of_after_now_never_shows_what_is_not_captured_yet() {
    let conn = open();
    insert_memory(&conn, &Mem::new("Orion future note").id("mem_0000000f0001").captured_at("2026-07-01T00:00:00Z"));
    insert_memory(&conn, &Mem::new("Orion present note").id("mem_0000000f0002").captured_at("2026-05-01T00:00:00Z"));
    let later = "2030-01-01T00:00:00Z";
    let found = query(&conn, json!({"find": "orion note", "as_of": later}));
    let text = found.to_string();
    assert!(text.contains("mem_0000000f0002") && !text.contains("mem_0000000f0001"), "{text}");
    let o = json!({"now": NOW, "as_of": later}).to_string();
    let refs: String = conn
        .query_row("SELECT group_concat(ref) FROM cmp_search('orion note', ?1)", [&o], |r| r.get(0))
        .expect("search");
    assert_eq!(refs, "mem_0000000f0002");
    let pack: String =
        conn.query_row("SELECT cmp_context('orion note', NULL, NULL, NULL, ?1)", [&o], |r| r.get(0)).expect("pack");
    assert!(pack.contains("mem_0000000f0002") && !pack.contains("mem_0000000f0001"));
}

/// `now` and `as_of` are read in UTC, and `cmp_query` writes its clock back as
/// `YYYY-MM-DDTHH:MM:SS.ffffffZ` (the form its cursors carry) and reads it again. A clock whose UTC
/// instant falls outside the years 0000–9999 (`9999-12-31T23:59:00-23:59` is 10000-01-01 in UTC)
/// cannot be written back so: `cmp_query` refused it as `now must be an ISO-8601 timestamp, got
/// "10000-01-01T23:58:00.000000Z"`, a value the caller never gave, while `cmp_search` and
/// `cmp_context` took it (a red-team pass). Every function now refuses such a clock, quoting it;
/// the last instants inside the range are taken, and their cursors page to the unpaged result.
#[test]
fn clocks_outside_the_years_0000_to_9999_are_refused_by_name() {
    let conn = open();
    seed(&conn);
    let past = ["9999-12-31T23:59:00-23:59", "9999-12-31T23:59:59.9999999Z", "0000-01-01T00:00:00+00:01"];
    for clock in past {
        for field in ["now", "as_of"] {
            let why = format!("{field} must be within the years 0000 to 9999 once read in UTC, got \"{clock}\"");
            let m = json!({"find": "atlas launch", field: clock});
            assert_eq!(error_of(try_query(&conn, &m.to_string())), format!("cmp_query: {why}"));
            let o = json!({field: clock}).to_string();
            let search = conn.query_row("SELECT count(*) FROM cmp_search('atlas', ?1)", [&o], |r| r.get::<_, i64>(0));
            assert_eq!(
                error_of(search.map(|n| n.to_string()).map_err(|e| e.to_string())),
                format!("cmp_search: {why}")
            );
            let pack = conn
                .query_row("SELECT cmp_context('atlas', NULL, NULL, NULL, ?1)", [&o], |r| r.get::<_, String>(0))
                .map_err(|e| e.to_string());
            assert_eq!(error_of(pack), format!("cmp_context: {why}"));
        }
    }
    for (field, clock) in [
        ("now", "9999-12-31T23:59:59.999Z"),
        ("now", "9999-12-31T00:00:00-23:59"),
        ("as_of", "0000-01-01T23:59:00+23:59"),
    ] {
        let mut whole = json!({"find": "atlas launch review", "valid_only": false, "k": 50, field: clock});
        let first = query(&conn, {
            let mut m = whole.clone();
            m["k"] = json!(2);
            m
        });
        assert!(field == "as_of" || first["cursor"].is_string(), "{clock}: a first page with more to come");
        let paged = pages_via("find", &first, &|c| parse(&query_text(&conn, &json!({"cursor": c}))));
        whole = query(&conn, whole);
        assert_eq!(paged, item_refs(&whole), "{field} {clock}");
    }
}

/// The `entities` filter matches a name case-insensitively, as documented, also beyond ASCII: it
/// compared with ASCII case folding only, so `["ÉMILE"]` or `["émile"]` missed a row naming "Émile"
/// (a red-team pass).
#[test]
fn the_entities_filter_ignores_case_beyond_ascii() {
    let conn = open();
    let id = insert_memory(&conn, &Mem::new("Émile owns the Atlas pricing page").entities(&["Émile"]));
    insert_memory(&conn, &Mem::new("Dana owns the Atlas launch page").entities(&["Dana"]));
    for name in ["Émile", "ÉMILE", "émile", " émile "] {
        let v = query(&conn, json!({"find": "atlas page", "entities": [name]}));
        assert_eq!(item_refs(&v), std::slice::from_ref(&id), "{name:?}");
    }
}
