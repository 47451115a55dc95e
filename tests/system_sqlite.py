"""Checks the loadable extension against the system's SQLite library, where its behaviour differs from
the bundled SQLite that `cargo test` runs on (Debian 12 ships 3.40.1):

1. In WAL mode, a write that a constraint refuses leaves its connection reading the database as it is:
   another connection's later write is seen by the next read. (SQLite 3.40's FTS5 kept an old snapshot
   open when a refused statement had written a full-text index from a trigger, which schema 7 did; since
   schema 8 no trigger writes one.)
2. With `PRAGMA trusted_schema = OFF`, every kind of write to `cmp_memories` works, from a connection
   with the extension and from one without it, and reads find what was written. (SQLite 3.40 refuses a
   trigger that writes an FTS5 table or calls a JSON function under that setting.)
3. After both, the full-text indexes agree with their content views.

Usage: /usr/bin/python3 tests/system_sqlite.py [LIBRARY]   (from the repository root; LIBRARY defaults
to target/release/libcmp.so). Prints one line per check and exits 1 when one fails.
"""

import os
import pathlib
import sqlite3
import sys
import tempfile

LIB = sys.argv[1] if len(sys.argv) > 1 else str(pathlib.Path("target/release/libcmp.so").resolve())
failed = []


def connect(path, ext=True):
    conn = sqlite3.connect(path, isolation_level=None)
    if ext:
        conn.enable_load_extension(True)
        conn.load_extension(LIB)
    return conn


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + (f" ({detail})" if detail and not ok else ""))
    if not ok:
        failed.append(name)


def one(conn, sql, *args):
    return conn.execute(sql, args).fetchone()[0]


def refused_write_keeps_no_old_snapshot(path):
    a = connect(path)
    a.execute("PRAGMA journal_mode = wal")
    one(a, "SELECT cmp_init()")
    b = connect(path)
    a.execute("INSERT INTO cmp_memories(id, content) VALUES ('mem_000000000001', 'Atlas ships on Friday')")
    one(a, "SELECT cmp_flush()")
    for sql in [
        "INSERT INTO cmp_memories(id, content) VALUES ('mem_000000000001', 'a duplicate id')",
        "UPDATE cmp_memories SET id = 'mem_000000000002' WHERE rid = (SELECT max(rid) FROM cmp_memories)",
    ]:
        try:
            a.execute(sql)
        except sqlite3.IntegrityError:
            pass
        b.execute("INSERT INTO cmp_memories(content) VALUES ('written by another connection')")
        want = one(b, "SELECT count(*) FROM cmp_memories")
        got = one(a, "SELECT count(*) FROM cmp_memories")
        check(f"WAL: a refused write ({sql[:30]}…) leaves its connection's next read current",
              got == want, f"it read {got} rows of {want}")
        # The second statement needs a row with id mem_000000000002 to conflict with.
        b.execute("INSERT OR IGNORE INTO cmp_memories(id, content) VALUES ('mem_000000000002', 'Dana signs off')")
    a.close()
    b.close()


def trusted_schema_off_allows_writes(path):
    ext = connect(path)
    one(ext, "SELECT cmp_init()")
    plain = connect(path, ext=False)
    for conn, who in [(ext, "with cmp"), (plain, "without cmp")]:
        conn.execute("PRAGMA trusted_schema = OFF")
        writes = [
            "INSERT INTO cmp_memories(content, entities, captured_at) "
            "VALUES ('Heron pilot 北京出差', '[\"Heron\"]', '2024-01-01T00:00:00Z')",
            "INSERT INTO cmp_memories(id, content, captured_at) VALUES (NULL, 'Orion in Berlin', '2024-01-01T00:00:00Z')",
            "UPDATE cmp_memories SET content = 'Heron pilot in May' WHERE content LIKE 'Heron%'",
            "REPLACE INTO cmp_memories(rid, content, captured_at) "
            "SELECT rid, 'Orion moved to Lisbon', '2024-01-01T00:00:00Z' FROM cmp_memories WHERE content LIKE 'Orion%'",
            "UPDATE cmp_memories SET redacted = 1 WHERE content LIKE 'Orion%'",
            "DELETE FROM cmp_memories WHERE content LIKE 'Orion%'",
        ]
        errors = []
        for sql in writes:
            try:
                conn.execute(sql)
            except sqlite3.Error as e:
                errors.append(f"{sql[:40]}…: {e}")
        check(f"trusted_schema = OFF: inserts, updates, REPLACE, redaction and deletes {who}", not errors,
              "; ".join(errors))
    ext.execute("PRAGMA trusted_schema = OFF")
    found = one(ext, "SELECT count(*) FROM cmp_search('heron pilot may', '{\"now\":\"2025-01-01T00:00:00Z\"}')")
    check("trusted_schema = OFF: a read indexes the writes and finds them", found >= 1, f"{found} hits")
    lisbon = one(ext, "SELECT count(*) FROM cmp_search('lisbon', '{\"now\":\"2025-01-01T00:00:00Z\"}')")
    check("trusted_schema = OFF: a deleted row is not found", lisbon == 0, f"{lisbon} hits")
    ext.close()
    plain.close()


def indexes_agree(path):
    conn = connect(path)
    errors = []
    for index in ["cmp_memories_fts", "cmp_memories_ngram"]:
        try:
            conn.execute(f"INSERT INTO {index}({index}, rank) VALUES ('integrity-check', 1)")
        except sqlite3.Error as e:
            errors.append(f"{index}: {e}")
    check("the full-text indexes agree with their content views", not errors, "; ".join(errors))
    conn.close()


def main():
    print(f"SQLite {sqlite3.sqlite_version}, {LIB}")
    with tempfile.TemporaryDirectory() as tmp:
        refused_write_keeps_no_old_snapshot(os.path.join(tmp, "wal.db"))
        indexes_agree(os.path.join(tmp, "wal.db"))
        trusted_schema_off_allows_writes(os.path.join(tmp, "trusted.db"))
        indexes_agree(os.path.join(tmp, "trusted.db"))
    if failed:
        print(f"{len(failed)} failed")
        sys.exit(1)


main()
