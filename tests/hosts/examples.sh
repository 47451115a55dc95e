#!/usr/bin/env bash
# Runs the four quickstart examples and checks each one exits 0 and prints the pack and its cited
# refs; they use the same memories, task and clock, so their outputs must also be identical.
#   python  /usr/bin/python3 examples/python/quickstart.py     (loads target/release/libcmp.so)
#   node    node examples/node/quickstart.js                    (better-sqlite3@12, see node-setup.sh)
#   shell   sqlite3 :memory: < examples/shell/quickstart.sql    (loads target/release/libcmp.so)
#   rust    cargo run --example quickstart                      (cmp::register, bundled SQLite)
# The loadable extension must be built first (`cargo build --release --features loadable_extension`).
# The Rust example is built in the dev profile, whose dependencies `cargo test` has already built (a
# release build without `loadable_extension` would also relink target/release/deps/libcmp.so without
# its entry point, and the next `cargo build --release --features loadable_extension` would redo it).
#
# Usage: tests/hosts/examples.sh [python|node|shell|rust ...]   (default: all)
# Environment: CMP_HOSTS_SKIP="node ..." skips hosts (as run.sh does).
# Prints one line per example and `N passed, M failed` at the end; exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2

lib=target/release/libcmp.so
python=/usr/bin/python3
hosts=("$@")
((${#hosts[@]})) || hosts=(python node shell rust)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0
failed=0
skipped=0
reference=

skip() {
    echo "$1: skipped ($2)"
    skipped=$((skipped + 1))
}

for host in "${hosts[@]}"; do
    if [[ " ${CMP_HOSTS_SKIP:-} " == *" $host "* ]]; then
        skip "$host" CMP_HOSTS_SKIP
        continue
    fi
    if [[ $host != rust && ! -f $lib ]]; then
        echo "$host: FAILED ($lib is missing: run \`cargo build --release --features loadable_extension\`)"
        failed=$((failed + 1))
        continue
    fi
    case $host in
        python)
            [[ -x $python ]] || { skip python "no $python"; continue; }
            cmd=("$python" examples/python/quickstart.py)
            ;;
        node)
            command -v node > /dev/null || { skip node "no node on PATH"; continue; }
            if ! node_modules=$(tests/hosts/node-setup.sh); then
                echo "node: FAILED (better-sqlite3@12 could not be installed or loaded)"
                failed=$((failed + 1))
                continue
            fi
            cmd=(env NODE_PATH="$node_modules" node examples/node/quickstart.js)
            ;;
        shell)
            command -v sqlite3 > /dev/null || { skip shell "no sqlite3 on PATH"; continue; }
            cmd=(sh -c 'sqlite3 :memory: < examples/shell/quickstart.sql')
            ;;
        rust)
            command -v cargo > /dev/null || { skip rust "no cargo on PATH"; continue; }
            cmd=(cargo run --quiet --example quickstart)
            ;;
        *)
            echo "usage: $0 [python|node|shell|rust ...]" >&2
            exit 2
            ;;
    esac
    "${cmd[@]}" > "$tmp/$host.out" 2> "$tmp/$host.err"
    rc=$?
    if ((rc != 0)); then
        echo "$host: FAILED (exit $rc): ${cmd[*]}"
        tail -n 30 "$tmp/$host.err"
        failed=$((failed + 1))
    elif ! grep -q '^cited refs (' "$tmp/$host.out" || ! grep -q '^  mem_000000000001 ' "$tmp/$host.out"; then
        echo "$host: FAILED (no cited refs in its output): ${cmd[*]}"
        cat "$tmp/$host.out"
        failed=$((failed + 1))
    elif [[ -n $reference ]] && ! diff -u --label "$reference" --label "$host" "$tmp/$reference.out" "$tmp/$host.out" \
        > "$tmp/$host.diff"; then
        echo "$host: FAILED (its output differs from $reference's)"
        cat "$tmp/$host.diff"
        failed=$((failed + 1))
    else
        echo "$host: ok ($(grep -c '^  mem_' "$tmp/$host.out") refs cited): ${cmd[*]}"
        [[ -n $reference ]] || reference=$host
        passed=$((passed + 1))
    fi
done

if ((skipped)); then
    echo "$passed passed, $failed failed, $skipped skipped"
else
    echo "$passed passed, $failed failed"
fi
((failed == 0))
