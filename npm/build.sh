#!/usr/bin/env bash
# Builds the sqlite-cmp npm tarball: one command, from the repository.
#
#   bash npm/build.sh [OUT_DIR]      (default OUT_DIR: target/npm)
#
# Builds the loadable library (`cargo build --release --features loadable_extension`, a no-op when it
# is up to date), stages npm/ with the library under lib/ and the licence files in
# OUT_DIR/package, runs `npm pack` there and prints the tarball's path on the last line. Install it
# with `npm install target/npm/sqlite-cmp-*.tgz`. CMP_SKIP_CARGO=1 skips the cargo step.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$root/target/npm}
cd "$root"
unset CARGO_TARGET_DIR
if [[ ${CMP_SKIP_CARGO:-} != 1 ]]; then
    cargo build --release --features loadable_extension >&2
fi
lib=target/release/libcmp.so
[[ -f $lib ]] || { echo "npm/build.sh: $lib is missing" >&2; exit 1; }
# A library built without the loadable_extension feature has no entry point: it would install, then
# fail to load.
grep -qa sqlite3_cmp_init "$lib" || {
    echo "npm/build.sh: $lib has no sqlite3_cmp_init entry point: rebuild it with \`cargo build --release --features loadable_extension\`" >&2
    exit 1
}
# The package version is the crate's.
version=$(sed -n '/^\[package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' Cargo.toml | head -n 1)
stage=$out/package
rm -rf "$stage"
mkdir -p "$stage/lib"
cp npm/package.json npm/index.js npm/index.d.ts npm/README.md LICENSE-MIT LICENSE-APACHE "$stage/"
cp "$lib" "$stage/lib/"
(cd "$stage" && npm pkg set version="$version" > /dev/null)
tarball=$(cd "$stage" && npm pack --silent --pack-destination "$out")
echo "$out/$tarball"
