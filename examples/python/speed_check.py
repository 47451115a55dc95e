"""The speed check of the real-text speed issue, as a new user runs it: Python's own sqlite3 module
(the system SQLite), 100,000 rows of real text inserted with `executemany` in one transaction, then
LoCoMo questions as tasks. Written apart from `examples/bench.rs` (which reuses cmp's own query
analysis for its floor) so that the two can check each other.

    cargo build --release --features loadable_extension
    /usr/bin/python3 examples/python/speed_check.py [--rows 100000] [--tasks 150] [--wal] [--cache-mb N]
        [--synchronous normal] [--db PATH] [--lib PATH]

The rows: every LoCoMo turn and realtalk-dev message (`Speaker: text`, episodic, the speaker as
entity), then MSC persona facts (semantic), cycled with a numbered suffix up to `--rows`. Insert
rates: `cmp_memories` (content, kind, entities, captured_at; ids generated) against a plain FTS5
table of the same texts, one `executemany` per table in one transaction each, and the same rows
staged in a temporary table and copied with one `INSERT … SELECT`; each into a fresh database.
Queries: the floor is the plain FTS5 table queried with the OR of the task's words, BM25 order, 200
rows read: every word (what the issue describes), and the content words only (the stopwords cmp
drops, read from `src/text.rs`: the floor `examples/bench.rs` uses). Both run right before each cmp
call, and every profile is timed over the same tasks, none of which its warm-up asked. A session turn
is also timed paired with the same call without a session (both on every task, in alternating order),
the measure the issue's session target names. Prints markdown tables.
`/usr/bin/python3` is used because the default pyenv build cannot load extensions.
"""
import argparse
import glob
import json
import os
import random
import re
import sqlite3
import statistics
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "..", "shared", "data")
LIB = os.path.join(ROOT, "target", "release", "libcmp")
NOW = '{"now":"2024-06-01T00:00:00Z"}'


def texts():
    """(content, kind, speaker) of every real sentence, in a fixed order."""
    out = []
    for conv in json.load(open(os.path.join(DATA, "locomo10.json"))):
        for key, turns in conv["conversation"].items():
            if key.startswith("session_") and isinstance(turns, list):
                out += [(f"{t['speaker']}: {t['text']}", "episodic", t["speaker"]) for t in turns]
    for path in sorted(glob.glob(os.path.join(DATA, "realtalk-dev", "*.json"))):
        for key, turns in json.load(open(path)).items():
            if re.fullmatch(r"session_\d+", key):
                out += [(f"{t['speaker']}: {t['clean_text']}", "episodic", t["speaker"]) for t in turns]
    for split in json.load(open(os.path.join(DATA, "msc_personas_all.json"))).values():
        for conv in split:
            for side in ("Speaker 1", "Speaker 2"):
                out += [(s, "semantic", None) for s in conv.get(side, [])]
    return out


def rows(n):
    base = texts()
    out = []
    for i in range(n):
        content, kind, speaker = base[i % len(base)]
        if i >= len(base):
            content = f"{content} #{i // len(base)}"
        when = "2023-%02d-%02dT%02d:%02d:00Z" % (1 + i * 12 // n, 1 + i % 28, i % 24, i % 60)
        out.append((content, kind, json.dumps([speaker]) if speaker else None, when))
    return out


def connect(path, args):
    c = sqlite3.connect(path, isolation_level=None)
    c.enable_load_extension(True)
    c.load_extension(args.lib)
    if args.wal:
        c.execute("PRAGMA journal_mode=WAL")
    if args.cache_mb:
        c.execute(f"PRAGMA cache_size=-{args.cache_mb * 1024}")
    if args.synchronous:
        c.execute(f"PRAGMA synchronous={args.synchronous}")
    c.execute("SELECT cmp_init()").fetchall()
    return c


def timed(c, run):
    """Seconds `run()` takes in one transaction of `c`."""
    t = time.perf_counter()
    c.execute("BEGIN")
    run()
    c.execute("COMMIT")
    return time.perf_counter() - t


COLUMNS = "(content, kind, entities, captured_at)"
# Per table: the statement of one row, and the copy of the staged rows.
INSERTS = {
    "cmp": (f"INSERT INTO cmp_memories{COLUMNS} VALUES (?, ?, ?, ?)",
            f"INSERT INTO cmp_memories{COLUMNS} SELECT * FROM stage ORDER BY rowid"),
    "plain": ("INSERT INTO plain(content) VALUES (?)",
              "INSERT INTO plain(content) SELECT content FROM stage ORDER BY rowid"),
}


def params(table, rs):
    return rs if table == "cmp" else [(r[0],) for r in rs]


def create(c, table):
    if table == "plain":
        c.execute("CREATE VIRTUAL TABLE plain USING fts5(content)")


def insert_rates(rs, args, tmp):
    """{way: {"cmp": rows/s, "plain": rows/s, "flush": seconds of cmp_flush() after the cmp load}},
    each load into a fresh database."""
    out = {}
    for way, staged in (("row by row", False), ("INSERT … SELECT", True)):
        rates = {}
        for table, (one, copy) in INSERTS.items():
            c = connect(os.path.join(tmp, f"{table}-{int(staged)}.db"), args)
            create(c, table)
            if staged:
                c.execute(f"CREATE TEMP TABLE stage{COLUMNS}")
                c.executemany("INSERT INTO stage VALUES (?, ?, ?, ?)", rs)
                secs = timed(c, lambda: c.execute(copy))
            else:
                secs = timed(c, lambda: c.executemany(one, params(table, rs)))
            rates[table] = len(rs) / secs
            if table == "cmp":
                t = time.perf_counter()
                c.execute("SELECT cmp_flush()").fetchall()
                rates["flush"] = time.perf_counter() - t
            c.close()
        out[way] = rates
    return out


def build_store(path, rs, args):
    if os.path.exists(path):
        return
    c = connect(path, args)
    for table, (one, _) in INSERTS.items():
        create(c, table)
        timed(c, lambda: c.executemany(one, params(table, rs)))
    c.execute("SELECT cmp_flush()").fetchall()
    c.close()


def stopwords():
    """The stopwords cmp drops from a task (read from src/text.rs, so both floors use cmp's list)."""
    src = open(os.path.join(ROOT, "src", "text.rs")).read()
    body = src.split("const STOPWORDS: &[&str] = &[", 1)[1].split("];", 1)[0]
    return set(re.findall(r'"([^"]*)"', body))


STOP = stopwords()


def floor(c, task, content_words):
    """The plain table's top 200 for the OR of the task's words (all of them, or without stopwords)."""
    words = re.findall(r"\w+", task.lower())
    if content_words:
        words = list(dict.fromkeys(w for w in words if w not in STOP))
    if words:
        q = " OR ".join('"%s"' % w for w in words)
        c.execute("SELECT rowid, content FROM plain WHERE plain MATCH ? ORDER BY rank LIMIT 200", (q,)).fetchall()


def steps(c):
    ctx = "SELECT cmp_context(?, ?, NULL, ?, ?)"
    return {
        "cmp_search": lambda t: c.execute("SELECT count(*) FROM cmp_search(?, ?)", (t, NOW)).fetchall(),
        "cmp_context generic": lambda t: c.execute(ctx, (t, None, None, NOW)).fetchall(),
        "cmp_context claude": lambda t: c.execute(ctx, (t, "claude", None, NOW)).fetchall(),
        "cmp_context gpt": lambda t: c.execute(ctx, (t, "gpt-4o", None, NOW)).fetchall(),
        "cmp_context cursor": lambda t: c.execute(ctx, (t, "cursor", None, NOW)).fetchall(),
        "session turn (generic)": lambda t: c.execute(ctx, (t, None, "speed-check", NOW)).fetchall(),
    }


def main():
    if not os.path.isdir(DATA):
        raise SystemExit(f"speed_check: no data at {DATA} (the real-text corpus reads ../shared/data/)")
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--tasks", type=int, default=150)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--wal", action="store_true", help="journal_mode=WAL on every connection")
    ap.add_argument("--cache-mb", type=int, default=0, help="PRAGMA cache_size for every connection (MiB)")
    ap.add_argument("--synchronous", choices=["off", "normal", "full"], help="PRAGMA synchronous (default: SQLite's)")
    ap.add_argument("--db", help="the query store (built when missing; default: a temporary file)")
    ap.add_argument("--lib", default=LIB, help="the loadable library (default: target/release/libcmp)")
    args = ap.parse_args()
    rs = rows(args.rows)
    questions = [q["question"] for conv in json.load(open(os.path.join(DATA, "locomo10.json"))) for q in conv["qa"]]
    random.Random(7).shuffle(questions)
    warm, tasks = questions[: args.warmup], questions[args.warmup: args.warmup + args.tasks]
    with tempfile.TemporaryDirectory() as tmp:
        rates = insert_rates(rs, args, tmp)
        db = args.db or os.path.join(tmp, "store.db")
        build_store(db, rs, args)
        c = connect(db, args)
        print(f"SQLite {sqlite3.sqlite_version}; {args.rows} rows; {len(tasks)} tasks; "
              f"journal {'WAL' if args.wal else 'rollback'}; cache_size {args.cache_mb or 'default'}; "
              f"synchronous {args.synchronous or 'default'}\n")
        print("| bulk insert, one transaction | cmp_memories rows/s | plain FTS5 rows/s | × plain | cmp_flush() after it |")
        print("|---|---|---|---|---|")
        for name, r in rates.items():
            print(f"| {name} | {r['cmp']:,.0f} | {r['plain']:,.0f} | {r['cmp'] / r['plain']:.2f} | {r['flush']:.2f} s |")
        print("\n| measure | p50 ms | floor, every word: p50 ms | × | floor, content words: p50 ms | × |")
        print("|---|---|---|---|---|---|")
        # A reused store holds the session of an earlier run: every run starts it at its first turn.
        c.execute("SELECT cmp_session_reset('speed-check')").fetchall()
        for name, run in steps(c).items():
            for t in warm:
                floor(c, t, False)
                floor(c, t, True)
                run(t)
            every, content, cm = [], [], []
            for t in tasks:
                a = time.perf_counter()
                floor(c, t, False)
                b = time.perf_counter()
                floor(c, t, True)
                d = time.perf_counter()
                run(t)
                e = time.perf_counter()
                every.append(b - a)
                content.append(d - b)
                cm.append(e - d)
            f1, f2, m = (statistics.median(x) * 1e3 for x in (every, content, cm))
            print(f"| {name} | {m:.2f} | {f1:.2f} | {m / f1:.2f} | {f2:.2f} | {m / f2:.2f} |", flush=True)
        paired_session(c, tasks)
        c.close()


def paired_session(c, tasks):
    """A session turn against the same call without a session, the two run back to back on every
    task, in alternating order (so neither always finds the other's pages cached), under the same
    load: the issue's "a session turn ≤ 1.1× the same call without one"."""
    ctx = "SELECT cmp_context(?, NULL, NULL, ?, ?)"
    sid = "speed-check-paired"
    c.execute("SELECT cmp_session_reset(?)", (sid,)).fetchall()
    times = {None: [], sid: []}
    for k, t in enumerate(tasks):
        for session in ([None, sid] if k % 2 == 0 else [sid, None]):
            a = time.perf_counter()
            c.execute(ctx, (t, session, NOW)).fetchall()
            times[session].append(time.perf_counter() - a)
    plain, turn = (statistics.median(times[s]) * 1e3 for s in (None, sid))
    print("\n| paired, generic | session turn: p50 ms | the same call without a session: p50 ms | × |")
    print("|---|---|---|---|")
    print(f"| every task, alternating order | {turn:.2f} | {plain:.2f} | {turn / plain:.2f} |", flush=True)


if __name__ == "__main__":
    main()
