"""cmp, the Contextual Memory Protocol inside SQLite, packaged for Python.

    import sqlite3
    import sqlite_cmp

    conn = sqlite3.connect("memories.db")
    sqlite_cmp.load(conn)
    conn.execute("SELECT cmp_init()")

`load(conn)` loads the extension shipped inside this package into a `sqlite3` (or `pysqlite3`)
connection; `loadable_path()` is the path of that library, for drivers that load it themselves.
"""

import os

__all__ = ["load", "loadable_path", "__version__"]

__version__ = "@VERSION@"

# Unix names; SQLite derives the entry point, sqlite3_cmp_init, from the file name "libcmp".
_NAMES = ("libcmp.so", "libcmp.dylib", "cmp.dll")

_NO_LOADING = (
    "sqlite_cmp.load: this Python's sqlite3 module cannot load extensions "
    "(it was built without --enable-loadable-sqlite-extensions, as pyenv builds usually are). "
    "Fix: run with an interpreter that can, e.g. the system /usr/bin/python3, or rebuild yours with "
    'PYTHON_CONFIGURE_OPTS="--enable-loadable-sqlite-extensions", or use the pysqlite3 package '
    "(import pysqlite3.dbapi2 as sqlite3)"
)


def loadable_path():
    """The absolute path of the loadable extension inside this package."""
    here = os.path.dirname(os.path.abspath(__file__))
    for name in _NAMES:
        path = os.path.join(here, name)
        if os.path.isfile(path):
            return path
    raise FileNotFoundError(
        "sqlite_cmp.loadable_path: no loadable library in %s (this package was built without one; "
        "install a platform wheel built by python/build.sh)" % here
    )


def load(conn):
    """Loads cmp into `conn`, a sqlite3 or pysqlite3 connection, and disables extension loading again.

    Raises RuntimeError naming the fix when the interpreter's sqlite3 cannot load extensions.
    """
    enable = getattr(conn, "enable_load_extension", None)
    if enable is None or getattr(conn, "load_extension", None) is None:
        raise RuntimeError(_NO_LOADING)
    path = loadable_path()
    enable(True)
    try:
        conn.load_extension(path)
    finally:
        enable(False)
