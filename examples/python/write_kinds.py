"""What each kind of write costs, and the flush after it: 20,000 rows of 20 random words (every tenth
with an entity) inserted row by row in one transaction, then 5,000 of them updated one by one, 5,000
deleted one by one, and the rest deleted in one statement, each followed by `cmp_flush()`. Run it with
two builds of the library to compare them (session 31: schema 7, whose triggers removed a changed
row's full-text entries at once, against schema 8, whose flush removes them).

    cargo build --release --features loadable_extension
    /usr/bin/python3 examples/python/write_kinds.py [--lib target/release/libcmp.so] [--rounds 3]

Prints the median seconds of each step over the rounds (WAL, synchronous=NORMAL, a fresh file each
round).
"""
import argparse
import os
import random
import sqlite3
import statistics
import tempfile
import time

ROWS = 20_000


def one_round(lib, path):
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.enable_load_extension(True)
    conn.load_extension(lib)
    conn.execute("PRAGMA journal_mode = wal")
    conn.execute("PRAGMA synchronous = normal")
    conn.execute("SELECT cmp_init()")
    rnd = random.Random(1)
    words = [f"w{i}" for i in range(5000)]
    rows = [(" ".join(rnd.choices(words, k=20)), '["Atlas"]' if i % 10 == 0 else None) for i in range(ROWS)]

    def insert():
        conn.execute("BEGIN")
        conn.executemany("INSERT INTO cmp_memories(content, entities) VALUES (?, ?)", rows)
        conn.execute("COMMIT")

    def update():
        conn.execute("BEGIN")
        for rid in range(1, ROWS + 1, 4):
            conn.execute("UPDATE cmp_memories SET content = content || ' x' WHERE rid = ?", (rid,))
        conn.execute("COMMIT")

    def delete():
        conn.execute("BEGIN")
        for rid in range(2, ROWS + 1, 4):
            conn.execute("DELETE FROM cmp_memories WHERE rid = ?", (rid,))
        conn.execute("COMMIT")

    def flush():
        conn.execute("SELECT cmp_flush()").fetchone()

    steps = [
        ("insert 20,000 rows one by one, one transaction", insert),
        ("update 5,000 rows one by one, one transaction", update),
        ("delete 5,000 rows one by one, one transaction", delete),
        ("delete the other 10,000 in one statement", lambda: conn.execute("DELETE FROM cmp_memories")),
    ]
    out = []
    for name, step in steps:
        for label, f in [(name, step), ("  then cmp_flush()", flush)]:
            t0 = time.perf_counter()
            f()
            out.append((label, time.perf_counter() - t0))
    conn.close()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default="target/release/libcmp.so")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        runs = [one_round(os.path.abspath(args.lib), os.path.join(tmp, "w.db")) for _ in range(args.rounds)]
    for i, (label, _) in enumerate(runs[0]):
        print(f"{label:48} {statistics.median(r[i][1] for r in runs):.3f} s")


main()
