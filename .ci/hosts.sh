#!/usr/bin/env bash
# Every host: runs tests/hosts/run.sh (one SQL script through the sqlite3 shell, /usr/bin/python3 and
# Node's better-sqlite3 v12, each compared with tests/hosts/expected.txt) and tests/hosts/examples.sh
# (the Python, Node, shell and Rust quickstarts). Builds nothing itself: it expects
# target/release/libcmp.so from `cargo build --release --features loadable_extension` (.ci/run builds
# it first); the Rust quickstart is compiled by `cargo run` in the dev profile. The first run on a
# machine installs better-sqlite3@12 from the npm registry (a few minutes).
# Prints `N passed, M failed` over both scripts' checks and exits non-zero on any failure.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

lib=target/release/libcmp.so
if [[ ! -f $lib ]]; then
    echo "$lib is missing: run \`cargo build --release --features loadable_extension\` first"
    echo "0 passed, 1 failed"
    exit 1
fi

passed=0
failed=0
for script in tests/hosts/run.sh tests/hosts/examples.sh; do
    echo "== $script"
    out=$(mktemp)
    bash "$script" 2>&1 | tee "$out"
    rc=${PIPESTATUS[0]}
    # Each script ends with `N passed, M failed[, K skipped]`.
    summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out" | tail -n 1)
    rm -f "$out"
    if [[ $summary =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed ]]; then
        passed=$((passed + BASH_REMATCH[1]))
        failed=$((failed + BASH_REMATCH[2]))
        # A script that failed without counting it (it stopped early) still fails the run.
        ((rc != 0 && BASH_REMATCH[2] == 0)) && failed=$((failed + 1))
    else
        echo "$script printed no summary (exit $rc)"
        failed=$((failed + 1))
    fi
done
echo "hosts: $passed passed, $failed failed"
((failed == 0))
