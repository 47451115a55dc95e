#!/usr/bin/env bash
# Builds the sqlite-cmp wheel: one command, from the repository.
#
#   bash python/build.sh [OUT_DIR]      (default OUT_DIR: target/wheels)
#
# Builds the loadable library first (`cargo build --release --features loadable_extension`, a no-op
# when it is up to date), then packs it with python/sqlite_cmp into a platform wheel and prints the
# wheel's path on the last line. Install it with `pip install target/wheels/sqlite_cmp-*.whl`.
# CMP_SKIP_CARGO=1 skips the cargo step (CI has just built the library).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$root/target/wheels}
cd "$root"
unset CARGO_TARGET_DIR
if [[ ${CMP_SKIP_CARGO:-} != 1 ]]; then
    cargo build --release --features loadable_extension >&2
fi
python=/usr/bin/python3
[[ -x $python ]] || python=python3
"$python" python/build_wheel.py target/release/libcmp.so "$out"
