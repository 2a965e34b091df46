#!/usr/bin/env bash
# Sets up and builds lazycube, then runs the main job on the bundled sample (data/):
# `lazycube info` on both copies and a `lazycube read` of a t2m window into a .npy file.
#
#   bash scripts/run-sample.sh [--build-dir DIR]
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO_ROOT"

build_dir="${LAZYCUBE_BUILD_DIR:-build}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build_dir="${2:?--build-dir needs a folder}"; shift ;;
    --build-dir=*) build_dir="${1#*=}" ;;
    -h|--help) sed -n '2,5p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run-sample.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
[[ "$build_dir" == /* ]] || build_dir="$REPO_ROOT/$build_dir"

# Only what the main job runs: the library's layers and the CLI (the Python package, the CUDA
# kernels, the tests and the benchmarks are built by scripts/test.sh, in the same configuration).
bash "$REPO_ROOT/scripts/setup.sh" --build-dir "$build_dir" --target lazycube_cli

cli="$build_dir/lazycube"
step() { printf '\n$ %s\n' "$*"; "$@"; }

step "$cli" info data/era5_sample_v2.zarr
step "$cli" info data/era5_sample_v3.zarr

tmp="$(mktemp -d "${TMPDIR:-/tmp}/lazycube-sample.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
out="$tmp/t2m_window.npy"
step "$cli" read data/era5_sample_v3.zarr t2m \
  --isel time=0:24 --isel latitude=0:40 --isel longitude=10:50:2 -o "$out"
/usr/bin/python3 - "$out" <<'PY'
import sys
import numpy as np
a = np.load(sys.argv[1])
print("t2m window: shape %s, dtype %s, min %.2f K, max %.2f K" % (a.shape, a.dtype, np.nanmin(a), np.nanmax(a)))
PY

step "$cli" bench data/era5_sample_v3.zarr --variables t2m,u10,v10 \
  --input-dims time=1,latitude=32,longitude=32 --input-overlap latitude=16,longitude=16 \
  --shuffle chunk --epochs 3
