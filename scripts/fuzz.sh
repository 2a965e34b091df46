#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, docs/fuzzing.md) with clang and runs them.
#
#   bash scripts/fuzz.sh --smoke [--runs N]             every target, N executions each (CI)
#   bash scripts/fuzz.sh --minutes M [TARGET...]         each target (default: all) for M minutes
#   bash scripts/fuzz.sh --seeds                         rewrite the binary seeds of fuzz/corpus
#   bash scripts/fuzz.sh --build-only
#
#   --build-dir DIR   build folder (default build-fuzz/; env LAZYCUBE_FUZZ_BUILD_DIR). A folder
#                     already configured with LAZYCUBE_FUZZ=ON (build-fuzz/ after its first run, or
#                     CI's build-asan/: cmake/Fuzz.cmake decides what either is) is built as it is
#   --runs N          --smoke executions per target (default 10000)
#
# Every run starts from fuzz/corpus/<target> and fuzz/regressions/<target> (inputs that once
# crashed: they must pass); neither is ever written to. --smoke keeps nothing; --minutes keeps
# what it finds in build-fuzz/corpus/<target> (not in the repository). Crashing inputs go to
# build-fuzz/findings/; a finding fails the script and names the input file.
# Environment: LAZYCUBE_FUZZ_JOBS (build parallelism, default 2), CC/CXX (default clang-14).
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO_ROOT"

TARGETS=(zarr_v2 zarr_v3 codec grib kerchunk icechunk cloud cf cli_args)
mode=""
minutes=0
runs=10000
build_dir="${LAZYCUBE_FUZZ_BUILD_DIR:-build-fuzz}"
selected=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --smoke) mode=smoke ;;
    --minutes) mode=long; minutes="${2:?--minutes needs a number}"; shift ;;
    --runs) runs="${2:?--runs needs a number}"; shift ;;
    --seeds) mode=seeds ;;
    --build-only) mode=build ;;
    --build-dir) build_dir="${2:?--build-dir needs a folder}"; shift ;;
    -h|--help) sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "fuzz.sh: unknown argument '$1'" >&2; exit 2 ;;
    *) selected+=("$1") ;;
  esac
  shift
done
[[ -n "$mode" ]] || { echo "fuzz.sh: give --smoke, --minutes M, --seeds or --build-only" >&2; exit 2; }
[[ ${#selected[@]} -gt 0 ]] || selected=("${TARGETS[@]}")
[[ "$build_dir" == /* ]] || build_dir="$REPO_ROOT/$build_dir"

log() { printf '[fuzz] %s\n' "$*" >&2; }
SECONDS=0

# Only the libraries the targets link (no tests, CLI, Python, torch or CUDA), instrumented for
# libFuzzer with ASan+UBSan (cmake/Fuzz.cmake).
cache="$build_dir/CMakeCache.txt"
if [[ -f "$cache" ]] && grep -q '^LAZYCUBE_FUZZ:BOOL=ON$' "$cache"; then
  log "using the fuzz build configured in $build_dir"
else
  cmake -S "$REPO_ROOT" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER="${CC:-clang-14}" -DCMAKE_CXX_COMPILER="${CXX:-clang++-14}" -DLAZYCUBE_FUZZ=ON \
    -DLAZYCUBE_BUILD_TESTS=OFF -DLAZYCUBE_BUILD_CLI=OFF -DLAZYCUBE_BUILD_PYTHON=OFF \
    -DLAZYCUBE_BUILD_TORCH=OFF -DLAZYCUBE_BUILD_CUDA=OFF >/dev/null
fi
if [[ "$mode" == seeds ]]; then
  cmake --build "$build_dir" -j "${LAZYCUBE_FUZZ_JOBS:-2}" --target fuzz_make_seeds
  "$build_dir/fuzz/fuzz_make_seeds" "$REPO_ROOT/fuzz/corpus"
  log "binary seeds rewritten under fuzz/corpus"
  exit 0
fi
cmake --build "$build_dir" -j "${LAZYCUBE_FUZZ_JOBS:-2}" --target lazycube_fuzzers
log "build: ${SECONDS}s"
[[ "$mode" == build ]] && exit 0

# LeakSanitizer on, and every UBSan report fatal (it is compiled so); -timeout: a hang is a
# finding; -rss_limit_mb: so is an allocation a hostile input makes huge.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$REPO_ROOT/scripts/lsan.supp}"  # ecCodes' own leaks
common=(-timeout=10 -rss_limit_mb=2048 -print_final_stats=1)
findings="$build_dir/findings"
mkdir -p "$findings"
failed=()
for t in "${selected[@]}"; do
  bin="$build_dir/fuzz/fuzz_$t"
  [[ -x "$bin" ]] || { echo "fuzz.sh: no target '$t' (one of: ${TARGETS[*]})" >&2; exit 2; }
  dirs=()
  for d in "fuzz/corpus/$t" "fuzz/regressions/$t"; do [[ -d "$d" ]] && dirs+=("$d"); done
  out="$findings/$t.log"
  : >"$out"
  start=$SECONDS
  if [[ "$mode" == smoke ]]; then
    # Regressions first, one by one (each must pass), then -runs mutations from the corpus.
    # libFuzzer adds what it finds to its first corpus folder: a scratch one, emptied each time,
    # so the repository's corpora are only read.
    ok=1
    if [[ -d "fuzz/regressions/$t" ]] && compgen -G "fuzz/regressions/$t/*" >/dev/null; then
      "$bin" "${common[@]}" fuzz/regressions/"$t"/* >>"$out" 2>&1 || ok=0
    fi
    if [[ "$ok" == 1 ]]; then
      scratch="$build_dir/smoke-corpus/$t"
      rm -rf "$scratch" && mkdir -p "$scratch"
      "$bin" "${common[@]}" -runs="$runs" -seed=1 -artifact_prefix="$findings/$t-" "$scratch" "${dirs[@]}" >>"$out" 2>&1 || ok=0
    fi
  else
    work="$build_dir/corpus/$t"
    mkdir -p "$work"
    ok=1
    "$bin" "${common[@]}" -max_total_time=$((minutes * 60)) -artifact_prefix="$findings/$t-" \
      "$work" "${dirs[@]}" >"$out" 2>&1 || ok=0
  fi
  execs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$out" | awk '{s += $2} END {print s + 0}')"
  if [[ "$ok" == 1 ]]; then
    log "$t: $execs executions, no finding ($((SECONDS - start))s)"
  else
    log "$t: FINDING after $execs executions; log $out"
    grep -E 'ERROR|contract broken|Test unit written|SUMMARY' "$out" | head -8 >&2 || true
    failed+=("$t")
  fi
done
log "done in ${SECONDS}s"
if [[ ${#failed[@]} -gt 0 ]]; then
  log "findings in: ${failed[*]} (reproduce: $build_dir/fuzz/fuzz_TARGET INPUT_FILE; docs/fuzzing.md)"
  exit 1
fi
