"""What long memories in a spaceless script cost a call: `--docs` memories of `--chars` random Han
characters, each starting with 北京出差 (so every one matches the task), and the best of `--rounds`
timed `cmp_search` calls of one Chinese task, after three warm-up calls. Prints one line.

    cargo build --release --features loadable_extension
    /usr/bin/python3 examples/python/long_han.py [--docs 300] [--chars 2000] [--rounds 5] [--lib PATH]

With a build that has the `eval-knobs` feature, `CMP_BRIDGE_ANCHORS=0` switches the bridge retriever
off and `CMP_BRIDGE_CHARS=N` sets how many characters of a text it reads (BENCHMARKS.md, "Bridges").
`/usr/bin/python3` is used because the default pyenv build cannot load extensions.
"""
import argparse
import random
import sqlite3
import time

TASK = "我下周去北京出差要参加什么活动"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=300)
    ap.add_argument("--chars", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--lib", default="target/release/libcmp")
    a = ap.parse_args()
    rng = random.Random(3)
    conn = sqlite3.connect(":memory:")
    conn.enable_load_extension(True)
    conn.load_extension(a.lib)
    conn.execute("SELECT cmp_init()")
    han = [chr(0x4E00 + i) for i in range(3000)]
    for i in range(a.docs):
        body = "".join(rng.choice(han) for _ in range(a.chars))
        conn.execute(
            "INSERT INTO cmp_memories(id, content, captured_at) VALUES (?, ?, ?)",
            (f"m{i}", "北京出差" + body, f"2026-05-{1 + i % 28:02d}T00:00:00Z"),
        )
    conn.commit()
    search = "SELECT count(*) FROM cmp_search(?, '{\"now\":\"2026-06-01T00:00:00Z\"}')"
    for _ in range(3):
        conn.execute(search, (TASK,)).fetchone()
    best = float("inf")
    for _ in range(a.rounds):
        t = time.perf_counter()
        n = conn.execute(search, (TASK,)).fetchone()[0]
        best = min(best, time.perf_counter() - t)
    print(f"{a.docs} memories of {a.chars} Han characters: cmp_search best of {a.rounds}: "
          f"{best * 1000:.1f} ms ({n} hits)")


if __name__ == "__main__":
    main()
