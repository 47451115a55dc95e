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
