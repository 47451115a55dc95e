"""cmp-mcp driven by the official MCP Python SDK (`mcp` on PyPI), over stdio and over Streamable HTTP.

    python sdk_client.py BINARY WORKDIR

BINARY is a built cmp-mcp; WORKDIR an empty directory for the databases. Over stdio: initialize,
tools/list, every tool, a bad call (a tool error with the cmp message word for word) and an unknown
tool (a JSON-RPC error). Over HTTP (`cmp-mcp serve` on 127.0.0.1, a port the OS picks): the same, the
MCP session as the CMP session, and the token rules: no token and a wrong token refused, a read-only
token without `remember`, a scope-B token's memories never shown to a scope-A token. Prints one line
per check and closes with `N passed, N failed`; exits 1 on any failure.
"""

import asyncio
import json
import os
import subprocess
import sys
import traceback

import httpx2
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

BIN, WORK = sys.argv[1], sys.argv[2]
TOOLS = ["get_context", "query_memory", "expand", "remember", "search", "fetch"]
results = {"passed": 0, "failed": 0}


def check(name, ok, detail=""):
    results["passed" if ok else "failed"] += 1
    print(f"{'ok  ' if ok else 'FAIL'} {name}" + ("" if ok else f": {detail}"), flush=True)


def text_of(result):
    return result.content[0].text


async def ok_json(session, name, args):
    r = await session.call_tool(name, args)
    if r.is_error:
        raise AssertionError(f"{name} failed: {text_of(r)}")
    return json.loads(text_of(r))


async def exercise(session, label, scope_ids=None):
    """Every tool and a bad call on an initialized session; returns the refs it stored."""
    tools = await session.list_tools()
    names = [t.name for t in tools.tools]
    check(f"{label}: tools/list names the six tools", names == TOOLS, names)
    check(f"{label}: every tool has an object input schema", all(t.input_schema.get("type") == "object" for t in tools.tools))

    rule = (await ok_json(session, "remember", {"content": "Never deploy Atlas on a Friday.", "kind": "negative", "entities": ["Atlas"]}))["id"]
    plan = (await ok_json(session, "remember", {"content": "Atlas launches on 1 July 2026.", "kind": "decision", "entities": ["Atlas"], "source_url": "https://example.com/atlas"}))["id"]
    dana = (await ok_json(session, "remember", {"content": "Dana leads the Atlas mobile workstream.", "entities": ["Atlas", "Dana"]}))["id"]
    check(f"{label}: remember returns mem_ ids", all(i.startswith("mem_") for i in (rule, plan, dana)), (rule, plan, dana))

    first = await ok_json(session, "get_context", {"task": "Plan the Atlas launch", "model": "claude", "audit": True})
    refs = [i["ref"] for i in first["items"]]
    check(f"{label}: get_context returns an SMP envelope citing the rule", first.get("smp") == "1" and rule in refs, refs)
    new1 = [n["ref"] for n in first["working_memory"]["new"]]
    second = await ok_json(session, "get_context", {"task": "Plan the Atlas launch", "model": "claude", "audit": True})
    check(f"{label}: the connection's session announces each memory once", bool(new1) and second["working_memory"]["new"] == [], second["working_memory"])
    check(
        f"{label}: one session for the connection",
        first["receipt"]["session_id"] == second["receipt"]["session_id"] and first["receipt"]["session_id"].startswith("mcp-"),
        first["receipt"]["session_id"],
    )

    q = await ok_json(session, "query_memory", {"ask": "Atlas deployment", "layers": ["negative"]})
    check(f"{label}: query_memory finds the rule", [i["ref"] for i in q["items"]] == [rule], q)
    e = await ok_json(session, "expand", {"ref": plan})
    check(f"{label}: expand reads the document", e.get("found") is True and "1 July" in e["document"]["content"], e)
    s = await ok_json(session, "search", {"query": "Dana mobile"})
    check(f"{label}: search ranks the Dana memory first", s["results"] and s["results"][0]["id"] == dana, s)
    f = await ok_json(session, "fetch", {"id": plan})
    check(f"{label}: fetch returns text and source url", f["text"] == "Atlas launches on 1 July 2026." and f["url"] == "https://example.com/atlas", f)

    bad = await session.call_tool("query_memory", {"find": "Atlas", "min_relevance": 2.5})
    check(
        f"{label}: a bad call is a tool error with the cmp message",
        bad.is_error and text_of(bad) == "cmp_query: min_relevance must be within [0, 1], got 2.5",
        text_of(bad),
    )
    try:
        await session.call_tool("forget", {})
        check(f"{label}: an unknown tool is a JSON-RPC error", False, "no error raised")
    except Exception as exc:  # the SDK raises its MCP error type for a JSON-RPC error
        check(f"{label}: an unknown tool is a JSON-RPC error", "unknown tool" in str(exc), repr(exc))
    return {"rule": rule, "plan": plan, "dana": dana}


async def stdio_run():
    db = os.path.join(WORK, "stdio.db")
    params = StdioServerParameters(command=BIN, args=["--db", db])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            check("stdio: initialize names cmp-mcp", init.server_info.name == "cmp-mcp", init.server_info)
            await exercise(session, "stdio")


def token(db, scope, read_only=False):
    args = [BIN, "token", "create", "--db", db, "--scope", scope] + (["--read-only"] if read_only else [])
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout.strip()


def http_client(tok):
    headers = {"Authorization": f"Bearer {tok}"} if tok else {}
    return create_mcp_http_client(headers=headers)


async def http_session(url, tok, body):
    async with http_client(tok) as client:
        async with streamable_http_client(url, http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await body(session)


async def http_run():
    db = os.path.join(WORK, "http.db")
    rw, ro, fin = token(db, "default"), token(db, "default", read_only=True), token(db, "finance")
    server = subprocess.Popen(
        [BIN, "serve", "--db", db, "--listen", "127.0.0.1:0"], stderr=subprocess.PIPE, text=True
    )
    try:
        line = ""
        while "listening on http://" not in line:
            line = server.stderr.readline()
            if not line:
                raise RuntimeError("cmp-mcp serve exited before listening")
        addr = line.split("listening on http://")[1].split()[0]
        url = f"http://{addr}/mcp"

        async with httpx2.AsyncClient() as plain:
            r = await plain.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            check("http: no token is a 401", r.status_code == 401, r.status_code)
            r = await plain.get(f"http://{addr}/v1/context", params={"task": "Atlas"}, headers={"Authorization": f"Bearer {rw[:-1]}x"})
            check("http: a wrong token is a 401", r.status_code == 401, r.status_code)
            r = await plain.get(f"http://{addr}/v1/context", params={"task": "Atlas", "model": "gpt"}, headers={"Authorization": f"Bearer {rw}"})
            check("http: GET /v1/context answers with the envelope", r.status_code == 200 and r.json()["model"] == "gpt", r.text[:200])

        async def as_rw(session):
            return await exercise(session, "http")

        try:
            await http_session(url, rw, as_rw)
        except Exception:
            check("http: the read-write session ran", False, traceback.format_exc())

        async def as_ro(session):
            names = [t.name for t in (await session.list_tools()).tools]
            check("http: a read-only token's tools/list has no remember", "remember" not in names and "get_context" in names, names)
            try:
                r = await session.call_tool("remember", {"content": "written with a read-only token"})
                check("http: a read-only token cannot remember", r.is_error, text_of(r))
            except Exception as exc:
                check("http: a read-only token cannot remember", "read-only" in str(exc), repr(exc))

        try:
            await http_session(url, ro, as_ro)
        except Exception:
            check("http: the read-only session ran", False, traceback.format_exc())

        async def as_finance(session):
            stored = await ok_json(session, "remember", {"content": "The Atlas budget is two million (FINANCE-SECRET).", "entities": ["Atlas"]})
            return stored["id"]

        secret_id = await http_session(url, fin, as_finance)

        async def peek(session):
            outs = []
            for name, args in [
                ("get_context", {"task": "What is the Atlas budget?"}),
                ("search", {"query": "Atlas budget two million"}),
                ("query_memory", {"find": "budget"}),
                ("fetch", {"id": secret_id}),
            ]:
                r = await session.call_tool(name, args)
                outs.append(text_of(r).replace(secret_id, "ID") if name == "fetch" else text_of(r))
            return outs

        outs = await http_session(url, rw, peek)
        leaked = [o for o in outs if "FINANCE-SECRET" in o or secret_id in o]
        check("http: a scope-A token never sees scope B's content or ids", not leaked, leaked)

        try:
            await http_session(url, "cmpt_000000000000_" + "0" * 64, lambda s: s.list_tools())
            check("http: the SDK cannot open a session with a wrong token", False, "session opened")
        except BaseException as exc:  # anyio wraps the 401 in an exception group
            check("http: the SDK cannot open a session with a wrong token", True, repr(exc))
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
        check("http: the server stops on SIGTERM", server.returncode == 0, server.returncode)
        rest = server.stderr.read()
        check("http: no token secret in the server's output", all(t.split("_")[-1] not in rest for t in (rw, ro, fin)), rest)


async def main():
    for run in (stdio_run, http_run):
        try:
            await asyncio.wait_for(run(), timeout=300)
        except Exception:
            check(run.__name__, False, traceback.format_exc())
    print(f"sdk: {results['passed']} passed, {results['failed']} failed", flush=True)
    return 1 if results["failed"] else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
