"""Runs tests/hosts/script.sql through Python's sqlite3 module with the loadable extension and prints
one line per result row, as the sqlite3 shell does in list mode (`|` between columns, NULL as `NULL`);
a failing statement prints `error: <message>` and the run goes on. tests/hosts/run.sh compares the
output with tests/hosts/expected.txt.

Usage, from the repository root: /usr/bin/python3 tests/hosts/run.py [SCRIPT]

Needs a Python whose sqlite3 module can load extensions: Debian's /usr/bin/python3 can; interpreters
built by pyenv usually cannot (no enable_load_extension).
"""

import pathlib
import sqlite3
import sys

SETTINGS = {".mode list", ".separator |", ".headers off", ".nullvalue NULL", ".bail off"}


def statements(text):
    """(line number, dot-command or SQL) in order: one statement ends at a line ending with `;`."""
    pending, start = [], 0
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("--")):
            continue
        if not pending and stripped.startswith("."):
            yield number, stripped
            continue
        if not pending:
            start = number
        pending.append(line)
        if stripped.endswith(";"):
            yield start, "\n".join(pending)
            pending = []
    if pending:
        raise SystemExit(f"line {start}: statement does not end with ';'")


def render(conn, value):
    if value is None:
        return "NULL"
    if isinstance(value, float):
        # SQLite's own real-to-text conversion, as the shell prints reals.
        return conn.execute("SELECT CAST(? AS TEXT)", (value,)).fetchone()[0]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def main():
    script = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "tests/hosts/script.sql")
    conn = sqlite3.connect(":memory:", isolation_level=None)
    if not hasattr(conn, "enable_load_extension"):
        raise SystemExit("this Python's sqlite3 cannot load extensions; use /usr/bin/python3")
    for number, stmt in statements(script.read_text(encoding="utf-8")):
        if stmt.startswith("."):
            if stmt.startswith(".load "):
                conn.enable_load_extension(True)
                conn.load_extension(stmt.split(None, 1)[1])
                conn.enable_load_extension(False)
            elif stmt not in SETTINGS:
                raise SystemExit(f"{script}:{number}: unsupported dot-command {stmt!r}")
            continue
        try:
            rows = conn.execute(stmt).fetchall()
        except sqlite3.Error as e:
            print(f"error: {e}")
            continue
        for row in rows:
            print("|".join(render(conn, v) for v in row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
