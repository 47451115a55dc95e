//! Docs that run: the ```sql blocks of README.md and of every docs/*.md are executed, each file on its
//! own fresh registered in-memory connection, its blocks in order (a file's examples build on the ones
//! before them, never on another file's). docs/reference.md is the API reference: every registered
//! function has a section there (`### cmp_x(...)`), a row in its function table and a runnable example,
//! and every option key and MQL field the functions accept is named in their section.
//!
//! Conventions inside a ```sql block (see ARCHITECTURE.md, "Runnable examples"):
//! - statements end with `;`; a statement without annotation must simply succeed;
//! - a line `-- => <expected>` right after a statement asserts that the first column of its first row,
//!   rendered as text, is exactly `<expected>`; consecutive `-- =>` lines are joined with newlines
//!   (for multi-line values); NULL renders as `NULL`, integers and reals as SQLite prints them;
//!   trailing white space of the line is not significant;
//! - a line `-- error: <prefix>` right after a statement asserts that it fails with a message that
//!   starts with `<prefix>`;
//! - fences with any other info string (```sh, ```text, ```sql no-run) are not executed.
//!
//! `CMP_README_PRINT=1 cargo test --test readme -- --nocapture docs_sql_blocks_run` prints what each
//! statement returns instead of asserting, to write the `-- =>` lines of a new example
//! (`CMP_README_PRINT=docs/protocol.md` prints that file only).

use rusqlite::types::ValueRef;
use rusqlite::Connection;
use std::ffi::CString;

/// What an example statement must do.
#[derive(Debug, Clone, PartialEq)]
enum Expect {
    /// Succeed.
    Ok,
    /// Succeed, first column of the first row rendered as this text.
    Value(String),
    /// Fail with a message starting with this.
    Error(String),
}

/// One statement of a ```sql block.
#[derive(Debug, Clone)]
struct Example {
    /// 1-based line of its file where the statement starts.
    line: usize,
    sql: String,
    expect: Expect,
}

const README: &str = "README.md";
const REFERENCE: &str = "docs/reference.md";

fn read(doc: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(doc);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// The documents whose ```sql blocks run: README.md, then docs/*.md in name order (paths relative to
/// the repository root).
fn docs() -> Vec<String> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
    let mut out: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("a docs/ entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    out.sort();
    out.insert(0, README.to_string());
    out
}

/// The executed blocks of `doc`: (1-based line of the first body line, body lines).
fn sql_blocks<'a>(doc: &str, md: &'a str) -> Vec<(usize, Vec<&'a str>)> {
    let mut out = Vec::new();
    let mut current: Option<(usize, Vec<&str>, bool)> = None;
    for (i, line) in md.lines().enumerate() {
        let trimmed = line.trim();
        match current.as_mut() {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    current = Some((i + 2, Vec::new(), info.trim() == "sql"));
                }
            }
            Some((start, body, run)) => {
                if trimmed == "```" {
                    if *run {
                        out.push((*start, std::mem::take(body)));
                    }
                    current = None;
                } else {
                    body.push(line);
                }
            }
        }
    }
    assert!(current.is_none(), "{doc}: unclosed ``` fence");
    out
}

fn is_complete(sql: &str) -> bool {
    let c = CString::new(sql).expect("doc SQL holds no NUL byte");
    // SAFETY: a valid NUL-terminated string; sqlite3_complete only reads it.
    unsafe { rusqlite::ffi::sqlite3_complete(c.as_ptr()) != 0 }
}

/// Splits a block into statements with their annotations. Panics on a misplaced annotation.
fn examples(doc: &str, start: usize, body: &[&str]) -> Vec<Example> {
    let mut out: Vec<Example> = Vec::new();
    let mut pending = String::new();
    let mut pending_line = 0;
    // True while the lines right after the last complete statement are being read.
    let mut just_closed = false;
    for (k, line) in body.iter().enumerate() {
        let n = start + k;
        let t = line.trim();
        let value = t.strip_prefix("-- =>");
        let error = t.strip_prefix("-- error:");
        if value.is_some() || error.is_some() {
            let last = match out.last_mut() {
                Some(last) if just_closed && pending.trim().is_empty() => last,
                _ => panic!("{doc}:{n}: an annotation must come right after a complete statement"),
            };
            match (value, &mut last.expect) {
                (Some(v), Expect::Ok) => last.expect = Expect::Value(one_space(v).into()),
                (Some(v), Expect::Value(prev)) => {
                    prev.push('\n');
                    prev.push_str(one_space(v));
                }
                (None, Expect::Ok) => last.expect = Expect::Error(one_space(error.unwrap_or_default()).into()),
                _ => panic!("{doc}:{n}: conflicting annotations for one statement"),
            }
            continue;
        }
        just_closed = false;
        if pending.trim().is_empty() {
            pending.clear();
            pending_line = n;
        }
        pending.push_str(line);
        pending.push('\n');
        if is_complete(&pending) {
            out.push(Example { line: pending_line, sql: std::mem::take(&mut pending), expect: Expect::Ok });
            just_closed = true;
        }
    }
    let rest: String = pending.lines().filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with("--")).collect();
    assert!(rest.is_empty(), "{doc}:{pending_line}: statement without a closing `;`: {pending}");
    out
}

fn one_space(s: &str) -> &str {
    s.strip_prefix(' ').unwrap_or(s)
}

/// The first column of a row as the docs write it.
fn render(conn: &Connection, v: ValueRef<'_>) -> String {
    match v {
        ValueRef::Null => "NULL".into(),
        ValueRef::Integer(i) => i.to_string(),
        // SQLite's own real-to-text conversion, as the sqlite3 shell prints it.
        ValueRef::Real(f) => {
            conn.query_row("SELECT CAST(?1 AS TEXT)", [f], |r| r.get(0)).unwrap_or_else(|e| panic!("render {f}: {e}"))
        }
        ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned(),
        ValueRef::Blob(b) => format!("x'{}'", b.iter().map(|x| format!("{x:02x}")).collect::<String>()),
    }
}

/// Runs one statement; returns the rendered first column of its first row, if any.
fn run(conn: &Connection, sql: &str) -> rusqlite::Result<Option<String>> {
    let mut st = conn.prepare(sql)?;
    let mut rows = st.query([])?;
    let mut first = None;
    while let Some(row) = rows.next()? {
        if first.is_none() && row.as_ref().column_count() > 0 {
            first = Some(render(conn, row.get_ref(0)?));
        }
    }
    Ok(first)
}

/// The examples of one document, in order (none when it has no ```sql block).
fn doc_examples(doc: &str) -> Vec<Example> {
    let md = read(doc);
    sql_blocks(doc, &md).iter().flat_map(|(s, b)| examples(doc, *s, b)).collect()
}

/// Runs the examples of `doc` on a fresh registered connection; returns (statements, asserted).
fn run_doc(doc: &str, print: bool) -> (usize, usize) {
    let conn = Connection::open_in_memory().unwrap();
    cmp::register(&conn).unwrap();
    let examples = doc_examples(doc);
    let mut asserted = 0;
    for ex in &examples {
        let at = format!("{doc}:{}", ex.line);
        let sql = ex.sql.trim();
        if print {
            match run(&conn, sql) {
                Ok(v) => println!("{at}: {sql}\n-- => {}", v.unwrap_or_default().replace('\n', "\n-- => ")),
                Err(e) => println!("{at}: {sql}\n-- error: {e}"),
            }
            continue;
        }
        match (&ex.expect, run(&conn, sql)) {
            (Expect::Ok, Ok(_)) => {}
            (Expect::Ok, Err(e)) => panic!("{at}: {sql}\n  failed: {e}"),
            (Expect::Value(want), Ok(got)) => {
                asserted += 1;
                let got = got.unwrap_or_else(|| panic!("{at}: {sql}\n  returned no row; expected {want:?}"));
                assert!(
                    got == *want,
                    "{at}: {sql}\n  expected: -- => {want}\n  got:      -- => {}",
                    got.replace('\n', "\n  -- => ")
                );
            }
            (Expect::Value(want), Err(e)) => {
                panic!("{at}: {sql}\n  expected {want:?}, failed: {e}")
            }
            (Expect::Error(prefix), Ok(got)) => {
                panic!("{at}: {sql}\n  expected an error starting {prefix:?}, got {got:?}")
            }
            (Expect::Error(prefix), Err(e)) => {
                asserted += 1;
                let msg = e.to_string();
                assert!(
                    msg.starts_with(prefix.as_str()),
                    "{at}: {sql}\n  expected an error starting: {prefix}\n  got:                        {msg}"
                );
            }
        }
    }
    (examples.len(), asserted)
}

#[test]
fn docs_sql_blocks_run() {
    // CMP_README_PRINT=1 prints what every statement returns (=docs/x.md: that file only): a help
    // when writing new examples.
    let print = std::env::var("CMP_README_PRINT").ok();
    let mut total = 0;
    for doc in docs() {
        if print.as_deref().is_some_and(|p| p != "1" && p != doc) {
            continue;
        }
        let (n, asserted) = run_doc(&doc, print.is_some());
        println!("{doc}: {n} statements run, {asserted} results asserted");
        assert!(print.is_some() || n == 0 || asserted > 0, "{doc} runs SQL but asserts nothing");
        total += asserted;
    }
    assert!(print.is_some() || total > 0, "the docs assert nothing");
}

#[test]
fn the_readme_and_the_reference_assert_results() {
    for doc in [README, REFERENCE] {
        assert!(doc_examples(doc).iter().any(|e| e.expect != Expect::Ok), "{doc} has no asserted ```sql example");
    }
}

/// True when `name` is called (`name(`) in `sql`, as a whole identifier.
fn calls(sql: &str, name: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    sql.match_indices(name).any(|(i, _)| {
        let before = sql[..i].chars().next_back();
        let after = sql[i + name.len()..].trim_start().chars().next();
        !before.is_some_and(ident) && after == Some('(')
    })
}

#[test]
fn every_function_has_a_runnable_example() {
    let sql: String = doc_examples(REFERENCE).iter().map(|e| e.sql.as_str()).collect::<Vec<_>>().join("\n");
    let missing: Vec<&str> = cmp::function_names().into_iter().filter(|n| !calls(&sql, n)).collect();
    assert!(missing.is_empty(), "no ```sql example in {REFERENCE} calls: {missing:?}");
}

/// The `### ` sections of a document: (heading, body up to the next `## ` or `### ` heading).
fn sections(md: &str) -> Vec<(&str, String)> {
    let mut out: Vec<(&str, String)> = Vec::new();
    for line in md.lines() {
        if let Some(h) = line.strip_prefix("### ") {
            out.push((h, String::new()));
        } else if line.starts_with("## ") || line.starts_with("# ") {
            out.push(("", String::new()));
        } else if let Some((_, body)) = out.last_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    out.retain(|(h, _)| !h.is_empty());
    out
}

/// The section of the reference about function `name`: the one whose heading calls it.
fn section_of(md: &str, name: &str) -> Option<String> {
    sections(md).into_iter().find(|(h, _)| calls(h, name)).map(|(h, body)| format!("{h}\n{body}"))
}

#[test]
fn every_function_has_a_section_and_a_row_in_the_reference() {
    let md = read(REFERENCE);
    for name in cmp::function_names() {
        assert!(section_of(&md, name).is_some(), "{REFERENCE} has no `### {name}(...)` section");
        let row = format!("| `{name}(");
        assert!(md.lines().any(|l| l.starts_with(&row)), "{REFERENCE}: the function table has no row {row}...");
    }
}

/// The keys an error message lists after `(accepted: `.
fn accepted(msg: &str) -> Vec<String> {
    let list = msg.split("(accepted: ").nth(1).and_then(|r| r.split(')').next());
    let list = list.unwrap_or_else(|| panic!("no accepted list in {msg:?}"));
    list.split(", ").map(String::from).collect()
}

#[test]
fn every_option_and_mql_field_is_documented() {
    let conn = Connection::open_in_memory().unwrap();
    cmp::register(&conn).unwrap();
    conn.query_row("SELECT cmp_init()", [], |_| Ok(())).unwrap();
    // (function, a call with an unknown key: its error lists the keys the function accepts).
    let probes = [
        ("cmp_search", r#"SELECT * FROM cmp_search('x', '{"zz":1}')"#),
        ("cmp_items", r#"SELECT * FROM cmp_items('x', NULL, NULL, '{"zz":1}')"#),
        ("cmp_context", r#"SELECT cmp_context('x', NULL, NULL, NULL, '{"zz":1}')"#),
        ("cmp_expand", r#"SELECT cmp_expand('mem_000000000000', 'document', '{"zz":1}')"#),
        ("cmp_session", r#"SELECT cmp_session('s', '{"zz":1}')"#),
        ("cmp_session_reset", r#"SELECT cmp_session_reset('s', '{"zz":1}')"#),
        ("cmp_query", r#"SELECT cmp_query('{"find":"x","zz":1}')"#),
    ];
    let md = read(REFERENCE);
    for (name, sql) in probes {
        let msg = run(&conn, sql).expect_err(sql).to_string();
        let section = section_of(&md, name).unwrap_or_else(|| panic!("{REFERENCE} has no section for {name}"));
        for key in accepted(&msg) {
            assert!(section.contains(&format!("`{key}`")), "{REFERENCE}, section {name}: `{key}` is not described");
        }
    }
}

#[test]
fn function_names_lists_every_registered_function() {
    let conn = Connection::open_in_memory().unwrap();
    cmp::register(&conn).unwrap();
    let mut registered: Vec<String> = conn
        .prepare(
            "SELECT name FROM pragma_function_list WHERE name LIKE 'cmp\\_%' ESCAPE '\\'
             UNION SELECT name FROM pragma_module_list WHERE name LIKE 'cmp\\_%' ESCAPE '\\'
             ORDER BY 1",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    registered.dedup();
    let mut listed: Vec<String> = cmp::function_names().into_iter().map(String::from).collect();
    listed.sort();
    assert_eq!(listed, registered);
}

#[test]
fn the_runner_understands_its_conventions() {
    let body = [
        "-- a comment first",
        "SELECT 1;",
        "-- => 1",
        "SELECT 'a;b',",
        "       2;",
        "-- => a;b",
        "SELECT 'x' || char(10) || 'y';",
        "-- => x",
        "-- => y",
        "SELECT nope();",
        "-- error: no such function",
        "CREATE TRIGGER t AFTER INSERT ON x BEGIN",
        "  SELECT 1;",
        "END;",
        "-- trailing comment",
    ];
    let ex = examples("test", 10, &body);
    let got: Vec<(usize, Expect)> = ex.iter().map(|e| (e.line, e.expect.clone())).collect();
    assert_eq!(
        got,
        [
            (10, Expect::Value("1".into())),
            (13, Expect::Value("a;b".into())),
            (16, Expect::Value("x\ny".into())),
            (19, Expect::Error("no such function".into())),
            (21, Expect::Ok),
        ]
    );
    assert!(calls("SELECT cmp_session_reset('s')", "cmp_session_reset"));
    assert!(!calls("SELECT cmp_session_reset('s')", "cmp_session"));
    assert!(calls("FROM cmp_search ('x')", "cmp_search"));
    assert!(!calls("-- see cmp_search", "cmp_search"));
    let md = "## A\n### cmp_session(s) and cmp_session_reset(s)\nbody `scope`\n#### sub\nmore\n## B\nafter\n";
    assert_eq!(
        sections(md),
        [("cmp_session(s) and cmp_session_reset(s)", "body `scope`\n#### sub\nmore\n".to_string())]
    );
    assert!(section_of(md, "cmp_session_reset").is_some_and(|s| s.contains("more") && !s.contains("after")));
    assert!(section_of(md, "cmp_search").is_none());
    assert_eq!(accepted("f: unknown option \"zz\" (accepted: now, scope)"), ["now", "scope"]);
    let conn = Connection::open_in_memory().unwrap();
    assert_eq!(run(&conn, "SELECT 0.5").unwrap().as_deref(), Some("0.5"));
    assert_eq!(run(&conn, "SELECT NULL").unwrap().as_deref(), Some("NULL"));
    assert_eq!(run(&conn, "SELECT 1 WHERE 0").unwrap(), None);
}

#[test]
#[should_panic(expected = "right after a complete statement")]
fn an_annotation_must_follow_a_statement() {
    examples("test", 1, &["SELECT 1;", "", "-- => 1"]);
}
