"""The checks of tests/cluster/run.sh, against a running sqld primary and its replicas (HTTP API,
`POST /v2/pipeline`). Standard library only; any Python 3 runs it.

    python3 tests/cluster/check.py SEED_SQL PRIMARY_PORT REPLICA_PORT [REPLICA_PORT ...]

1. The schema and the seed memories are written through the primary, one more memory through a replica
   (sqld forwards the INSERT to the primary).
2. Once each replica has caught up, cmp_context (no session; three models, three budgets, three
   formats), cmp_search, cmp_items, cmp_query and cmp_expand (document, neighbors, and `more` on a
   pack cursor) return the same bytes on each replica as on the primary, and each replica answered
   them itself (its own file).
3. Session turns run on the primary; their state replicates and reads back the same on the replicas.
4. The session rule: a session turn, a pin and cmp_session_reset sent to a replica either run on the
   primary (sqld may forward them) or fail with `cmp_context: session ... cannot be stored here`
   naming the fix; inside a transaction that has written, sqld forwards it and it is stored on the
   primary. A sequence of inserts and session turns through a replica (a count, a session-less
   context and a session turn; then the same turn and an INSERT) is replayed for 8 sessions: a
   session's state on the primary always
   counts exactly the turns that answered, no answered turn re-delivers what an earlier one delivered,
   and no replica holds session state the primary does not.
Every wait is bounded. Prints one line per check and `N passed, M failed`; exits 1 on any failure.
"""

import json
import sys
import time
import urllib.error
import urllib.request

NOW = "2026-06-01T00:00:00Z"
WAIT_S = 30
TASKS = [
    "Draft the Atlas launch announcement for Dana",
    "what did Lee say about billing?",
    "what is new since yesterday?",
]
MODELS = ["claude", "gpt", "cursor"]
BUDGETS = [700, 1500, None]
FORMATS = ["smp", "json", "markdown"]
MQL = [
    {"find": "atlas launch", "now": NOW, "k": 5},
    {"find": "billing", "layers": ["decision", "semantic"], "now": NOW},
    {"ask": "Draft the Atlas launch announcement for Dana", "model": "gpt", "now": NOW, "k": 3},
    {"find": "Dana", "now": NOW, "k": 3, "min_relevance": 0.2},
]
REPLICA_RULE = "cannot be stored here: this database is a libSQL (sqld) read replica"
FILE = "(SELECT file FROM pragma_database_list WHERE name = 'main')"

results = []


class SqlError(Exception):
    pass


def arg(v):
    if v is None:
        return {"type": "null"}
    if isinstance(v, int):
        return {"type": "integer", "value": str(v)}
    return {"type": "text", "value": str(v)}


def pipeline(port, steps):
    """Runs steps ((sql, args) or ("sequence", sql)) on one stream; per step: rows or SqlError."""
    reqs = []
    for sql, args in steps:
        if sql == "sequence":
            reqs.append({"type": "sequence", "sql": args})
        else:
            reqs.append({"type": "execute", "stmt": {"sql": sql, "args": [arg(a) for a in args]}})
    reqs.append({"type": "close"})
    body = json.dumps({"requests": reqs}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v2/pipeline", data=body,
                                 headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=20) as r:
        answer = json.load(r)
    out = []
    for res in answer["results"][:-1]:
        if res["type"] == "error":
            out.append(SqlError(res["error"]["message"]))
        elif res["response"]["type"] == "sequence":
            out.append([])
        else:
            rows = res["response"]["result"]["rows"]
            out.append([[None if c["type"] == "null" else c.get("value") for c in row] for row in rows])
    return out


def one(port, sql, *args):
    """First row of one statement; raises SqlError."""
    (r,) = pipeline(port, [(sql, list(args))])
    if isinstance(r, SqlError):
        raise r
    return r[0] if r else None


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(f"{'ok  ' if ok else 'FAIL'} {name}" + ("" if ok else f": {detail}"))
    return ok


def wait_for(what, fn):
    deadline = time.monotonic() + WAIT_S
    last = None
    while time.monotonic() < deadline:
        try:
            last = fn()
            if last is True:
                return True
        except (OSError, urllib.error.URLError, SqlError, KeyError) as e:
            last = e
        time.sleep(0.2)
    check(f"{what} within {WAIT_S} s", False, repr(last))
    return False


def digest(port):
    """What must be equal once a replica has caught up, and the file that answered."""
    return one(port, f"""SELECT (SELECT count(*) || ':' || total(rid) || ':' || group_concat(id) FROM cmp_memories),
        (SELECT count(*) || ':' || coalesce(group_concat(session_id || '@' || cursor), '') FROM cmp_sessions),
        {FILE}""")


def caught_up(primary, replica):
    p, r = digest(primary), digest(replica)
    return p[:2] == r[:2] and r[2] != p[2]


def opts(**kw):
    return json.dumps({"now": NOW, **kw})


def main():
    seed_sql, primary, replicas = sys.argv[1], int(sys.argv[2]), [int(p) for p in sys.argv[3:]]
    seed = open(seed_sql, encoding="utf-8").read()
    servers = [primary] + replicas
    for port in servers:
        if not wait_for(f"server on port {port} answers", lambda: one(port, "SELECT 1") == ["1"]):
            return
    primary_file = one(primary, f"SELECT {FILE}")[0]

    # 1. Writes through the primary, and one through a replica.
    r = pipeline(primary, [("SELECT cmp_init()", []), ("sequence", seed)])
    check("primary: cmp_init() and the seed memories", not any(isinstance(x, SqlError) for x in r), r)
    n_seed = int(one(primary, "SELECT count(*) FROM cmp_memories")[0])
    r = pipeline(replicas[0], [(
        "INSERT INTO cmp_memories(id, content, entities, captured_at) VALUES (?, ?, ?, ?)",
        ["mem_0000000c0001", "Atlas replicas serve reads in Frankfurt and Tokyo.", '["Atlas"]',
         "2026-05-31T12:00:00Z"])])
    check("an INSERT sent to a replica is forwarded to the primary", not isinstance(r[0], SqlError) and
          one(primary, "SELECT count(*) FROM cmp_memories WHERE id = 'mem_0000000c0001'") == ["1"], r)

    # 2. Replicas answer reads themselves, byte for byte as the primary.
    for port in replicas:
        wait_for(f"replica {port} caught up and answers from its own file", lambda: caught_up(primary, port))
    calls = []
    for task in TASKS:
        for model in MODELS:
            for budget in BUDGETS:
                calls.append(("cmp_context(?, ?, ?, NULL, ?)", [task, model, budget, opts()]))
        for fmt in FORMATS:
            calls.append(("cmp_context(?, 'claude', 800, NULL, ?)", [task, opts(format=fmt)]))
    for task in TASKS:
        calls.append(("(SELECT json_group_array(json_array(ref, relevance, content)) FROM cmp_search(?, ?))",
                      [task, opts()]))
        calls.append(("(SELECT json_group_array(json_array(ref, layer, content)) FROM cmp_items(?, 'claude', 800, ?))",
                      [task, opts()]))
    for q in MQL:
        calls.append(("cmp_query(?)", [json.dumps(q)]))
    for ref in ["mem_000000000002", "mem_000000000004", "mem_000000000027", "mem_0000000c0001"]:
        calls.append(("cmp_expand(?)", [ref]))
        calls.append(("cmp_expand(?, 'neighbors', ?)", [ref, opts()]))
    partial = json.loads(one(primary, "SELECT cmp_context(?, 'cursor', 700, NULL, ?)",
                             TASKS[0], opts(format="json"))[0])
    check("a small pack is partial and carries a cursor", partial.get("cursor"), partial.get("coverage"))
    if partial.get("cursor"):
        calls.append(("cmp_expand(?, 'more', ?)", [partial["cursor"], opts()]))
    want = [one(primary, f"SELECT {sql}", *args)[0] for sql, args in calls]
    for port in replicas:
        same, local, first_diff = 0, 0, None
        for (sql, args), w in zip(calls, want):
            got, where = one(port, f"SELECT {sql}, {FILE}", *args)
            same += got == w
            local += where != primary_file
            if got != w and first_diff is None:
                first_diff = f"{sql} {args[:3]}: primary {w[:200]!r}, replica {got[:200]!r}"
        check(f"replica {port}: {len(calls)} reads (cmp_context, cmp_search, cmp_items, cmp_query, cmp_expand) identical to the primary",
              same == len(calls), first_diff)
        check(f"replica {port}: answered them from its own copy", local == len(calls), f"{local}/{len(calls)}")

    # 3. Session turns on the primary replicate.
    t1 = json.loads(one(primary, "SELECT cmp_context(?, 'gpt', 800, 'p1', ?)", TASKS[0], opts())[0])
    t2 = json.loads(one(primary, "SELECT cmp_context(?, 'gpt', 800, 'p1', ?)", TASKS[0], opts())[0])
    # Turn 2 holds the legend, so it has room for a little more; it re-delivers nothing.
    new1 = {n["ref"] for n in t1["working_memory"]["new"]}
    new2 = {n["ref"] for n in t2["working_memory"]["new"]}
    check("primary: turn 1 delivers memories as new, turn 2 none of them again (same task)",
          new1 and not (new1 & new2)
          and t2["working_memory"]["cursor"] == "2", (t1["working_memory"], t2["working_memory"]))
    state = one(primary, "SELECT cmp_session('p1')")[0]
    for port in replicas:
        wait_for(f"replica {port} caught up with the session", lambda: caught_up(primary, port))
        check(f"replica {port}: cmp_session('p1') identical to the primary",
              one(port, "SELECT cmp_session('p1')")[0] == state)

    # 4. The session rule on replicas.
    rep = replicas[0]
    for label, sql, args in [
        ("a session turn", "SELECT cmp_context(?, 'gpt', 500, 'r1', ?)", [TASKS[0], opts()]),
        ("a pin", "SELECT cmp_context(?, 'gpt', 500, NULL, ?)", [TASKS[0], opts(pin=True)]),
        ("cmp_session_reset", "SELECT cmp_session_reset('p1')", []),
    ]:
        (r,) = pipeline(rep, [(sql, args)])
        check(f"replica: {label} fails naming the fix",
              isinstance(r, SqlError) and "cannot be" in str(r) and "on the primary" in str(r)
              and "sqld" in str(r), r)
    (r,) = pipeline(rep, [("SELECT cmp_context(?, 'gpt', 500, 'r1', ?)", [TASKS[0], opts()])])
    check("replica: the error starts with cmp_context: and says why",
          str(r).find('cmp_context: session "r1" ' + REPLICA_RULE) >= 0, r)

    r = one(rep, f"SELECT cmp_init(), {FILE}")
    check("replica: cmp_init() reports the replicated schema version, from its own copy",
          r[0] == one(primary, "SELECT cmp_init()")[0] and r[1] != primary_file, r)

    # Inside a transaction that has written, sqld forwards every statement: the turn runs on the primary.
    r = pipeline(rep, [("BEGIN IMMEDIATE", []),
                       ("SELECT cmp_context(?, 'gpt', 500, 'tx1', ?), " + FILE, [TASKS[1], opts()]),
                       ("COMMIT", [])])
    stored = one(primary, "SELECT cursor FROM cmp_sessions WHERE session_id = 'tx1'")
    check("replica: a session turn inside a write transaction is forwarded and stored on the primary",
          not isinstance(r[1], SqlError) and r[1][0][1] == primary_file and stored == ["1"], (r, stored))

    answered, errors, resent, forwarded = {}, 0, 0, 0
    task = "when does Atlas ship?"
    session_call = ("SELECT cmp_context(?, 'gpt', 500, ?, ?), " + FILE)
    for i in range(8):
        sid = f"seq-{i}"
        one(primary, "INSERT INTO cmp_memories(content, entities, captured_at) VALUES (?, '[\"Atlas\"]', ?)",
            f"Atlas note {i}: the launch checklist has {i + 3} open items.", "2026-05-31T13:00:00Z")
        p1 = pipeline(rep, [("SELECT count(*) FROM cmp_memories", []),
                            ("SELECT cmp_context(?, 'gpt', 500, NULL, ?)", [task, opts()]),
                            (session_call, [task, sid, opts()])])
        p2 = pipeline(rep, [(session_call, [task, sid, opts()]),
                            ("INSERT INTO cmp_memories(content, captured_at) VALUES (?, ?)",
                             [f"Replica-sent note {i}.", "2026-05-31T14:00:00Z"])])
        seen = set()
        for r in (p1[2], p2[0]):
            if isinstance(r, SqlError):
                errors += 1
                if REPLICA_RULE not in str(r):
                    check(f"{sid}: a failed turn fails with the replica rule", False, r)
                continue
            pack, where = r[0]
            forwarded += where == primary_file
            if where != primary_file:
                check(f"{sid}: a turn that answered on a replica", False, "it must have failed")
            wm = json.loads(pack)["working_memory"]
            new = {n["ref"] for n in wm["new"]}
            resent += len(new & seen)
            seen |= {item["ref"] for item in json.loads(pack)["items"]}
            answered[sid] = answered.get(sid, 0) + 1
            if int(wm["cursor"]) != answered[sid]:
                check(f"{sid}: cursor counts the turns that answered", False, wm)
    print(f"     (replayed sequence: {16 - errors} of 16 session turns were forwarded to the primary by sqld, "
          f"{errors} failed on the replica with the rule)")
    check("replayed sequence: no answered turn re-delivered a memory as new", resent == 0, resent)
    check("replayed sequence: every turn answered on the primary or failed naming the rule",
          forwarded + errors == 16, (forwarded, errors))
    for sid in [f"seq-{i}" for i in range(8)]:
        row = one(primary, "SELECT cursor FROM cmp_sessions WHERE session_id = ?", sid)
        stored = int(row[0]) if row else 0
        if stored != answered.get(sid, 0):
            check(f"{sid}: the primary's cursor equals the turns that answered", False,
                  (stored, answered.get(sid, 0)))
    check("replayed sequence: each session's state on the primary counts exactly its answered turns",
          all(int((one(primary, "SELECT cursor FROM cmp_sessions WHERE session_id = ?", f"seq-{i}")
                   or ["0"])[0]) == answered.get(f"seq-{i}", 0) for i in range(8)))
    for port in replicas:
        ok = wait_for(f"replica {port} caught up at the end", lambda: caught_up(primary, port))
        if ok:
            check(f"replica {port}: holds exactly the primary's sessions (none of its own)",
                  digest(port)[1] == digest(primary)[1])
    print(f"     ({n_seed} seed memories, {len(calls)} reads compared per replica)")


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001 - report, count, exit non-zero
        check("the checks ran to the end", False, f"{type(e).__name__}: {e}")
    passed = sum(results)
    failed = len(results) - passed
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed or not results else 0)
