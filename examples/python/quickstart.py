"""cmp from Python: load the extension, write four memories with plain SQL, and print the context
pack cmp builds for a task, then the refs it cites.

Build the extension first, then run from the repository root with Debian's Python (pyenv builds
usually cannot load extensions):

    cargo build --release --features loadable_extension
    /usr/bin/python3 examples/python/quickstart.py

CMP_LIB overrides the library path (without the .so suffix).
"""

import json
import os
import pathlib
import sqlite3

ROOT = pathlib.Path(__file__).resolve().parents[2]
LIB = os.environ.get("CMP_LIB", str(ROOT / "target" / "release" / "libcmp"))
TASK = "Draft the Atlas launch announcement for Dana"
# A fixed clock makes the output the same on every run; leave `now` out to use the real one.
OPTIONS = {"now": "2026-06-01T00:00:00Z"}

MEMORIES = [
    ("mem_000000000001", "decision", "The Atlas launch is on June 12.", ["Atlas"]),
    ("mem_000000000002", "semantic", "Dana signs off on every Atlas announcement.", ["Atlas", "Dana"]),
    ("mem_000000000003", "negative", "Never email customers on weekends.", []),
    ("mem_000000000004", "preference", "Dana prefers one-page briefs with the risks first.", ["Dana"]),
]


def main():
    conn = sqlite3.connect(":memory:", isolation_level=None)  # or a file: sqlite3.connect("memories.db")
    conn.enable_load_extension(True)
    conn.load_extension(LIB)
    conn.enable_load_extension(False)
    (version,) = conn.execute("SELECT cmp_init()").fetchone()  # creates or upgrades the schema
    print(f"schema version {version}")

    # Memories are plain rows; triggers keep the full-text index and the entity graph in step.
    conn.executemany(
        "INSERT INTO cmp_memories(id, kind, content, entities, captured_at) VALUES (?, ?, ?, ?, '2026-05-01T09:00:00Z')",
        [(id_, kind, content, json.dumps(entities)) for id_, kind, content, entities in MEMORIES],
    )

    # The pack as Markdown, ready to paste into a prompt...
    (markdown,) = conn.execute(
        "SELECT cmp_context(?, 'claude', NULL, NULL, ?)", (TASK, json.dumps({**OPTIONS, "format": "markdown"}))
    ).fetchone()
    print(markdown)

    # ...and as the SMP envelope (the default format), whose items carry refs and provenance.
    (smp,) = conn.execute("SELECT cmp_context(?, 'claude', NULL, NULL, ?)", (TASK, json.dumps(OPTIONS))).fetchone()
    pack = json.loads(smp)
    print(f"cited refs ({pack['budget']['used']}/{pack['budget']['tokens']} tokens, {pack['coverage']['status']}):")
    for item in pack["items"]:
        relevance = "-" if item["relevance"] is None else f"{item['relevance']:.3f}"
        print(f"  {item['ref']}  {item['layer']:<11}  relevance {relevance:<5}  {item['content']}")


if __name__ == "__main__":
    main()
