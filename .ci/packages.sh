#!/usr/bin/env bash
# The packages, installed the way users install them, each into a fresh environment outside the
# repository:
#   python  the wheel from python/build.sh, `pip install --no-index` into a new virtual environment of
#           /usr/bin/python3, then python/test_package.py (load, cmp_init, insert, cmp_context, and
#           the Python examples of python/README.md, README.md and docs/install.md); and,
#           when `python3` on PATH is an interpreter whose sqlite3 cannot load extensions (pyenv),
#           the same wheel there must fail with the error that names the fix;
#   node    the tarball from npm/build.sh (`npm pack`), `npm install`ed into a new temporary project,
#           then npm/test_package.js (the same checks, and the js examples of npm/README.md,
#           README.md and docs/install.md) with better-sqlite3@12 from tests/hosts/node-setup.sh's cache;
#   crate   `cargo package -p cmp` (packs the crate and builds it from the packed files alone).
# The build scripts run `cargo build --release --features loadable_extension` first (a no-op when
# .ci/run has just built it) and refuse a library without the entry point. Prints `N passed, M failed` over the
# three; exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$PWD
unset CARGO_TARGET_DIR
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0

# run NAME CMD...: runs one step, counts it, shows its output.
run() {
    local name=$1
    shift
    echo "== packages: $name"
    if "$@"; then
        passed=$((passed + 1))
    else
        echo "packages: $name FAILED"
        failed=$((failed + 1))
    fi
}

python_wheel() {
    local wheel
    wheel=$(bash python/build.sh "$tmp/wheels" | tail -n 1) || return 1
    echo "built $wheel"
    /usr/bin/python3 -m venv "$tmp/venv" || return 1
    "$tmp/venv/bin/pip" install --quiet --no-index --disable-pip-version-check "$wheel" || return 1
    mkdir -p "$tmp/py" && cp python/test_package.py "$tmp/py/"
    (cd "$tmp/py" && "$tmp/venv/bin/python" test_package.py "$root/python/README.md" "$root/README.md" "$root/docs/install.md") || return 1
    # An interpreter that cannot load extensions (pyenv's, when it is on PATH) gets the clear error.
    local other
    other=$(command -v python3)
    if [[ -n $other ]] && "$other" -c 'import sqlite3, sys; sys.exit(hasattr(sqlite3.Connection, "enable_load_extension"))'; then
        "$other" -m venv "$tmp/venv-noload" || return 1
        "$tmp/venv-noload/bin/pip" install --quiet --no-index --disable-pip-version-check "$wheel" || return 1
        (cd "$tmp/py" && "$tmp/venv-noload/bin/python" test_package.py --expect-no-loading) || return 1
    else
        echo "(no python3 without extension loading on PATH: its check is skipped)"
    fi
}

node_tarball() {
    local tarball modules
    tarball=$(bash npm/build.sh "$tmp/npm" | tail -n 1) || return 1
    echo "built $tarball"
    modules=$(bash tests/hosts/node-setup.sh) || return 1
    mkdir -p "$tmp/app"
    (cd "$tmp/app" && npm init -y > /dev/null && \
        npm install --no-audit --no-fund --loglevel=error "$tarball") || return 1
    cp npm/test_package.js "$tmp/app/"
    (cd "$tmp/app" && NODE_PATH=$modules node test_package.js "$root/npm/README.md" "$root/README.md" "$root/docs/install.md")
}

crate_package() {
    # --allow-dirty: other CI steps may leave untracked files; what is packed is still what the
    # include list in Cargo.toml names, and the packed crate is built from those files alone.
    cargo package -p cmp --allow-dirty 2>&1 | tail -n 5
    return "${PIPESTATUS[0]}"
}

run "python wheel in a fresh venv" python_wheel
run "npm tarball in a fresh project" node_tarball
run "cargo package -p cmp" crate_package
echo "packages: $passed passed, $failed failed"
((failed == 0))
