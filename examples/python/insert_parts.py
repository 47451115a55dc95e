"""Where a row-by-row bulk load into `cmp_memories` goes: the load of the real-text speed issue
(`speed_check.py`'s rows and statement, one `executemany` in one transaction into a fresh WAL
database), repeated with cmp's schema taken apart one piece at a time, against a plain FTS5 table.

    cargo build --release --features loadable_extension
    /usr/bin/python3 examples/python/insert_parts.py [--rows 100000] [--rounds 3] [--cache-mb N]

Variants (each `DROP` applied after `cmp_init()`):
  plain FTS5 table       the floor: `CREATE VIRTUAL TABLE plain USING fts5(content)`, content only
  cmp_memories           the schema as shipped
  - conflict trigger     without `cmp_memories_bi_conflict` (what REPLACE needs)
  - insert triggers      also without the queue trigger and the NULL-id trigger
  - secondary indexes    also without the scope/time, hard-rule and supersession indexes: the row
                         table with its unique `id` index alone
  16 columns, no index   a table of the same columns and defaults, `id` not unique: nothing but rows
  one text column        `CREATE TABLE t(content TEXT)`, content only: what a row costs at all
Prints rows/s (median of the rounds) and × the plain FTS5 table; the rounds alternate the variants.
"""
import argparse
import os
import shutil
import sqlite3
import statistics
import tempfile

import speed_check

COLUMNS = speed_check.COLUMNS
CMP_INSERT = f"INSERT INTO cmp_memories{COLUMNS} VALUES (?, ?, ?, ?)"
CONFLICT = ["TRIGGER cmp_memories_bi_conflict"]
TRIGGERS = CONFLICT + ["TRIGGER cmp_memories_ai", "TRIGGER cmp_memories_ai_id"]
INDEXES = TRIGGERS + ["INDEX cmp_memories_scope_time", "INDEX cmp_memories_rules",
                      "INDEX cmp_memories_superseded_by"]
def cmp_without(drops):
    def setup(c):
        c.execute("SELECT cmp_init()").fetchall()
        for what in drops:
            c.execute(f"DROP {what}")
    return setup


def ddl(sql):
    return lambda c: c.execute(sql)


def bare_rows(c):
    """A table `m` with cmp_memories' columns, defaults and checks as `cmp_init()` creates them, its
    `id` not unique: nothing but the rows."""
    c.execute("SELECT cmp_init()").fetchall()
    (sql,) = c.execute("SELECT sql FROM sqlite_master WHERE name = 'cmp_memories'").fetchone()
    bare = sql.replace("CREATE TABLE cmp_memories(", "CREATE TABLE m(", 1).replace(" UNIQUE ", " ", 1)
    assert bare != sql and "UNIQUE" not in bare, "cmp_memories' definition changed: update bare_rows"
    c.execute(bare)


def content_only(rs):
    return [(r[0],) for r in rs]


# name: (setup, statement, row shape)
VARIANTS = {
    "plain FTS5 table": (ddl("CREATE VIRTUAL TABLE plain USING fts5(content)"),
                         "INSERT INTO plain(content) VALUES (?)", content_only),
    "cmp_memories": (cmp_without([]), CMP_INSERT, list),
    "- conflict trigger": (cmp_without(CONFLICT), CMP_INSERT, list),
    "- insert triggers": (cmp_without(TRIGGERS), CMP_INSERT, list),
    "- secondary indexes": (cmp_without(INDEXES), CMP_INSERT, list),
    "16 columns, no index": (bare_rows, f"INSERT INTO m{COLUMNS} VALUES (?, ?, ?, ?)", list),
    "one text column": (ddl("CREATE TABLE t(content TEXT)"), "INSERT INTO t(content) VALUES (?)",
                        content_only),
}


def load(rs, args, setup, statement):
    """Rows per second of one `executemany` in one transaction into a fresh database."""
    tmp = tempfile.mkdtemp(prefix="cmp-insert-")
    try:
        c = speed_check.connect(os.path.join(tmp, "x.db"), args)
        setup(c)
        secs = speed_check.timed(c, lambda: c.executemany(statement, rs))
        c.close()
        return len(rs) / secs
    finally:
        shutil.rmtree(tmp)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cache-mb", type=int, default=0)
    ap.add_argument("--lib", default=speed_check.LIB)
    args = ap.parse_args()
    args.wal, args.synchronous = True, None
    rs = speed_check.rows(args.rows)
    rates = {name: [] for name in VARIANTS}
    for _ in range(args.rounds):
        for name, (setup, statement, shape) in VARIANTS.items():
            rates[name].append(load(shape(rs), args, setup, statement))
    floor = statistics.median(rates["plain FTS5 table"])
    cache = f"cache_size {args.cache_mb} MB" if args.cache_mb else "default cache_size"
    print(f"{args.rows} rows, one transaction, WAL, {cache}, {args.rounds} rounds (median, range)\n")
    print("| variant | rows/s | × plain FTS5 | range × plain |")
    print("|---|---|---|---|")
    for name, rs_ in rates.items():
        med = statistics.median(rs_)
        print(f"| {name} | {med:,.0f} | {med / floor:.2f} | "
              f"{min(rs_) / floor:.2f}–{max(rs_) / floor:.2f} |")


if __name__ == "__main__":
    main()
