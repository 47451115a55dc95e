#!/usr/bin/env bash
# Counts the fdatasync calls of 20 cmp_context calls under synchronous=FULL in WAL mode, without and
# with a session (BENCHMARKS.md, "Where the speed targets stand"): what a durable session turn adds
# to a call is its commit's sync of the write-ahead log. Needs strace and the loadable library:
#   cargo build --release --features loadable_extension && bash examples/shell/turn_syncs.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
db=$(mktemp -d)/turns.db
trap 'rm -rf "$(dirname "$db")"' EXIT
sqlite3 "$db" ".load target/release/libcmp" "PRAGMA journal_mode=WAL" "SELECT cmp_init()" ".read sql/seed.sql" > /dev/null
for session in NULL "'turns'"; do
    calls=("SELECT length(cmp_context('warm-up', NULL, NULL, NULL))")
    for i in $(seq 20); do
        calls+=("SELECT length(cmp_context('what does the user like to eat $i', NULL, NULL, $session))")
    done
    strace -f -e trace=fdatasync -o "$db.trace" sqlite3 "$db" ".load target/release/libcmp" "PRAGMA synchronous=FULL" "${calls[@]}" > /dev/null
    echo "session $session: $(grep -c fdatasync "$db.trace") fdatasync calls in 20 calls"
done
