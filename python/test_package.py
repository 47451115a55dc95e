"""Checks an installed sqlite-cmp wheel the way a user would use it (CI runs it in a fresh virtual
environment, outside the repository, after `pip install` of the wheel):

    python test_package.py [--expect-no-loading] [MARKDOWN ...]

Without a flag: imports sqlite_cmp, loads it into a new connection, runs cmp_init, inserts a memory
and checks that cmp_context cites it; then runs every ```python block of each MARKDOWN file that uses
sqlite_cmp (the package's README and the repository's, so their examples cannot drift), each in a
fresh temporary directory. With --expect-no-loading (an interpreter whose sqlite3 cannot
load extensions, e.g. a pyenv build): checks that load() fails with the RuntimeError naming the fix.
Prints one line per check and `N passed, M failed`; exits 1 on any failure.
"""

import contextlib
import io
import json
import os
import re
import runpy
import sqlite3
import sys
import tempfile

results = []


def check(name, fn):
    try:
        fn()
        results.append(True)
        print(f"ok   {name}")
    except Exception as e:  # noqa: BLE001 - every failure is reported, then counted
        results.append(False)
        print(f"FAIL {name}: {type(e).__name__}: {e}")


def imported_from_site_packages():
    import sqlite_cmp

    where = os.path.abspath(sqlite_cmp.__file__)
    assert "site-packages" in where, f"sqlite_cmp was imported from {where}, not from the install"
    assert sqlite_cmp.__version__ and "@" not in sqlite_cmp.__version__, sqlite_cmp.__version__


def path_is_a_file():
    import sqlite_cmp

    p = sqlite_cmp.loadable_path()
    assert os.path.isabs(p) and os.path.isfile(p), p


def load_and_context():
    import sqlite_cmp

    conn = sqlite3.connect(":memory:", isolation_level=None)
    sqlite_cmp.load(conn)
    (version,) = conn.execute("SELECT cmp_init()").fetchone()
    assert version >= 1, version
    conn.execute(
        "INSERT INTO cmp_memories(id, content, entities, captured_at) VALUES (?, ?, ?, ?)",
        ("mem_000000000001", "Atlas ships on Friday", json.dumps(["Atlas"]), "2026-05-01T00:00:00Z"),
    )
    (pack,) = conn.execute(
        "SELECT cmp_context(?, 'claude', 800, NULL, ?)",
        ("when does Atlas ship?", json.dumps({"now": "2026-06-01T00:00:00Z", "format": "json"})),
    ).fetchone()
    env = json.loads(pack)
    refs = [item["ref"] for item in env["items"]]
    assert refs == ["mem_000000000001"], refs
    # Loading is switched off again after load().
    try:
        conn.load_extension(sqlite_cmp.loadable_path())
    except sqlite3.OperationalError:
        pass
    else:
        raise AssertionError("load() left extension loading enabled")


def load_error_names_fix():
    import sqlite_cmp

    class NoLoading:  # a connection of a sqlite3 module built without extension support
        pass

    conns = [NoLoading()]
    if not hasattr(sqlite3.Connection, "enable_load_extension"):
        conns.append(sqlite3.connect(":memory:"))  # the real thing, on this interpreter
    for conn in conns:
        try:
            sqlite_cmp.load(conn)
        except RuntimeError as e:
            msg = str(e)
            assert msg.startswith("sqlite_cmp.load:"), msg
            assert "/usr/bin/python3" in msg and "pysqlite3" in msg, msg
        else:
            raise AssertionError(f"load() accepted {type(conn).__name__}, which cannot load extensions")


def cannot_load():
    assert not hasattr(sqlite3.Connection, "enable_load_extension"), "it can: drop --expect-no-loading"


def _fail(msg):
    raise AssertionError(msg)


def doc_examples(path):
    """The ```python blocks of a markdown file that use the package."""
    text = open(path, encoding="utf-8").read()
    blocks = re.findall(r"^```python\n(.*?)^```$", text, re.M | re.S)
    return [b for b in blocks if "sqlite_cmp" in b]


def run_example(code):
    def run():
        with tempfile.TemporaryDirectory() as d:
            script = os.path.join(d, "example.py")
            with open(script, "w", encoding="utf-8") as f:
                f.write(code)
            cwd = os.getcwd()
            os.chdir(d)
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    runpy.run_path(script, run_name="__main__")
            finally:
                os.chdir(cwd)

    return run


def main():
    args = sys.argv[1:]
    expect_no_loading = "--expect-no-loading" in args
    docs = [a for a in args if not a.startswith("--")]
    print(f"python {sys.version.split()[0]} ({sys.executable}), sqlite {sqlite3.sqlite_version}")
    check("import sqlite_cmp from the installed wheel", imported_from_site_packages)
    check("loadable_path() is the library inside the package", path_is_a_file)
    if expect_no_loading:
        check("this interpreter's sqlite3 cannot load extensions", cannot_load)
    else:
        check("load(conn), cmp_init, insert, cmp_context cites the memory", load_and_context)
        for doc in docs:
            examples = doc_examples(doc)
            check(f"{doc} has a python example using sqlite_cmp", lambda: examples or _fail("none found"))
            for i, code in enumerate(examples, 1):
                check(f"{doc}: python example {i} runs", run_example(code))
    check("load() on a connection without extension support names the fix", load_error_names_fix)
    passed = sum(results)
    failed = len(results) - passed
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
