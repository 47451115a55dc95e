"""Builds the sqlite-cmp platform wheel from an already built loadable library.

Usage: python3 python/build_wheel.py LIBRARY OUT_DIR   (python/build.sh passes both)

The wheel holds the `sqlite_cmp` package (load() / loadable_path()) and the library next to it. Its
tag is py3-none-<this platform>: the library does not link against Python, so one wheel serves every
Python 3 on the platform it was built on. The version is the root crate's (Cargo.toml). Entries carry
a fixed timestamp, so the same inputs give the same bytes. Prints the wheel's path.
"""

import base64
import hashlib
import pathlib
import re
import sys
import sysconfig
import zipfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
NAME = "sqlite_cmp"
DIST = "sqlite_cmp"  # the wheel file name's spelling of the distribution sqlite-cmp
FIXED_TIME = (1980, 1, 1, 0, 0, 0)


def crate_version():
    text = (ROOT / "Cargo.toml").read_text()
    m = re.search(r'^\[package\][^\[]*?^version\s*=\s*"([^"]+)"', text, re.M | re.S)
    if not m:
        sys.exit("build_wheel.py: no [package] version in Cargo.toml")
    return m.group(1)


def platform_tag():
    return re.sub(r"[^A-Za-z0-9]", "_", sysconfig.get_platform())


def metadata(version, readme):
    head = [
        "Metadata-Version: 2.1",
        "Name: sqlite-cmp",
        f"Version: {version}",
        "Summary: cmp, the Contextual Memory Protocol inside SQLite: cited, model-calibrated memory "
        "packs for LLMs (loadable extension)",
        "License: MIT OR Apache-2.0",
        "Requires-Python: >=3.8",
        "Classifier: Programming Language :: Python :: 3",
        "Classifier: Topic :: Database",
        "Description-Content-Type: text/markdown",
    ]
    return "\n".join(head) + "\n\n" + readme


def record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: build_wheel.py LIBRARY OUT_DIR")
    lib = pathlib.Path(sys.argv[1])
    out_dir = pathlib.Path(sys.argv[2])
    if not lib.is_file():
        sys.exit(f"build_wheel.py: {lib} does not exist: build it first "
                 "(cargo build --release --features loadable_extension)")
    # A library built without the loadable_extension feature has no entry point: it would install, then
    # fail to load.
    if b"sqlite3_cmp_init" not in lib.read_bytes():
        sys.exit(f"build_wheel.py: {lib} has no sqlite3_cmp_init entry point: rebuild it with "
                 "`cargo build --release --features loadable_extension`")
    version = crate_version()
    tag = f"py3-none-{platform_tag()}"
    info = f"{DIST}-{version}.dist-info"
    init = (HERE / NAME / "__init__.py").read_text().replace("@VERSION@", version)
    files = [
        (f"{NAME}/__init__.py", init.encode()),
        (f"{NAME}/{lib.name}", lib.read_bytes()),
        (f"{info}/METADATA", metadata(version, (HERE / "README.md").read_text()).encode()),
        (f"{info}/WHEEL", (
            "Wheel-Version: 1.0\nGenerator: sqlite-cmp build_wheel.py\nRoot-Is-Purelib: false\n"
            f"Tag: {tag}\n").encode()),
        (f"{info}/LICENSE-MIT", (ROOT / "LICENSE-MIT").read_bytes()),
        (f"{info}/LICENSE-APACHE", (ROOT / "LICENSE-APACHE").read_bytes()),
    ]
    record = "\n".join(record_line(n, d) for n, d in files) + f"\n{info}/RECORD,,\n"
    files.append((f"{info}/RECORD", record.encode()))
    out_dir.mkdir(parents=True, exist_ok=True)
    wheel = out_dir / f"{DIST}-{version}-{tag}.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for arcname, data in files:
            zi = zipfile.ZipInfo(arcname, FIXED_TIME)
            zi.compress_type = zipfile.ZIP_DEFLATED
            # rwxr-xr-x for the library, rw-r--r-- for the rest.
            mode = 0o755 if arcname.endswith((".so", ".dylib", ".dll")) else 0o644
            zi.external_attr = (0o100000 | mode) << 16
            z.writestr(zi, data)
    print(wheel)


if __name__ == "__main__":
    main()
