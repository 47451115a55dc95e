//! The README's client snippets are valid JSON that starts this binary, and its tool table names
//! every tool the server lists (tests/e2e.rs checks the list itself).

const README: &str = include_str!("../README.md");
const TOOLS: [&str; 6] = ["get_context", "query_memory", "expand", "remember", "search", "fetch"];

fn json_blocks() -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in README.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```json") => current = Some(String::new()),
            (Some(b), "```") => {
                blocks.push(std::mem::take(b));
                current = None;
            }
            (Some(b), l) => {
                b.push_str(l);
                b.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

#[test]
fn client_config_snippets_parse_and_start_cmp_mcp() {
    let blocks = json_blocks();
    assert!(blocks.len() >= 2, "Claude Desktop and Cursor snippets expected");
    for b in blocks {
        let v: serde_json::Value = serde_json::from_str(&b).unwrap_or_else(|e| panic!("invalid JSON ({e}):\n{b}"));
        let server = &v["mcpServers"]["cmp"];
        assert!(server["command"].as_str().is_some_and(|c| c.ends_with("/cmp-mcp")), "{b}");
        let args: Vec<&str> = server["args"].as_array().expect("args").iter().filter_map(|a| a.as_str()).collect();
        assert_eq!(args.first(), Some(&"--db"), "{b}");
    }
}

#[test]
fn tool_table_names_every_tool() {
    for t in TOOLS {
        assert!(README.contains(&format!("| `{t}` |")), "README tool table lacks {t}");
    }
}

/// The README's ```sh block that starts `cmp-mcp serve`: run as written (on a free port instead of
/// 8787, with this build's binary on PATH), against a real server.
#[test]
fn curl_example_runs() {
    let block = README
        .split("```sh\n")
        .skip(1)
        .filter_map(|b| b.split("\n```").next())
        .find(|b| b.contains("cmp-mcp serve"))
        .expect("a sh block that starts cmp-mcp serve");
    let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port();
    let script = format!(
        "set -e\ntrap 'kill $(jobs -p) 2>/dev/null' EXIT\n{}\n",
        block
            .replace("8787", &port.to_string())
            .replace(
                "sleep 1",
                "for i in $(seq 50); do curl -sf http://127.0.0.1:PORT/healthz > /dev/null && break; sleep 0.2; done"
            )
            .replace("PORT", &port.to_string())
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let bin_dir = std::path::Path::new(env!("CARGO_BIN_EXE_cmp-mcp")).parent().expect("bin dir").to_path_buf();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(dir.path())
        .env("PATH", path)
        .output()
        .expect("bash (and curl) are needed for this test");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{script}\nstdout: {stdout}\nstderr: {}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("{\"id\":\"mem_") && stdout.contains("\"kind\":\"semantic\""), "remember: {stdout}");
    let id = stdout.split("{\"id\":\"").nth(1).and_then(|r| r.split('"').next()).expect("id").to_string();
    assert!(stdout.contains("\"smp\":\"1\"") && stdout.matches(&id).count() >= 3, "the pack cites it: {stdout}");
    assert!(stdout.contains("\"mode\":\"find\""), "the query: {stdout}");
}
