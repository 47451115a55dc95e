"""What long memories in a spaceless script cost a call, against a plain FTS5 `trigram` query over the
same texts in the same run (the floor). Prints one line.

Generated text (the default): `--docs` memories of `--chars` random Han characters, each starting with
北京出差, so every one matches the task 我下周去北京出差要参加什么活动. Real text (`--real FILE`, a MemDaily
file such as ../shared/data/memdaily-dev/01_simple_events.json): its messages in order, joined into
`--docs` memories of at least `--chars` characters each (the file is read again from the start when it
runs out), and the task is the file's first question.

Both are timed as the best of `--rounds` calls after three warm-up calls: `cmp_search(task)` and the
floor, `SELECT rowid FROM t WHERE t MATCH q ORDER BY bm25(t) LIMIT 200`, with q every three-character
window of the task quoted and OR-ed (what a user of the trigram tokenizer would write).

    cargo build --release --features loadable_extension
    /usr/bin/python3 examples/python/long_han.py [--docs 300] [--chars 2000] [--rounds 5] [--real FILE] [--lib PATH]

With a build that has the `eval-knobs` feature, `CMP_BRIDGE_ANCHORS=0` switches the bridge retriever
off and `CMP_BRIDGE_CHARS=N` sets how many characters of a text it reads (BENCHMARKS.md, "Bridges").
`/usr/bin/python3` is used because the default pyenv build cannot load extensions.
"""
import argparse
import json
import random
import sqlite3
import time

TASK = "我下周去北京出差要参加什么活动"


def generated(docs, chars):
    rng = random.Random(3)
    han = [chr(0x4E00 + i) for i in range(3000)]
    return ["北京出差" + "".join(rng.choice(han) for _ in range(chars)) for _ in range(docs)], TASK


def real(path, docs, chars):
    with open(path, encoding="utf-8") as f:
        trajectories = json.load(f)
    messages = [m["message"].strip() for t in trajectories for m in t["message_list"]]
    task = next(q["question"] for t in trajectories for q in t["question_list"])
    out, k = [], 0
    for _ in range(docs):
        doc = ""
        while len(doc) < chars:
            doc += messages[k % len(messages)]
            k += 1
        out.append(doc)
    return out, task


def trigram_query(task):
    grams = []
    for i in range(len(task) - 2):
        g = task[i:i + 3]
        if all(c.isalnum() for c in g) and g not in grams:
            grams.append(g)
    return " OR ".join(f'"{g}"' for g in grams)


def best_of(conn, sql, args, rounds):
    for _ in range(3):
        rows = conn.execute(sql, args).fetchall()
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        rows = conn.execute(sql, args).fetchall()
        best = min(best, time.perf_counter() - t)
    return best, len(rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=300)
    ap.add_argument("--chars", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--real", metavar="FILE")
    ap.add_argument("--lib", default="target/release/libcmp")
    a = ap.parse_args()
    texts, task = real(a.real, a.docs, a.chars) if a.real else generated(a.docs, a.chars)
    conn = sqlite3.connect(":memory:")
    conn.enable_load_extension(True)
    conn.load_extension(a.lib)
    conn.execute("SELECT cmp_init()")
    conn.execute("CREATE VIRTUAL TABLE floor_fts USING fts5(content, tokenize = 'trigram')")
    for i, text in enumerate(texts):
        conn.execute(
            "INSERT INTO cmp_memories(id, content, captured_at) VALUES (?, ?, ?)",
            (f"m{i}", text, f"2026-05-{1 + i % 28:02d}T00:00:00Z"),
        )
        conn.execute("INSERT INTO floor_fts(rowid, content) VALUES (?, ?)", (i, text))
    conn.commit()
    search = "SELECT ref FROM cmp_search(?, '{\"now\":\"2026-06-01T00:00:00Z\"}')"
    floor = "SELECT rowid FROM floor_fts WHERE floor_fts MATCH ? ORDER BY bm25(floor_fts) LIMIT 200"
    t_cmp, n = best_of(conn, search, (task,), a.rounds)
    t_floor, nf = best_of(conn, floor, (trigram_query(task),), a.rounds)
    what = f"MemDaily text ({a.real.rsplit('/', 1)[-1]})" if a.real else "random Han characters"
    avg = sum(len(t) for t in texts) / len(texts)
    print(f"{a.docs} memories of {avg:.0f} characters of {what}: cmp_search best of {a.rounds}: "
          f"{t_cmp * 1000:.1f} ms ({n} hits); trigram FTS5 query {t_floor * 1000:.2f} ms ({nf} hits); "
          f"{t_cmp / t_floor:.1f}x")


if __name__ == "__main__":
    main()
