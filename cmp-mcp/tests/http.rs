//! The HTTP surface over real HTTP on 127.0.0.1: every route and tool, MCP over Streamable HTTP, the
//! token rules (none, wrong, revoked, read-only write, another scope), malformed and oversized
//! requests, the in-flight bound and the time limit, the header read timeout and the connection limit.

mod common;

use common::*;
use serde_json::{json, Value};
use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// The text of any response may not mention the other scope's memories: content, ids or anything.
fn assert_no_finance(what: &str, body: &str, finance: &[String]) {
    assert!(!body.contains("FINANCE-SECRET"), "{what} leaks finance content: {body}");
    for id in finance {
        assert!(!body.contains(id.as_str()), "{what} leaks finance id {id}: {body}");
    }
}

#[test]
fn routes_tools_and_sessions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("memory.db");
    let (ids, _) = seed(&db);
    let rule = &ids[0];
    let tok = token(&db, "default", false);
    let server = Server::start(&db, &[]);
    let a = server.addr;

    // Health needs no token and says nothing else.
    let h = request(a, "GET", "/healthz", &[], None);
    assert_eq!((h.status, h.body.as_str()), (200, "ok"));

    // GET /v1/context: the SMP envelope, no session unless asked.
    let task = enc("Plan the Atlas launch");
    let r = get(a, &format!("/v1/context?task={task}&model=claude&token_budget=4000&format=smp"), &tok);
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.header("content-type"), Some("application/json"));
    let env = r.json();
    assert_eq!(env["smp"], "1");
    assert_eq!(env["model"], "claude");
    assert!(env["working_memory"].is_null(), "no session_id, no delta: {}", env["working_memory"]);
    assert!(r.body.contains(rule.as_str()), "the constraint is packed");

    // session_id opts into the delta channel: the repeat announces nothing new.
    let with_session = format!("/v1/context?task={task}&session_id=chat-42");
    let first = get(a, &with_session, &tok).json();
    assert!(!first["working_memory"]["new"].as_array().expect("new").is_empty(), "{first}");
    assert!(first["working_memory"].is_object(), "{first}");
    let again = get(a, &with_session, &tok).json();
    assert_eq!(again["working_memory"]["new"], json!([]), "{again}");

    // POST /v1/context with a JSON body; markdown comes back as markdown.
    let r =
        post(a, "/v1/context", &tok, &json!({"task": "Plan the Atlas launch", "format": "markdown", "model": "gpt"}));
    assert_eq!(r.status, 200, "{r:?}");
    assert!(r.header("content-type").is_some_and(|c| c.starts_with("text/markdown")), "{r:?}");
    assert!(r.body.contains(rule.as_str()) && serde_json::from_str::<Value>(&r.body).is_err());
    let json_fmt = post(a, "/v1/context?format=json", &tok, &json!({"task": "Dana"}));
    assert_eq!(json_fmt.status, 200, "{json_fmt:?}");
    json_fmt.json();

    // GET /v1/expand and POST /v1/query.
    let doc = get(a, &format!("/v1/expand?ref={rule}"), &tok).json();
    assert_eq!(doc["found"], true, "{doc}");
    assert!(doc["document"]["content"].as_str().is_some_and(|c| c.contains("Friday")));
    let q = post(a, "/v1/query", &tok, &json!({"find": "Atlas launch", "k": 3}));
    assert_eq!(q.status, 200, "{q:?}");
    assert_eq!(q.json()["count"], 3);
    let next = post(a, "/v1/query", &tok, &json!({"cursor": q.json()["cursor"]}));
    assert_eq!(next.json()["offset"], 3, "{next:?}");

    // POST /v1/tools/call: every tool.
    let call = |name: &str, args: Value| post(a, "/v1/tools/call", &tok, &json!({"name": name, "arguments": args}));
    assert_eq!(call("get_context", json!({"task": "Atlas"})).json()["smp"], "1");
    assert_eq!(call("query_memory", json!({"ask": "Atlas deployment", "layers": ["negative"]})).json()["count"], 1);
    assert_eq!(call("expand", json!({"ref": rule, "direction": "neighbors"})).status, 200);
    let hits = call("search", json!({"query": "Dana mobile"})).json();
    assert_eq!(hits["results"][0]["id"], ids[2], "{hits}");
    let fetched = call("fetch", json!({"id": ids[2]})).json();
    assert_eq!(fetched["text"], "Dana leads the Atlas mobile workstream.");
    let stored =
        call("remember", json!({"content": "Atlas moved to 8 July 2026.", "kind": "decision", "supersedes": ids[1]}));
    assert_eq!(stored.status, 200, "{stored:?}");
    let new_id = stored.json()["id"].as_str().expect("id").to_string();
    let (scope, superseded_by): (String, String) = open(&db)
        .query_row(
            "SELECT n.scope, o.superseded_by FROM cmp_memories n, cmp_memories o WHERE n.id = ?1 AND o.id = ?2",
            [&new_id, &ids[1]],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("stored");
    assert_eq!((scope.as_str(), superseded_by.as_str()), ("default", new_id.as_str()));

    // Errors keep the cmp function's own words, with a status code.
    let bad = call("query_memory", json!({"find": "Atlas", "min_relevance": 2.5}));
    assert_eq!((bad.status, bad.error().as_str()), (400, "cmp_query: min_relevance must be within [0, 1], got 2.5"));
    let unknown = call("forget", json!({}));
    assert_eq!(unknown.status, 404, "{unknown:?}");
    assert!(unknown.error().contains("unknown tool \"forget\""));

    // MCP over Streamable HTTP: handshake, tools, and the session mapping (no session_id needed).
    let mut m = Mcp::new(a, &tok);
    let init = m.initialize();
    assert_eq!(init["result"]["serverInfo"]["name"], "cmp-mcp", "{init}");
    let list = m.request("tools/list", json!({}));
    let names: Vec<&str> =
        list["result"]["tools"].as_array().expect("tools").iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["get_context", "query_memory", "expand", "remember", "search", "fetch"]);
    let t1 = m.ok("get_context", json!({"task": "Plan the Atlas launch", "token_budget": 4000, "audit": true}));
    let session = t1["receipt"]["session_id"].as_str().expect("session").to_string();
    assert!(session.starts_with("mcp-"), "{session}");
    let t2 = m.ok("get_context", json!({"task": "Plan the Atlas launch", "token_budget": 4000, "audit": true}));
    assert_eq!(t2["receipt"]["session_id"], session.as_str(), "one MCP session, one CMP session");
    assert_eq!(t2["working_memory"]["new"], json!([]), "{t2}");
    assert!(!m.ok("query_memory", json!({"find": "Atlas"}))["items"].as_array().expect("items").is_empty());
    assert_eq!(m.ok("expand", json!({"ref": rule}))["found"], true);
    assert!(!m.ok("search", json!({"query": "Atlas"}))["results"].as_array().expect("results").is_empty());
    assert_eq!(m.ok("fetch", json!({"id": rule}))["id"], rule.as_str());
    assert!(m.ok("remember", json!({"content": "Dana moved to the web workstream."}))["id"].is_string());
    let (err, msg) = m.call("query_memory", json!({"find": "Atlas", "min_relevance": 2.5}));
    assert!(err && msg == "cmp_query: min_relevance must be within [0, 1], got 2.5", "{msg}");
    let unknown = m.request("tools/call", json!({"name": "forget", "arguments": {}}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    // A second MCP connection is a second CMP session.
    let mut m2 = Mcp::new(a, &tok);
    m2.initialize();
    let other = m2.ok("get_context", json!({"task": "Plan the Atlas launch", "token_budget": 4000, "audit": true}));
    assert_ne!(other["receipt"]["session_id"], session.as_str());
    assert!(!other["working_memory"]["new"].as_array().expect("new").is_empty());

    // The token never shows up in anything the server printed.
    assert!(!server.log().contains(&tok[5..]), "token logged");
    assert_eq!(integrity(&db), "ok");
}

#[test]
fn token_rules() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("memory.db");
    let (ids, finance) = seed(&db);
    let rw = token(&db, "default", false);
    let ro = token(&db, "default", true);
    let fin = token(&db, "finance", false);
    let revoked = token(&db, "default", false);
    let server = Server::start(&db, &[]);
    let a = server.addr;
    let ctx = format!("/v1/context?task={}", enc("What is the Atlas budget?"));

    // No token, a wrong token, a malformed header, a token of the wrong shape: 401, nothing else.
    let none = request(a, "GET", &ctx, &[], None);
    assert_eq!(none.status, 401);
    assert_eq!(none.header("www-authenticate"), Some("Bearer"));
    let wrong_secret = format!("{}{}", &rw[..rw.len() - 4], if rw.ends_with("0000") { "1111" } else { "0000" });
    for bad in [wrong_secret.as_str(), "cmpt_nope", "", "Basic abc"] {
        let r = request(a, "GET", &ctx, &[("Authorization", &bearer(bad))], None);
        assert_eq!(r.status, 401, "{bad:?}: {r:?}");
        assert_no_finance("a 401", &r.body, &finance);
    }
    let basic = request(a, "GET", &ctx, &[("Authorization", "Basic dXNlcjpwYXNz")], None);
    assert_eq!(basic.status, 401);
    let mcp_none = request(a, "POST", "/mcp", &[("Content-Type", "application/json")], Some(b"{}"));
    assert_eq!(mcp_none.status, 401, "{mcp_none:?}");

    // Revoked (by the CLI, while the server runs): 401 from the next request on.
    assert_eq!(get(a, &ctx, &revoked).status, 200);
    let listed = token_cmd(&db, &["list"]);
    assert!(!listed.contains(&revoked[18..]), "token list must not show a secret: {listed}");
    token_cmd(&db, &["revoke", &revoked]);
    assert_eq!(get(a, &ctx, &revoked).status, 401);
    assert!(token_cmd(&db, &["list"]).lines().filter(|l| l.contains("read-write")).any(|l| !l.contains("\t-\t")));

    // Read-only: reads work; every way to write is a 403, and nothing is written.
    let count =
        || -> i64 { open(&db).query_row("SELECT count(*) FROM cmp_memories", [], |r| r.get(0)).expect("count") };
    let before = count();
    assert_eq!(get(a, &ctx, &ro).status, 200);
    let w = post(a, "/v1/tools/call", &ro, &json!({"name": "remember", "arguments": {"content": "ro write"}}));
    assert_eq!((w.status, w.error().as_str()), (403, "remember: this token is read-only"));
    let mut m = Mcp::new(a, &ro);
    m.initialize();
    let names: Vec<String> = m.request("tools/list", json!({}))["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str().map(String::from))
        .collect();
    assert!(!names.contains(&"remember".to_string()), "{names:?}");
    let id = 99;
    let w = m.post(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "remember", "arguments": {"content": "ro write"}}}));
    assert_eq!(w.status, 403, "{w:?}");
    let batch = m.post(&json!([{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "remember", "arguments": {"content": "x"}}}]));
    assert_eq!(batch.status, 403, "{batch:?}");
    assert_eq!(count(), before);

    // An MCP session belongs to the token that opened it: another token can neither call tools in it,
    // nor open its event stream, nor end it.
    let mut hijack = Mcp::new(a, &rw);
    hijack.session = m.session.clone();
    let r = hijack.post(&json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "get_context", "arguments": {"task": "Atlas"}}}));
    assert_eq!((r.status, r.error().as_str()), (403, "this MCP session was opened with another token"));
    let sid = m.session.clone().expect("session id");
    let rw_auth = bearer(&rw);
    let other =
        [("Authorization", rw_auth.as_str()), ("Mcp-Session-Id", sid.as_str()), ("Accept", "text/event-stream")];
    assert_eq!(request(a, "GET", "/mcp", &other, None).status, 403);
    assert_eq!(request(a, "DELETE", "/mcp", &other, None).status, 403);
    let still = m.request("tools/list", json!({}));
    assert!(still["result"]["tools"].is_array(), "the session survived: {still}");
    let ro_auth = bearer(&ro);
    let owner = [("Authorization", ro_auth.as_str()), ("Mcp-Session-Id", sid.as_str())];
    assert_eq!(request(a, "DELETE", "/mcp", &owner, None).status, 204, "its own token ends it");

    // Scope: the default token never sees finance content, ids or counts, whatever it asks.
    let default_views = [
        get(a, &ctx, &rw),
        get(a, &format!("{ctx}&scope=finance"), &rw),
        post(a, "/v1/context", &rw, &json!({"task": "Atlas budget Omar costs", "scope": "finance"})),
        post(a, "/v1/query", &rw, &json!({"find": "budget", "scope": "finance"})),
        post(a, "/v1/query", &rw, &json!({"find": "Atlas budget costs Omar"})),
        get(a, &format!("/v1/expand?ref={}&direction=neighbors", ids[0]), &rw),
        post(a, "/v1/tools/call", &rw, &json!({"name": "search", "arguments": {"query": "budget Omar costs"}})),
    ];
    for (i, r) in default_views.iter().enumerate() {
        assert_no_finance(&format!("default view {i}"), &r.body, &finance);
    }
    assert_eq!(default_views[1].status, 400, "a scope parameter is refused: {:?}", default_views[1]);
    assert!(default_views[1].error().contains("unknown argument \"scope\""));
    assert_eq!(default_views[2].status, 400);
    assert_eq!(default_views[3].status, 400);
    assert!(default_views[3].error().contains("scope is fixed"));
    // Counts: the query's coverage is exactly what the same query in scope default gives in SQL.
    let own: Value = serde_json::from_str(
        &open(&db)
            .query_row(
                "SELECT cmp_query(?1)",
                [json!({"find": "Atlas budget costs Omar", "scope": "default"}).to_string()],
                |r| r.get::<_, String>(0),
            )
            .expect("own query"),
    )
    .expect("json");
    assert_eq!(default_views[4].json()["coverage"], own["coverage"]);
    // A finance id named directly: answered exactly as an id that does not exist at all.
    let ghost = "mem_000000000000";
    let by_id = |id: &str| {
        [
            get(a, &format!("/v1/expand?ref={id}"), &rw),
            post(a, "/v1/tools/call", &rw, &json!({"name": "fetch", "arguments": {"id": id}})),
            post(
                a,
                "/v1/tools/call",
                &rw,
                &json!({"name": "remember", "arguments": {"content": "y", "supersedes": id}}),
            ),
        ]
        .map(|r| (r.status, r.body.replace(id, "ID")))
    };
    let (secret, none) = (by_id(&finance[0]), by_id(ghost));
    assert_eq!(secret, none);
    for (_, body) in &secret {
        assert!(!body.contains("FINANCE-SECRET"), "{body}");
    }
    assert_eq!(secret[0].0, 200);
    assert_eq!((secret[1].0, secret[2].0), (400, 400));
    // Over MCP as well.
    let mut md = Mcp::new(a, &rw);
    md.initialize();
    for (tool, args) in [
        ("get_context", json!({"task": "What is the Atlas budget? Omar costs"})),
        ("query_memory", json!({"find": "budget Omar"})),
        ("search", json!({"query": "budget Omar"})),
    ] {
        let (_, text) = md.call(tool, args);
        assert_no_finance(tool, &text, &finance);
    }
    for (tool, key) in [("fetch", "id"), ("expand", "ref")] {
        let (secret, none) = (md.call(tool, json!({key: finance[1]})), md.call(tool, json!({key: "mem_000000000000"})));
        assert_eq!(secret.0, none.0);
        assert_eq!(secret.1.replace(finance[1].as_str(), "ID"), none.1.replace("mem_000000000000", "ID"));
    }

    // The finance token sees finance, and writes there.
    let f = get(a, &ctx, &fin);
    assert!(f.body.contains("FINANCE-SECRET"), "{f:?}");
    assert!(!f.body.contains(ids[0].as_str()), "finance sees no default ids");
    let w = post(a, "/v1/tools/call", &fin, &json!({"name": "remember", "arguments": {"content": "Finance note."}}));
    let wid = w.json()["id"].as_str().expect("id").to_string();
    let scope: String =
        open(&db).query_row("SELECT scope FROM cmp_memories WHERE id = ?1", [&wid], |r| r.get(0)).expect("scope");
    assert_eq!(scope, "finance");

    for t in [&rw, &ro, &fin, &revoked] {
        assert!(!server.log().contains(&t[18..]), "a token secret was logged");
    }
}

#[test]
fn malformed_oversized_busy_and_slow_requests() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("memory.db");
    seed(&db);
    let tok = token(&db, "default", false);
    let mut server = Server::start(
        &db,
        &["--max-body-bytes", "4096", "--max-text-bytes", "512", "--max-concurrent", "2", "--timeout-secs", "2"],
    );
    let a = server.addr;
    let auth = bearer(&tok);
    let raw_post = |path: &str, body: &[u8]| {
        request(a, "POST", path, &[("Authorization", &auth), ("Content-Type", "application/json")], Some(body))
    };

    let r = raw_post("/v1/context", b"{not json");
    assert_eq!(r.status, 400);
    assert!(r.error().starts_with("/v1/context: the body is not valid JSON"), "{r:?}");
    let r = raw_post("/v1/context", b"[1, 2]");
    assert_eq!((r.status, r.error().as_str()), (400, "/v1/context: the body must be a JSON object, got an array"));
    let r = raw_post("/v1/query", b"");
    assert_eq!(r.status, 400);
    let r = raw_post("/v1/tools/call", br#"{"name": 5}"#);
    assert_eq!((r.status, r.error().as_str()), (400, "/v1/tools/call: name must be a string, got a number"));
    let r = raw_post("/v1/tools/call", br#"{"name": "search", "arguments": {"query": "x"}, "extra": 1}"#);
    assert_eq!(r.status, 400);
    let r = get(a, "/v1/context", &tok);
    assert_eq!((r.status, r.error().as_str()), (400, "get_context: task is required"));
    let r = get(a, "/v1/context?task=a&task=b", &tok);
    assert_eq!((r.status, r.error().as_str()), (400, "/v1/context: parameter \"task\" is given twice"));
    let r = get(a, "/v1/context?task=x&token_budget=lots", &tok);
    assert_eq!(r.status, 400);
    assert!(r.error().starts_with("cmp_context: "), "{r:?}");
    let r = get(a, "/v1/context?task=x&token_budget=1.5", &tok);
    assert_eq!((r.status, r.error().as_str()), (400, "cmp_context: token_budget must be an integer, got 1.5"));
    assert_eq!(get(a, "/v1/context?task=x&audit=true", &tok).status, 200, "audit from the query string");
    let r = get(a, "/v1/nothing", &tok);
    assert_eq!(r.status, 404);
    let r = get(a, "/v1/query", &tok);
    assert_eq!(r.status, 405, "{r:?}");
    let r = request(
        a,
        "POST",
        "/mcp",
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ],
        Some(b"{oops"),
    );
    assert!((400..500).contains(&r.status), "{r:?}");

    // Oversized: a body past --max-body-bytes (413), a task past --max-text-bytes (413).
    let big = json!({"task": "x".repeat(8000)}).to_string();
    let r = raw_post("/v1/context", big.as_bytes());
    assert_eq!((r.status, r.error().as_str()), (413, "request body is larger than the limit of 4096 bytes"));
    let r = request(
        a,
        "POST",
        "/mcp",
        &[
            ("Authorization", &auth),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ],
        Some(big.as_bytes()),
    );
    assert_eq!(r.status, 413, "{r:?}");
    let r = get(a, &format!("/v1/context?task={}", "y".repeat(600)), &tok);
    assert_eq!((r.status, r.error().as_str()), (413, "get_context: task is 600 bytes, more than the limit of 512"));
    let mut m = Mcp::new(a, &tok);
    m.initialize();
    let (err, text) = m.call("search", json!({"query": "z".repeat(600)}));
    assert!(err && text == "search: query is 600 bytes, more than the limit of 512", "{text}");

    // Slow: a request whose body never arrives is cut at the time limit (504), not held forever.
    let started = Instant::now();
    let mut slow = TcpStream::connect(a).expect("connect");
    write!(
        slow,
        "POST /v1/context HTTP/1.1\r\nHost: {a}\r\nAuthorization: {auth}\r\nContent-Length: 100\r\nConnection: close\r\n\r\n{{"
    )
    .expect("write");
    let mut raw = Vec::new();
    slow.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
    let _ = std::io::Read::read_to_end(&mut slow, &mut raw);
    let r = parse(&raw);
    assert_eq!((r.status, r.error().as_str()), (504, "request took longer than the 2 s limit"));
    assert!(started.elapsed() < Duration::from_secs(10));

    // Busy: with --max-concurrent 2, two stalled requests fill the server; the third is a 503 at once.
    let stall = || {
        let mut s = TcpStream::connect(a).expect("connect");
        write!(s, "POST /v1/query HTTP/1.1\r\nHost: {a}\r\nAuthorization: {auth}\r\nContent-Length: 50\r\n\r\n{{")
            .expect("write");
        s
    };
    let (s1, s2) = (stall(), stall());
    std::thread::sleep(Duration::from_millis(300));
    let r = get(a, "/v1/context?task=Atlas", &tok);
    assert_eq!(r.status, 503, "{r:?}");
    assert_eq!(r.header("retry-after"), Some("1"));
    assert!(r.error().starts_with("server busy: 2 requests already in flight"), "{r:?}");
    drop((s1, s2));
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(get(a, "/v1/context?task=Atlas", &tok).status, 200, "slots come back");

    assert!(server.alive(), "the server survived every bad request");
    assert_eq!(integrity(&db), "ok");
}

#[test]
fn refuses_a_public_address_without_tokens() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("memory.db");
    let out = std::process::Command::new(BIN)
        .args(["serve", "--listen", "0.0.0.0:0", "--db"])
        .arg(&db)
        .output()
        .expect("run");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("refusing to listen on 0.0.0.0:0") && err.contains("token create"), "{err}");
}

#[test]
fn mcp_checks_the_host_and_origin_headers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("memory.db");
    let tok = token(&db, "default", false);
    let server = Server::start(&db, &["--allowed-host", "memory.example.com"]);
    let auth = bearer(&tok);
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
    .to_string();
    let with_origin = |host: &str, origin: Option<&str>| {
        use std::io::Read;
        let mut s = TcpStream::connect(server.addr).expect("connect");
        let origin = origin.map(|o| format!("Origin: {o}\r\n")).unwrap_or_default();
        write!(
            s,
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\n{origin}Authorization: {auth}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{init}",
            init.len()
        )
        .expect("write");
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        parse(&out)
    };
    let raw = |host: &str| with_origin(host, None);
    assert_eq!(raw("memory.example.com").status, 200, "an allowed host");
    assert_eq!(raw(&server.addr.to_string()).status, 200, "loopback");
    let evil = raw("evil.example.com");
    assert!((400..500).contains(&evil.status), "a rebinding host is refused: {evil:?}");

    // A browser page may call only from an origin on an allowed host.
    let loopback = server.addr.to_string();
    for origin in ["http://localhost:6274", "https://memory.example.com", "http://127.0.0.1:8080", "http://[::1]:3000"]
    {
        assert_eq!(with_origin(&loopback, Some(origin)).status, 200, "{origin}");
    }
    for origin in ["http://evil.example.com", "https://localhost.evil.example.com", "null", "not an origin"] {
        let r = with_origin(&loopback, Some(origin));
        assert_eq!(r.status, 403, "{origin} is refused: {r:?}");
    }
}

/// Reads `s` until the server closes it; panics if that takes longer than `limit`. Returns the time
/// it took and what the server sent.
fn closed_within(s: &mut TcpStream, limit: Duration) -> (Duration, Vec<u8>) {
    use std::io::Read;
    let started = Instant::now();
    s.set_read_timeout(Some(limit)).expect("timeout");
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                panic!("the server kept the connection open for {limit:?}; it sent {:?}", String::from_utf8_lossy(&got))
            }
            Err(_) => break, // reset: closed too
        }
    }
    (started.elapsed(), got)
}

#[test]
fn half_sent_silent_and_idle_connections_are_closed_at_the_header_timeout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("memory.db");
    seed(&db);
    let tok = token(&db, "default", false);
    let mut server = Server::start(&db, &["--header-timeout-secs", "1"]);
    let a = server.addr;

    // Half a request line and then nothing; nothing at all.
    let mut half = TcpStream::connect(a).expect("connect");
    half.write_all(b"GET /v1/context?task=Atl").expect("write");
    let mut silent = TcpStream::connect(a).expect("connect");
    for (what, s) in [("half a request line", &mut half), ("nothing", &mut silent)] {
        let (took, got) = closed_within(s, Duration::from_secs(10));
        assert!(took < Duration::from_secs(4), "{what}: closed after {took:?}");
        assert!(got.is_empty(), "{what}: the server answered {:?}", String::from_utf8_lossy(&got));
    }

    // A head sent a byte every 100 ms is cut at the timeout too: bytes do not restart the timer.
    let mut trickle = TcpStream::connect(a).expect("connect");
    let started = Instant::now();
    let cut = b"GET /healthz HTTP/1.1\r\nX-Pad: ".iter().chain([b'a'; 100].iter()).any(|b| {
        std::thread::sleep(Duration::from_millis(100));
        trickle.write_all(&[*b]).is_err()
    });
    assert!(cut && started.elapsed() < Duration::from_secs(4), "a trickled head held {:?}", started.elapsed());

    // A kept-alive connection idle after its response is closed at the same timeout.
    let mut keep = TcpStream::connect(a).expect("connect");
    write!(keep, "GET /healthz HTTP/1.1\r\nHost: {a}\r\n\r\n").expect("write");
    let (took, got) = closed_within(&mut keep, Duration::from_secs(10));
    let r = parse(&got);
    assert_eq!((r.status, r.body.as_str()), (200, "ok"));
    assert!(took < Duration::from_secs(4), "an idle kept-alive connection closed after {took:?}");

    // A normal request on a fresh connection still works.
    let r = get(a, "/v1/context?task=Atlas", &tok);
    assert_eq!(r.status, 200, "{r:?}");
    assert!(server.alive());
}

#[test]
fn connections_past_the_limit_are_closed_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("memory.db");
    seed(&db);
    let tok = token(&db, "default", false);
    let mut server = Server::start(&db, &["--max-connections", "2", "--header-timeout-secs", "2"]);
    let a = server.addr;

    // Two idle connections fill the limit; a third is closed as soon as it is accepted, unanswered.
    let mut idle = [TcpStream::connect(a).expect("connect"), TcpStream::connect(a).expect("connect")];
    std::thread::sleep(Duration::from_millis(300));
    let mut third = TcpStream::connect(a).expect("connect");
    let _ = write!(third, "GET /healthz HTTP/1.1\r\nHost: {a}\r\n\r\n");
    let (took, got) = closed_within(&mut third, Duration::from_secs(10));
    assert!(got.is_empty(), "past the limit, answered {:?}", String::from_utf8_lossy(&got));
    assert!(took < Duration::from_secs(1), "the third connection closed after {took:?}");
    assert!(server.alive());

    // Once the idle ones are timed out, the slots come back.
    for s in &mut idle {
        let (took, _) = closed_within(s, Duration::from_secs(10));
        assert!(took < Duration::from_secs(5), "an idle connection closed after {took:?}");
    }
    std::thread::sleep(Duration::from_millis(200)); // the slot is freed just after the socket closes
    let r = get(a, "/v1/context?task=Atlas", &tok);
    assert_eq!(r.status, 200, "{r:?}");
    let h = request(a, "GET", "/healthz", &[], None);
    assert_eq!((h.status, h.body.as_str()), (200, "ok"));
    assert!(server.alive());
}

/// A client of the MCP revision without sessions (2026-07-28) never initializes: each request gets
/// a server of its own, so `get_context` gets no implicit session, as the README says, and a read
/// writes no session row (a fuzzing pass found one written on every call, with a read-only token).
#[test]
fn a_stateless_request_gets_no_implicit_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("memory.db");
    seed(&db);
    let tok = token(&db, "default", true);
    let server = Server::start(&db, &[]);
    let auth = bearer(&tok);
    let version = "2026-07-28";
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "get_context", "arguments": {"task": "Atlas"},
        "_meta": {"io.modelcontextprotocol/protocolVersion": version,
                  "io.modelcontextprotocol/clientCapabilities": {},
                  "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"}}}})
    .to_string();
    let sessions = || -> i64 { open(&db).query_row("SELECT count(*) FROM cmp_sessions", [], |r| r.get(0)).unwrap() };
    let before = sessions();
    for _ in 0..3 {
        let r = request(
            server.addr,
            "POST",
            "/mcp",
            &[
                ("Authorization", &auth),
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                ("MCP-Protocol-Version", version),
                ("Mcp-Method", "tools/call"),
                ("Mcp-Name", "get_context"),
            ],
            Some(call.as_bytes()),
        );
        assert_eq!(r.status, 200, "{r:?}");
        let body = r.sse_messages().into_iter().next().unwrap_or_else(|| r.json());
        let text = body["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("{body}"));
        let pack: Value = serde_json::from_str(text).expect("a pack");
        assert!(pack["working_memory"].is_null(), "no implicit session: {pack}");
    }
    assert_eq!(sessions(), before, "a stateless read writes no session row");
}

/// An idle event stream (the GET a client opens to hear from the server) holds an in-flight slot
/// only up to the time limit, and `/healthz` is outside the bound: before, streams that no one
/// read held their slots until the MCP session expired (5 minutes), refusing every other request
/// and the health check (a fuzzing pass).
#[test]
fn idle_event_streams_give_their_slots_back_at_the_time_limit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("memory.db");
    seed(&db);
    let tok = token(&db, "default", true);
    let server = Server::start(&db, &["--max-concurrent", "2", "--timeout-secs", "1"]);
    let mut mcp = Mcp::new(server.addr, &tok);
    mcp.initialize();
    let sid = mcp.session.clone().expect("a session");
    let auth = bearer(&tok);
    let streams: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut s = TcpStream::connect(server.addr).expect("connect");
            write!(
                s,
                "GET /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: {auth}\r\nAccept: text/event-stream\r\n\
                 Mcp-Session-Id: {sid}\r\nMCP-Protocol-Version: 2025-06-18\r\n\r\n",
                server.addr
            )
            .expect("write");
            s
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(get(server.addr, "/v1/context?task=Atlas", &tok).status, 503, "both slots held by the streams");
    assert_eq!(get(server.addr, "/healthz", "").status, 200, "the health check is outside the bound");
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(get(server.addr, "/v1/context?task=Atlas", &tok).status, 200, "the streams ended at the time limit");
    drop(streams);
}

/// Live MCP sessions are bounded (`--max-sessions`): an `initialize` past the bound is a 503, other
/// requests go on, and ending a session makes room (a fuzzing pass opened 12,000 sessions in a
/// minute, about 80 KB each, with a read-only token).
#[test]
fn mcp_sessions_are_bounded() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("memory.db");
    seed(&db);
    let tok = token(&db, "default", true);
    let server = Server::start(&db, &["--max-sessions", "2"]);
    let mut first = Mcp::new(server.addr, &tok);
    first.initialize();
    Mcp::new(server.addr, &tok).initialize();
    let third = Mcp::new(server.addr, &tok)
        .post(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}));
    assert_eq!(third.status, 503, "{third:?}");
    assert!(third.error().starts_with("server busy: 2 MCP sessions are open"), "{third:?}");
    assert_eq!(third.header("retry-after"), Some("60"));
    assert!(!first.ok("search", json!({"query": "Atlas"})).to_string().is_empty(), "an open session goes on");
    assert_eq!(get(server.addr, "/v1/context?task=Atlas", &tok).status, 200);
    let auth = bearer(&tok);
    let sid = first.session.clone().expect("a session");
    let end = request(server.addr, "DELETE", "/mcp", &[("Authorization", &auth), ("Mcp-Session-Id", &sid)], None);
    assert!(end.status < 300, "{end:?}");
    Mcp::new(server.addr, &tok).initialize();
}
