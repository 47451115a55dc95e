//! The Rust host of `tests/hosts/`: runs `tests/hosts/script.sql` on a bundled in-memory connection
//! with `cmp::register` (in place of the script's `.load`) and checks that the output equals
//! `tests/hosts/expected.txt`, the file the sqlite3 shell, Python and Node outputs are compared with by
//! `tests/hosts/run.sh`. Output rules, as every runner applies them: one line per result row, columns
//! joined by `|`, NULL as `NULL`, reals as SQLite converts them to text; a failing statement prints
//! `error: <message>`.
//!
//! `CMP_HOSTS_PRINT=1 cargo test --test hosts -- --nocapture` prints this host's output;
//! `CMP_HOSTS_UPDATE=1 cargo test --test hosts` rewrites expected.txt from it (then run
//! `tests/hosts/run.sh` to see whether the other hosts agree; `run.sh --update` takes the shell's).

use rusqlite::types::ValueRef;
use rusqlite::Connection;
use std::path::PathBuf;

/// Dot-commands the runners accept: `.load` (here: `cmp::register`) and output settings that are what
/// every runner prints anyway.
const SETTINGS: &[&str] = &[".mode list", ".separator |", ".headers off", ".nullvalue NULL", ".bail off"];

fn hosts_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests").join("hosts")
}

/// One item of the script: (1-based line, a dot-command or one SQL statement).
fn statements(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut pending: Vec<&str> = Vec::new();
    let mut start = 0;
    for (i, line) in text.lines().enumerate() {
        let stripped = line.trim();
        if pending.is_empty() && (stripped.is_empty() || stripped.starts_with("--")) {
            continue;
        }
        if pending.is_empty() && stripped.starts_with('.') {
            out.push((i + 1, stripped.to_string()));
            continue;
        }
        if pending.is_empty() {
            start = i + 1;
        }
        pending.push(line);
        if stripped.ends_with(';') {
            out.push((start, pending.join("\n")));
            pending.clear();
        }
    }
    assert!(pending.is_empty(), "script.sql:{start}: statement does not end with ';'");
    out
}

fn render(conn: &Connection, v: ValueRef<'_>) -> String {
    match v {
        ValueRef::Null => "NULL".into(),
        ValueRef::Integer(i) => i.to_string(),
        // SQLite's own real-to-text conversion, as the shell prints reals.
        ValueRef::Real(f) => conn.query_row("SELECT CAST(?1 AS TEXT)", [f], |r| r.get(0)).unwrap(),
        ValueRef::Text(t) | ValueRef::Blob(t) => String::from_utf8_lossy(t).into_owned(),
    }
}

fn message(e: rusqlite::Error) -> String {
    match e {
        rusqlite::Error::SqliteFailure(_, Some(m)) => m,
        e => e.to_string(),
    }
}

/// Runs one statement: its rows as lines, or `error: <message>`.
fn run_statement(conn: &Connection, sql: &str) -> Vec<String> {
    let result = (|| -> rusqlite::Result<Vec<String>> {
        let mut st = conn.prepare(sql)?;
        let n = st.column_count();
        let mut rows = st.query([])?;
        let mut lines = Vec::new();
        while let Some(row) = rows.next()? {
            let cols: Vec<String> = (0..n).map(|i| render(conn, row.get_ref(i).unwrap())).collect();
            lines.push(cols.join("|"));
        }
        Ok(lines)
    })();
    result.unwrap_or_else(|e| vec![format!("error: {}", message(e))])
}

/// The script's output on a registered bundled connection, and the number of SQL statements.
fn run_script() -> (Vec<String>, usize) {
    let text = std::fs::read_to_string(hosts_dir().join("script.sql")).expect("read tests/hosts/script.sql");
    let conn = Connection::open_in_memory().unwrap();
    let mut out = Vec::new();
    let mut sql_statements = 0;
    let mut loaded = false;
    for (line, stmt) in statements(&text) {
        if stmt.starts_with('.') {
            if stmt.starts_with(".load ") {
                cmp::register(&conn).expect("cmp::register");
                loaded = true;
            } else {
                assert!(SETTINGS.contains(&stmt.as_str()), "script.sql:{line}: unsupported dot-command {stmt}");
            }
            continue;
        }
        assert!(loaded, "script.sql:{line}: a statement before `.load`");
        sql_statements += 1;
        out.extend(run_statement(&conn, &stmt));
    }
    (out, sql_statements)
}

#[test]
fn script_output_equals_expected() {
    let (got, _) = run_script();
    if std::env::var_os("CMP_HOSTS_PRINT").is_some() {
        for l in &got {
            println!("{l}");
        }
    }
    let path = hosts_dir().join("expected.txt");
    if std::env::var_os("CMP_HOSTS_UPDATE").is_some() {
        std::fs::write(&path, got.iter().map(|l| format!("{l}\n")).collect::<String>()).expect("write expected.txt");
    }
    let expected = std::fs::read_to_string(&path).expect("read tests/hosts/expected.txt");
    let want: Vec<&str> = expected.lines().collect();
    let mut diffs = Vec::new();
    for i in 0..want.len().max(got.len()) {
        let (w, g) = (want.get(i).copied(), got.get(i).map(String::as_str));
        if w != g {
            diffs.push(format!(
                "line {}:\n  expected: {}\n  got:      {}",
                i + 1,
                w.unwrap_or("<no line>"),
                g.unwrap_or("<no line>")
            ));
        }
    }
    let sqlite = rusqlite::version();
    assert!(diffs.is_empty(), "Rust host (bundled SQLite {sqlite}) differs from expected.txt:\n{}", diffs.join("\n"));
}

/// The script's own rule, which keeps the expected file readable: every statement prints exactly one
/// line (a row or an error), and that line starts with a label.
#[test]
fn every_statement_prints_one_line() {
    let (got, n) = run_script();
    assert_eq!(got.len(), n, "script.sql has {n} statements but printed {} lines", got.len());
    for l in &got {
        assert!(!l.starts_with('|') && !l.is_empty(), "a line without a label: {l:?}");
    }
}

#[test]
fn statements_split_one_per_line_and_across_lines() {
    let s = statements(".load x\n-- c\nSELECT 1;\n\nSELECT\n  2;\n.mode list\n");
    assert_eq!(
        s,
        vec![
            (1, ".load x".to_string()),
            (3, "SELECT 1;".to_string()),
            (5, "SELECT\n  2;".to_string()),
            (7, ".mode list".to_string())
        ]
    );
}
