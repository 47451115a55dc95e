#!/usr/bin/env bash
# The MCP server as a user gets it, driven by the official MCP Python SDK:
#   1. `cargo package` of cmp-mcp (metadata, licence, readme, the files it ships), verified by building
#      the packaged crate;
#   2. `cargo install --path cmp-mcp` into a scratch root: the binary a user installs (debug profile
#      unless CMP_CI_INSTALL_RELEASE=1, to reuse the test build);
#   3. the SDK (`mcp` from PyPI, in a venv of /usr/bin/python3 kept outside the repository, in
#      ${XDG_CACHE_HOME:-~/.cache}/cmp-mcp-venv and reused by later runs) drives that binary over stdio and over Streamable HTTP (`cmp-mcp serve` on 127.0.0.1):
#      initialize, tools/list, every tool, bad calls, and the token rules (cmp-mcp/tests/sdk_client.py).
# Closes with `N passed, N failed`; exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
unset CARGO_TARGET_DIR

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== cargo package -p cmp -p cmp-mcp"
# cmp-mcp depends on the workspace's cmp (`version = "=0.1.0"`); packaging both lets cargo verify
# cmp-mcp against the cmp packaged beside it (a crate named cmp on crates.io is another project).
# Cargo unpacks that cmp into its registry cache keyed by name and version only, and reuses an
# earlier unpacking as it is: a run on a machine that packaged an older cmp 0.1.0 would verify
# cmp-mcp against the old sources. Drop those unpackings first (only cmp 0.1.0's, nothing else).
cargo_home=${CARGO_HOME:-$HOME/.cargo}
rm -rf "$cargo_home"/registry/src/*/cmp-0.1.0 "$cargo_home"/registry/cache/*/cmp-0.1.0.crate
cargo package -p cmp -p cmp-mcp --allow-dirty > "$tmp/package.log" 2>&1 || { cat "$tmp/package.log"; exit 1; }
grep -E '^ *(Packaged|Verifying)' "$tmp/package.log"
tar -tzf target/package/cmp-mcp-0.1.0.crate | sed 's|^[^/]*/||' | sort > "$tmp/files"
for f in Cargo.toml README.md src/main.rs src/http.rs src/tokens.rs; do
    grep -qx "$f" "$tmp/files" || { echo "cmp-mcp package lacks $f"; exit 1; }
done

# The debug profile reuses what `cargo test -p cmp-mcp` built (a release install compiles the HTTP stack
# again, minutes of CI time); CMP_CI_INSTALL_RELEASE=1 installs exactly as a user does.
profile=(--debug)
[[ ${CMP_CI_INSTALL_RELEASE:-} == 1 ]] && profile=()
echo "== cargo install --path cmp-mcp ${profile[*]}"
cargo install --locked --path cmp-mcp --root "$tmp/install" --target-dir target "${profile[@]}" > "$tmp/install.log" 2>&1 \
    || { cat "$tmp/install.log"; exit 1; }
bin="$tmp/install/bin/cmp-mcp"
"$bin" --version

echo "== MCP Python SDK against the installed cmp-mcp (stdio and Streamable HTTP)"
venv="${CMP_MCP_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/cmp-mcp-venv}"
if ! "$venv/bin/python" -c 'import mcp' 2> /dev/null; then
    rm -rf "$venv"
    if ! /usr/bin/python3 -m venv "$venv" > "$tmp/venv.log" 2>&1; then
        # Debian ships venv's pip bootstrap separately.
        apt-get update -qq && apt-get install -y -qq python3-venv > /dev/null
        rm -rf "$venv"
        /usr/bin/python3 -m venv "$venv"
    fi
    "$venv/bin/pip" install --quiet --disable-pip-version-check 'mcp==2.3.0'
fi
"$venv/bin/pip" show mcp 2> /dev/null | grep -E '^(Name|Version):' | tr '\n' ' '
echo
mkdir -p "$tmp/work"
"$venv/bin/python" cmp-mcp/tests/sdk_client.py "$bin" "$tmp/work"
