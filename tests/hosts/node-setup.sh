#!/usr/bin/env bash
# Makes better-sqlite3@12 available to Node for tests/hosts/run.sh and tests/hosts/examples.sh, and
# prints the node_modules directory to put on NODE_PATH. Installs it on first use (npm registry only;
# it compiles its own SQLite, a few minutes on 2 cores) into
# ${CMP_NODE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/cmp-node}, outside the repository; later runs reuse
# it. Version 12 because 13 crashes on Node 20. Messages go to stderr; exits non-zero when
# better-sqlite3 can be neither found nor installed.
set -uo pipefail
node_dir=${CMP_NODE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/cmp-node}

ready() {
    NODE_PATH="$node_dir/node_modules" node -e '
        const v = require("better-sqlite3/package.json").version;
        if (!v.startsWith("12.")) { console.error(`better-sqlite3 ${v} is not v12`); process.exit(3); }
        new (require("better-sqlite3"))(":memory:").close();' 2> /dev/null
}

command -v node > /dev/null || { echo "node is not on PATH" >&2; exit 1; }
mkdir -p "$node_dir" || exit 1
# One installer at a time (two CI jobs, or run.sh and examples.sh started together).
if command -v flock > /dev/null; then
    exec 9> "$node_dir/.lock"
    flock 9
fi
if ! ready; then
    command -v npm > /dev/null || { echo "npm is not on PATH" >&2; exit 1; }
    [[ -f $node_dir/package.json ]] ||
        echo '{"private": true, "description": "better-sqlite3 for cmp tests/hosts; not part of the repository"}' \
            > "$node_dir/package.json"
    echo "node: installing better-sqlite3@12 into $node_dir (compiles SQLite: a few minutes)" >&2
    start=$SECONDS
    log=$node_dir/npm-install.log
    if ! (cd "$node_dir" && npm install --no-audit --no-fund --loglevel=error better-sqlite3@12) > "$log" 2>&1; then
        echo "node: npm install failed (log: $log):" >&2
        tail -n 30 "$log" >&2
        exit 1
    fi
    echo "node: installed in $((SECONDS - start)) s" >&2
    if ! ready; then
        echo "node: better-sqlite3 was installed but does not load:" >&2
        NODE_PATH="$node_dir/node_modules" node -e 'new (require("better-sqlite3"))(":memory:")' >&2
        exit 1
    fi
fi
echo "$node_dir/node_modules"
