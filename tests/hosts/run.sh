#!/usr/bin/env bash
# Every host, one script: runs tests/hosts/script.sql with the loadable extension
# (target/release/libcmp.so, built by `cargo build --release --features loadable_extension`) through
#   shell   the sqlite3 shell              (sqlite3 :memory: < script.sql)
#   python  /usr/bin/python3's sqlite3     (tests/hosts/run.py)
#   node    Node's better-sqlite3 v12      (tests/hosts/run.js)
# and compares each output, line by line, with tests/hosts/expected.txt. The fourth host, Rust (a
# bundled rusqlite connection with cmp::register), runs the same script in `cargo test --test hosts`.
#
# better-sqlite3@12 is installed on first use by tests/hosts/node-setup.sh into
# ${CMP_NODE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/cmp-node} (outside the repository; it compiles its
# own SQLite, a few minutes on 2 cores; it needs the npm registry and nothing else). A host whose program is missing is reported as skipped; a host that is
# there but cannot run (a Python without extension loading, a failed npm install) fails.
#
# Usage: tests/hosts/run.sh [--update] [HOST...]      HOST: shell, python, node (default: all)
#   --update   rewrite expected.txt from the sqlite3 shell's output, then compare the others with it.
# Environment: CMP_HOSTS_SKIP="node ..." skips hosts; CMP_NODE_DIR moves the better-sqlite3 install.
# Prints one `host: ok|FAILED|skipped` line per host and `N passed, M failed` (hosts) at the end;
# exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2

script=tests/hosts/script.sql
expected=tests/hosts/expected.txt
lib=target/release/libcmp.so
python=/usr/bin/python3
node_modules=

update=0
hosts=()
for arg in "$@"; do
    case $arg in
        --update) update=1 ;;
        shell | python | node) hosts+=("$arg") ;;
        *) echo "usage: $0 [--update] [shell|python|node ...]" >&2; exit 2 ;;
    esac
done
((${#hosts[@]})) || hosts=(shell python node)

if [[ ! -f $lib ]]; then
    echo "$lib is missing: run \`cargo build --release --features loadable_extension\` first" >&2
    exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
skipped=0

# The shell prints errors as `Runtime error near line N: <message>` (a parse error adds the statement
# and a caret line, indented) on stderr; rewrite them to the `error: <message>` lines the other
# runners print. The shell flushes after each statement, so stderr and stdout stay in order.
run_shell() {
    sqlite3 :memory: < "$script" 2>&1 | awk '
        /^(Parse|Runtime) error near line [0-9]+: / {
            parse = ($1 == "Parse"); sub(/^(Parse|Runtime) error near line [0-9]+: /, "error: "); print; next
        }
        parse && /^  / { next }
        { parse = 0; print }'
}

run_python() {
    "$python" tests/hosts/run.py "$script"
}

run_node() {
    NODE_PATH="$node_modules" node tests/hosts/run.js "$script"
}

# available HOST: 0 = run it, 1 = skip it (its program is missing or CMP_HOSTS_SKIP names it).
available() {
    [[ " ${CMP_HOSTS_SKIP:-} " == *" $1 "* ]] && { echo "$1: skipped (CMP_HOSTS_SKIP)"; return 1; }
    case $1 in
        shell) command -v sqlite3 > /dev/null || { echo "shell: skipped (no sqlite3 on PATH)"; return 1; } ;;
        python) [[ -x $python ]] || { echo "python: skipped (no $python)"; return 1; } ;;
        node) command -v node > /dev/null || { echo "node: skipped (no node on PATH)"; return 1; } ;;
    esac
    return 0
}

describe() {
    case $1 in
        shell) echo "sqlite3 shell $(sqlite3 --version | cut -d' ' -f1)" ;;
        python) "$python" -c 'import sqlite3, sys; print("python", sys.version.split()[0], "sqlite", sqlite3.sqlite_version)' ;;
        node) NODE_PATH="$node_modules" node -e '
            const D = require("better-sqlite3"); const db = new D(":memory:");
            console.log(`node ${process.version} better-sqlite3 ${require("better-sqlite3/package.json").version}`
                + ` sqlite ${db.prepare("select sqlite_version()").pluck().get()}`);' ;;
    esac
}

if ((update)); then
    available shell || { echo "--update needs the sqlite3 shell" >&2; exit 1; }
    run_shell > "$expected"
    echo "wrote $expected ($(wc -l < "$expected") lines) from the sqlite3 shell"
fi
[[ -f $expected ]] || { echo "$expected is missing" >&2; exit 1; }

for host in "${hosts[@]}"; do
    if ! available "$host"; then
        skipped=$((skipped + 1))
        continue
    fi
    if [[ $host == node ]] && ! node_modules=$(tests/hosts/node-setup.sh); then
        echo "node: FAILED (better-sqlite3@12 could not be installed or loaded)"
        failed=$((failed + 1))
        continue
    fi
    "run_$host" > "$tmp/$host.out" 2> "$tmp/$host.err"
    rc=$?
    # The shell exits 1 after any failed statement, and the script has some on purpose.
    if [[ $host != shell && $rc != 0 ]]; then
        echo "$host: FAILED (exit $rc): $(describe "$host" 2> /dev/null)"
        cat "$tmp/$host.err"
        failed=$((failed + 1))
        continue
    fi
    if diff -u --label expected.txt --label "$host" "$expected" "$tmp/$host.out" > "$tmp/$host.diff"; then
        echo "$host: ok ($(wc -l < "$tmp/$host.out") lines): $(describe "$host" 2> /dev/null)"
        passed=$((passed + 1))
    else
        echo "$host: FAILED, output differs from $expected: $(describe "$host" 2> /dev/null)"
        cat "$tmp/$host.diff"
        [[ -s $tmp/$host.err ]] && { echo "$host stderr:"; cat "$tmp/$host.err"; }
        failed=$((failed + 1))
    fi
done

if ((skipped)); then
    echo "$passed passed, $failed failed, $skipped skipped"
else
    echo "$passed passed, $failed failed"
fi
((failed == 0))
