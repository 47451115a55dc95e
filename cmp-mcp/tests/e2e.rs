//! End to end: spawns the built `cmp-mcp` on a seeded database and speaks MCP (JSON-RPC 2.0, one
//! message per line) over its stdin/stdout, as Claude Desktop or Cursor would.

use rusqlite::Connection;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(60);

/// A minimal MCP client over a child process.
struct Client {
    child: Child,
    stdin: ChildStdin,
    rx: Receiver<Value>,
    next_id: i64,
}

impl Client {
    fn spawn(db: &Path, scope: Option<&str>) -> Client {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_cmp-mcp"));
        cmd.arg("--db").arg(db);
        if let Some(s) = scope {
            cmd.args(["--scope", s]);
        }
        let mut child =
            cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().expect("spawn cmp-mcp");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        Client { child, stdin, rx, next_id: 1 }
    }

    fn send(&mut self, msg: &Value) {
        writeln!(self.stdin, "{msg}").expect("write to cmp-mcp");
        self.stdin.flush().expect("flush");
    }

    /// Sends a request and returns the whole response message (result or error).
    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let msg = self.rx.recv_timeout(TIMEOUT).unwrap_or_else(|e| panic!("no answer to {method}: {e}"));
            // Server notifications (logging, list changes) may come in between.
            if msg.get("id") == Some(&json!(id)) {
                assert_eq!(msg["jsonrpc"], "2.0");
                return msg;
            }
        }
    }

    fn notify(&mut self, method: &str) {
        self.send(&json!({"jsonrpc": "2.0", "method": method}));
    }

    fn initialize(&mut self) -> Value {
        let r = self.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "e2e", "version": "0"}}),
        );
        self.notify("notifications/initialized");
        r
    }

    /// tools/call → (isError, the text content).
    fn call(&mut self, name: &str, args: Value) -> (bool, String) {
        let r = self.request("tools/call", json!({"name": name, "arguments": args}));
        let result = r.get("result").unwrap_or_else(|| panic!("{name}: JSON-RPC error {r}"));
        let content = result["content"].as_array().expect("content array");
        assert_eq!(content.len(), 1, "{result}");
        assert_eq!(content[0]["type"], "text");
        (result["isError"] == json!(true), content[0]["text"].as_str().expect("text").to_string())
    }

    /// A call that must succeed and return JSON.
    fn ok(&mut self, name: &str, args: Value) -> Value {
        let (err, text) = self.call(name, args.clone());
        assert!(!err, "{name} {args} failed: {text}");
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: not JSON ({e}): {text}"))
    }

    /// A call that must fail with a tool error; returns its message.
    fn err(&mut self, name: &str, args: Value) -> String {
        let (err, text) = self.call(name, args.clone());
        assert!(err, "{name} {args} should fail, got {text}");
        text
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn open(db: &Path) -> Connection {
    let conn = Connection::open(db).expect("open db");
    cmp::register(&conn).expect("register");
    conn.query_row("SELECT cmp_init()", [], |_| Ok(())).expect("cmp_init");
    conn
}

/// Seeds a few hand-written memories, plenty of Atlas filler (so a small pack is partial), and one
/// memory in another scope. Returns the ids of the hand-written ones.
fn seed(db: &Path) -> Vec<String> {
    let conn = open(db);
    let rows = [
        ("Never deploy Atlas on a Friday: the on-call rota is thin at weekends.", "negative", r#"["Atlas"]"#, None),
        (
            "Atlas launches on 1 July 2026; the web workstream owns the marketing site.",
            "decision",
            r#"["Atlas"]"#,
            Some("https://example.com/atlas/plan"),
        ),
        ("Dana leads the Atlas mobile workstream.", "semantic", r#"["Atlas","Dana"]"#, None),
        ("Priya prefers written status updates over meetings.", "preference", r#"["Priya"]"#, None),
    ];
    let mut ids = Vec::new();
    for (content, kind, entities, url) in rows {
        let id: String = conn
            .query_row(
                "INSERT INTO cmp_memories(content, kind, entities, source_url) VALUES (?1, ?2, ?3, ?4) RETURNING id",
                rusqlite::params![content, kind, entities, url],
                |r| r.get(0),
            )
            .expect("insert");
        ids.push(id);
    }
    for i in 0..14 {
        conn.execute(
            "INSERT INTO cmp_memories(content, entities) VALUES (?1, '[\"Atlas\"]')",
            [format!(
                "Atlas launch readiness note {i}: checklist item {i} covers rollout step {i}, owner sign-off, \
                 the staging soak test and the rollback drill for the Atlas launch plan, reviewed in week {i}."
            )],
        )
        .expect("insert filler");
    }
    conn.execute(
        "INSERT INTO cmp_memories(content, entities, scope) VALUES ('The Atlas budget is two million.', '[\"Atlas\"]', 'finance')",
        [],
    )
    .expect("insert other scope");
    ids
}

/// A fingerprint of every stored memory row, to show read-only tools write nothing.
fn fingerprint(db: &Path) -> String {
    Connection::open(db)
        .expect("open")
        .query_row(
            "SELECT count(*) || ':' || group_concat(id || '|' || content || '|' || coalesce(superseded_by, '') || '|' || scope, ';')
             FROM (SELECT * FROM cmp_memories ORDER BY id)",
            [],
            |r| r.get(0),
        )
        .expect("fingerprint")
}

fn new_refs(envelope: &Value) -> Vec<String> {
    envelope["working_memory"]["new"]
        .as_array()
        .expect("working_memory.new")
        .iter()
        .map(|n| n["ref"].as_str().expect("ref").to_string())
        .collect()
}

fn item_refs(envelope: &Value) -> Vec<String> {
    envelope["items"].as_array().expect("items").iter().map(|i| i["ref"].as_str().expect("ref").to_string()).collect()
}

#[test]
fn mcp_over_stdio_end_to_end() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("memory.db");
    let ids = seed(&db);
    let (rule, plan, dana) = (&ids[0], &ids[1], &ids[2]);
    let mut c = Client::spawn(&db, None);

    // Handshake.
    let init = c.initialize();
    let result = &init["result"];
    assert_eq!(result["serverInfo"]["name"], "cmp-mcp", "{init}");
    assert!(result["capabilities"]["tools"].is_object(), "{init}");
    assert!(result["instructions"].as_str().is_some_and(|s| s.contains("get_context")), "{init}");

    // tools/list: all six, each with an input schema.
    let list = c.request("tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().expect("name")).collect();
    for want in ["get_context", "query_memory", "expand", "remember", "search", "fetch"] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    assert_eq!(names.len(), 6, "{names:?}");
    for t in tools {
        let schema = &t["inputSchema"];
        assert_eq!(schema["type"], "object", "{t}");
        assert!(schema["properties"].as_object().is_some_and(|p| !p.is_empty()), "{t}");
        assert!(t["description"].as_str().is_some_and(|d| d.len() > 80), "{t}");
        let read_only = t["annotations"]["readOnlyHint"] == json!(true);
        assert_eq!(read_only, t["name"] != "remember", "{t}");
    }
    let tool = |n: &str| tools.iter().find(|t| t["name"] == n).expect("tool").clone();
    let mql = tool("query_memory")["inputSchema"]["properties"].clone();
    for field in [
        "ask",
        "find",
        "layers",
        "entities",
        "as_of",
        "valid_only",
        "min_relevance",
        "min_trust",
        "budget_tokens",
        "model",
        "expand",
        "k",
        "cursor",
    ] {
        assert!(mql.get(field).is_some(), "query_memory schema lacks {field}");
    }
    assert_eq!(tool("get_context")["inputSchema"]["required"], json!(["task"]));
    assert!(tool("get_context")["description"].as_str().is_some_and(|d| d.contains("cite") && d.contains("data")));

    let before = fingerprint(&db);

    // A conversation: three get_context calls on the same task with no session_id. The connection's
    // own session makes the second announce only what the wider budget added, and the repeat nothing.
    let task = "Plan the Atlas launch";
    let turn1 = c.ok("get_context", json!({"task": task, "token_budget": 1000}));
    let turn2 = c.ok("get_context", json!({"task": task, "token_budget": 4000}));
    let turn3 = c.ok("get_context", json!({"task": task, "token_budget": 4000}));
    assert_eq!(turn1["smp"], "1");
    assert!(turn1["legend"]["rules"].is_array(), "{turn1}");
    // The receipt names the session only with audit: read the connection's session from the store.
    let sessions = |db: &Path| -> Vec<(String, i64)> {
        let conn = Connection::open(db).expect("open");
        let mut st = conn.prepare("SELECT session_id, turn FROM cmp_sessions ORDER BY session_id").expect("prepare");
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).expect("sessions").collect::<Result<_, _>>().expect("rows")
    };
    let held = sessions(&db);
    assert_eq!(held.len(), 1, "one session, the connection's own: {held:?}");
    assert!(held[0].0.starts_with("mcp-"), "{held:?}");
    assert_eq!(held[0].1, 3, "the three calls are its three turns");
    assert!(turn2["legend"].is_null(), "the session already holds the legend: {}", turn2["legend"]);
    let (new1, new2, new3) = (new_refs(&turn1), new_refs(&turn2), new_refs(&turn3));
    assert!(!new1.is_empty(), "turn 1 announces its pack: {turn1}");
    assert_eq!(new1, item_refs(&turn1), "a fresh session is told about every item");
    assert!(!new2.is_empty(), "the wider budget adds memories: {turn2}");
    assert!(new2.iter().all(|r| !new1.contains(r)), "nothing is announced twice");
    assert!(new3.is_empty(), "a verbatim repeat announces nothing: {}", turn3["working_memory"]);
    assert!(new1.len() + new2.len() >= item_refs(&turn3).len());
    let cursors: Vec<&Value> = [&turn1, &turn2, &turn3].iter().map(|t| &t["working_memory"]["cursor"]).collect();
    assert_eq!(cursors, [&json!("1"), &json!("2"), &json!("3")]);
    println!("delta: turn1 new={} turn2 new={} turn3 new={}", new1.len(), new2.len(), new3.len());
    assert!(item_refs(&turn2).contains(rule), "the constraint is packed");

    // An explicit session_id is its own session; other formats pass through.
    let own = c.ok("get_context", json!({"task": task, "session_id": "chat-42", "model": "claude"}));
    assert!(sessions(&db).iter().any(|(s, t)| s == "chat-42" && *t == 1), "chat-42 is its own session");
    assert_eq!(own["model"], "claude");
    assert!(!new_refs(&own).is_empty());
    let (err, md) = c.call("get_context", json!({"task": task, "format": "markdown"}));
    assert!(!err && serde_json::from_str::<Value>(&md).is_err() && md.contains(rule), "{md}");
    let delta = json!({"task": task, "session_id": "chat-44", "send": "delta"});
    assert!(!item_refs(&c.ok("get_context", delta.clone())).is_empty());
    assert!(item_refs(&c.ok("get_context", delta)).is_empty(), "send: delta re-sends nothing");
    let partial = c.ok("get_context", json!({"task": task, "token_budget": 300, "session_id": "chat-43"}));
    assert_eq!(partial["coverage"]["status"], "partial");
    let more = c.ok("expand", json!({"ref": partial["cursor"], "direction": "more"}));
    assert!(more["count"].as_u64().is_some_and(|n| n > 0), "{more}");
    assert!(c.err("get_context", json!({"task": task, "token_budget": 1000.5})).starts_with("cmp_context: "));
    assert!(c.err("get_context", json!({"task": task, "format": "yaml"})).starts_with("cmp_context: "));
    assert!(c.err("get_context", json!({})).starts_with("get_context: task is required"));

    // query_memory: the MQL object as is, paged by cursor.
    let page1 = c.ok("query_memory", json!({"find": "Atlas launch", "k": 3}));
    assert_eq!(page1["count"], 3, "{page1}");
    let cursor = page1["cursor"].as_str().expect("more pages");
    assert!(cursor.starts_with("mqlc:"));
    let page2 = c.ok("query_memory", json!({"cursor": cursor}));
    assert_eq!(page2["offset"], 3, "{page2}");
    let rules = c.ok("query_memory", json!({"ask": "Atlas deployment", "layers": ["negative"]}));
    assert_eq!(item_refs(&rules), std::slice::from_ref(rule), "{rules}");

    // A bad call: a tool error whose text is exactly what SQL callers get.
    let bad = json!({"find": "Atlas", "min_relevance": 2.5});
    let msg = c.err("query_memory", bad.clone());
    assert_eq!(msg, "cmp_query: min_relevance must be within [0, 1], got 2.5");
    let direct = open(&db).query_row("SELECT cmp_query(?1)", [bad.to_string()], |r| r.get::<_, String>(0)).unwrap_err();
    assert_eq!(msg, direct.to_string());
    assert!(c.err("query_memory", json!({"find": "x", "ask": "y"})).starts_with("cmp_query: give exactly one"));
    assert!(c.err("query_memory", json!({"find": "x", "scope": "finance"})).contains("scope is fixed"));

    // expand: document and neighbors of a ref from the pack.
    let doc = c.ok("expand", json!({"ref": dana}));
    assert_eq!(doc["found"], true);
    assert_eq!(doc["document"]["content"], "Dana leads the Atlas mobile workstream.");
    let hood = c.ok("expand", json!({"ref": dana, "direction": "neighbors"}));
    assert!(hood["neighbors"].as_array().is_some_and(|n| !n.is_empty()), "{hood}");
    assert_eq!(c.ok("expand", json!({"ref": "mem_000000000000"}))["found"], false);
    assert!(c.err("expand", json!({"ref": dana, "direction": "sideways"})).starts_with("cmp_expand: direction"));

    // search / fetch in the ChatGPT connector shape.
    let found = c.ok("search", json!({"query": "Who owns the Atlas marketing site?"}));
    let results = found["results"].as_array().expect("results");
    assert!(!results.is_empty() && results.len() <= 10, "{found}");
    for r in results {
        let keys: Vec<&String> = r.as_object().expect("result").keys().collect();
        assert_eq!(keys, ["id", "title", "url"], "{r}");
        assert!(r["title"].as_str().is_some_and(|t| !t.is_empty() && t.chars().count() <= 81), "{r}");
    }
    let hit = results.iter().find(|r| r["id"] == json!(plan)).expect("the launch plan is found");
    assert_eq!(hit["url"], "https://example.com/atlas/plan");
    let other = results.iter().find(|r| r["id"] != json!(plan)).expect("another hit");
    assert_eq!(other["url"], format!("cmp://{}", other["id"].as_str().unwrap_or_default()));
    assert!(results.iter().all(|r| !r["title"].as_str().unwrap_or_default().contains("budget")), "scope leak");
    let doc = c.ok("fetch", json!({"id": plan}));
    let keys: Vec<&String> = doc.as_object().expect("document").keys().collect();
    assert_eq!(keys, ["id", "title", "text", "url", "metadata"]);
    assert_eq!(doc["text"], "Atlas launches on 1 July 2026; the web workstream owns the marketing site.");
    assert_eq!(doc["url"], "https://example.com/atlas/plan");
    assert_eq!(doc["metadata"]["kind"], "decision");
    assert_eq!(doc["metadata"]["entities"], json!(["Atlas"]));
    assert!(c.err("fetch", json!({"id": "mem_000000000000"})).starts_with("fetch: no memory"));

    // Nothing above wrote a memory.
    assert_eq!(fingerprint(&db), before, "read-only tools changed cmp_memories");

    // An unknown tool is a JSON-RPC error.
    let unknown = c.request("tools/call", json!({"name": "drop_everything", "arguments": {}}));
    assert!(unknown["error"]["message"].as_str().is_some_and(|m| m.contains("drop_everything")), "{unknown}");
    assert!(unknown.get("result").is_none());

    // remember: the only write, superseding in the same transaction.
    let stored = c.ok(
        "remember",
        json!({"content": "Atlas launch moved to 15 July 2026.", "kind": "decision", "entities": ["Atlas"],
               "source_url": "https://example.com/atlas/slip", "occurred_at": "2026-06-20", "supersedes": plan}),
    );
    let new_id = stored["id"].as_str().expect("id").to_string();
    assert!(new_id.starts_with("mem_") && new_id.len() == 16, "{new_id}");
    let conn = open(&db);
    let (kind, entities, scope, occurred): (String, String, String, String) = conn
        .query_row("SELECT kind, entities, scope, occurred_at FROM cmp_memories WHERE id = ?1", [&new_id], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .expect("stored row");
    assert_eq!(
        (kind.as_str(), entities.as_str(), scope.as_str(), occurred.as_str()),
        ("decision", r#"["Atlas"]"#, "default", "2026-06-20")
    );
    let (by, at): (Option<String>, Option<String>) = conn
        .query_row("SELECT superseded_by, superseded_at FROM cmp_memories WHERE id = ?1", [plan], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .expect("old row");
    assert_eq!(by.as_deref(), Some(new_id.as_str()));
    assert!(at.is_some());
    let fetched = c.ok("fetch", json!({"id": new_id}));
    assert_eq!(fetched["text"], "Atlas launch moved to 15 July 2026.");
    let turn4 = c.ok("get_context", json!({"task": task, "token_budget": 4000}));
    let superseded = turn4["working_memory"]["superseded"].as_array().expect("superseded");
    assert!(superseded.iter().any(|s| s["ref"] == json!(plan)), "{}", turn4["working_memory"]);
    assert!(new_refs(&turn4).contains(&new_id), "{}", turn4["working_memory"]);

    // Bad writes write nothing.
    let count = |conn: &Connection| {
        conn.query_row("SELECT count(*) FROM cmp_memories", [], |r| r.get::<_, i64>(0)).expect("count")
    };
    let n = count(&conn);
    assert!(c
        .err("remember", json!({"content": "x", "supersedes": "mem_000000000000"}))
        .starts_with("remember: supersedes"));
    assert!(c.err("remember", json!({"content": "x", "supersedes": plan})).contains("already superseded"));
    assert!(c.err("remember", json!({"content": "x", "kind": "gossip"})).starts_with("remember: kind"));
    assert!(c.err("remember", json!({"content": "x", "occurred_at": "soon"})).starts_with("remember: occurred_at"));
    assert!(c.err("remember", json!({"content": "  "})).starts_with("remember: content"));
    let many: Vec<String> = (0..21).map(|i| format!("e{i}")).collect();
    assert_eq!(
        c.err("remember", json!({"content": "x", "entities": many})),
        "remember: entities must list at most 20 names, got 21"
    );
    assert_eq!(
        c.err("remember", json!({"content": "x", "entities": ["E".repeat(161)]})),
        "remember: entities[0] must be at most 160 characters, got 161"
    );
    assert!(c.err("remember", json!({"content": "x", "colour": "red"})).starts_with("remember: unknown argument"));
    assert_eq!(count(&conn), n);
    // Over stdio the server sets no limit of its own; the extension's (1 MiB) is named in the tool's
    // words, with the tool's own argument.
    assert_eq!(
        c.err("get_context", json!({"task": "atlas", "session_id": "  "})),
        "get_context: session_id must not be blank (omit it to use this connection's own session)"
    );
    let huge = "a".repeat((1 << 20) + 1);
    for (tool, key) in [("search", "query"), ("fetch", "id"), ("get_context", "task")] {
        assert_eq!(
            c.err(tool, json!({ key: huge })),
            format!("{tool}: {key} is 1048577 bytes, more than the limit of 1048576"),
        );
    }
}

#[test]
fn scope_confines_every_tool() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("memory.db");
    let ids = seed(&db);
    let mut c = Client::spawn(&db, Some("finance"));
    c.initialize();

    let found = c.ok("search", json!({"query": "Atlas"}));
    let results = found["results"].as_array().expect("results");
    assert_eq!(results.len(), 1, "{found}");
    assert_eq!(results[0]["title"], "The Atlas budget is two million.");
    assert!(c.err("fetch", json!({"id": ids[1]})).starts_with("fetch: no memory"));
    assert_eq!(c.ok("expand", json!({"ref": ids[1]}))["found"], false);
    let pack = c.ok("get_context", json!({"task": "Atlas"}));
    assert_eq!(item_refs(&pack), [results[0]["id"].as_str().expect("id").to_string()]);
    let q = c.ok("query_memory", json!({"find": "Atlas"}));
    assert_eq!(q["count"], 1, "{q}");

    // A cursor issued for the default scope does not page here.
    let cursor = open(&db)
        .query_row(r#"SELECT cmp_query('{"find":"Atlas launch","k":1}') ->> '$.cursor'"#, [], |r| r.get::<_, String>(0))
        .expect("a default-scope cursor");
    assert_eq!(c.err("query_memory", json!({"cursor": cursor})), "cmp_query: cursor was issued for another scope");
    assert!(c.err("expand", json!({"ref": cursor, "direction": "more"})).contains("another scope"));

    let stored = c.ok("remember", json!({"content": "Finance signs off on the Atlas budget in June."}));
    let scope: String = open(&db)
        .query_row("SELECT scope FROM cmp_memories WHERE id = ?1", [stored["id"].as_str().expect("id")], |r| r.get(0))
        .expect("row");
    assert_eq!(scope, "finance");
    // Superseding across scopes is refused: the default-scope memory is invisible here.
    assert!(c.err("remember", json!({"content": "x", "supersedes": ids[1]})).starts_with("remember: supersedes"));
}
