"""Runs tests/smoke.sql through Python's sqlite3 module with the loadable extension, the way an
application would, and compares the output with tests/smoke.expected.

Usage: /usr/bin/python3 tests/smoke.py [--print]   (from the repository root)

Prints the output lines (the same format as the sqlite3 shell in list mode: `|` between columns, NULL
as `NULL`) and exits 1 when they differ from the expected lines, 2 when a statement fails. Dot-commands
are read as the shell would: `.load PATH` loads the extension; the output settings (.mode list,
.separator |, .headers off, .nullvalue NULL) are what this script prints anyway; .bail is implied.
Needs a Python whose sqlite3 module can load extensions (Debian's /usr/bin/python3 can; pyenv builds
usually cannot).
"""

import pathlib
import sqlite3
import sys

HERE = pathlib.Path(__file__).resolve().parent
SQL = HERE / "smoke.sql"
EXPECTED = HERE / "smoke.expected"
KNOWN_SETTINGS = {".bail on", ".mode list", ".separator |", ".headers off", ".nullvalue NULL"}


def render(conn, value):
    if value is None:
        return "NULL"
    if isinstance(value, float):
        # SQLite's own real-to-text conversion, as the shell prints reals.
        return conn.execute("SELECT CAST(? AS TEXT)", (value,)).fetchone()[0]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def run(conn):
    out = []
    pending = ""
    for number, line in enumerate(SQL.read_text(encoding="utf-8").splitlines(), 1):
        if not pending.strip() and (not line.strip() or line.lstrip().startswith("--")):
            continue
        if not pending.strip() and line.startswith("."):
            command = line.strip()
            if command.startswith(".load "):
                conn.enable_load_extension(True)
                conn.load_extension(command.split(None, 1)[1])
                conn.enable_load_extension(False)
            elif command not in KNOWN_SETTINGS:
                raise SystemExit(f"smoke.sql:{number}: unsupported dot-command {command!r}")
            continue
        pending += line + "\n"
        if sqlite3.complete_statement(pending):
            try:
                rows = conn.execute(pending).fetchall()
            except sqlite3.Error as e:
                print(f"smoke.sql:{number}: {e}\n{pending}", file=sys.stderr)
                sys.exit(2)
            out.extend("|".join(render(conn, v) for v in row) for row in rows)
            pending = ""
    return out


def main():
    conn = sqlite3.connect(":memory:", isolation_level=None)
    if not hasattr(conn, "enable_load_extension"):
        raise SystemExit("this Python's sqlite3 cannot load extensions; use /usr/bin/python3")
    got = run(conn)
    print("\n".join(got))
    if "--print" in sys.argv:
        return 0
    want = EXPECTED.read_text(encoding="utf-8").splitlines()
    bad = [i for i in range(max(len(got), len(want))) if i >= len(got) or i >= len(want) or got[i] != want[i]]
    for i in bad:
        print(
            f"smoke.py: line {i + 1}: expected {want[i] if i < len(want) else '<none>'!r}, "
            f"got {got[i] if i < len(got) else '<none>'!r}",
            file=sys.stderr,
        )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
