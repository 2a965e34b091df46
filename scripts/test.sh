#!/usr/bin/env bash
# Sets up, builds and runs every test of lazycube; then builds the C++ examples against the
# installed package and runs them on the bundled sample.
#
#   bash scripts/test.sh [--sanitize[=KIND]] [--build-dir DIR]
#
#   --sanitize[=KIND] a sanitizer build (env LAZYCUBE_SANITIZE; scripts/sanitizer.sh), halting
#                     on the first error: address (the default) = the same in build-asan/ with
#                     ASan+UBSan; thread = the tests of the threaded parts (tests/tsan_tests.cmake)
#                     in build-tsan/ with ThreadSanitizer
#   --build-dir DIR   build folder (env LAZYCUBE_BUILD_DIR)
#
# Environment:
#   LAZYCUBE_TEST_JOBS    ctest parallelism (default 2)
#   LAZYCUBE_ASAN_PYTEST  0 = under --sanitize run only the C++ tests, not pytest (default 1)
#   LAZYCUBE_SHARED_DATA  the shared data folder (default ../shared/data beside the repository)
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO_ROOT"
source "$REPO_ROOT/scripts/sanitizer.sh"

sanitize="${LAZYCUBE_SANITIZE:-}"
build_dir="${LAZYCUBE_BUILD_DIR:-}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --sanitize)
      sanitize=address
      if [[ $# -gt 1 && "$2" != -* ]]; then sanitize="$2"; shift; fi ;;
    --sanitize=*) sanitize="${1#*=}" ;;
    --build-dir) build_dir="${2:?--build-dir needs a folder}"; shift ;;
    --build-dir=*) build_dir="${1#*=}" ;;
    -h|--help) sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
sanitize="$(lazycube_sanitizer_kind "$sanitize")" || exit 2
[[ -n "$build_dir" ]] || build_dir="$(lazycube_sanitizer_build_dir "$sanitize")"
[[ "$build_dir" == /* ]] || build_dir="$REPO_ROOT/$build_dir"

log() { printf '[test] %s\n' "$*" >&2; }
SECONDS=0

setup_args=(--build-dir "$build_dir" "--sanitize=$sanitize")
bash "$REPO_ROOT/scripts/setup.sh" "${setup_args[@]}"
log "setup + build: ${SECONDS}s"

ctest_args=(--test-dir "$build_dir" --output-on-failure -j "${LAZYCUBE_TEST_JOBS:-2}")
example_flags=()
if [[ "$sanitize" == address ]]; then
  # Halt on the first report. Leak checking stays on: every instrumented process is a C++
  # executable (the test binary, the CLI spawned by pytest); the Python interpreter running
  # pytest is not instrumented, so its own allocations are not checked. Once an instrumented
  # Python extension is loaded into /usr/bin/python3 (LD_PRELOAD=libasan), set detect_leaks=0
  # for that run: CPython keeps interned objects alive until exit and LSan reports them all.
  export ASAN_OPTIONS="${ASAN_OPTIONS:-halt_on_error=1:abort_on_error=1:detect_leaks=1:detect_stack_use_after_return=1:strict_init_order=1:check_initialization_order=1}"
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
  # Leaks inside system libraries (ecCodes on corrupt GRIB messages): scripts/lsan.supp.
  export LSAN_OPTIONS="${LSAN_OPTIONS:-suppressions=$REPO_ROOT/scripts/lsan.supp}"
  if [[ "${LAZYCUBE_ASAN_PYTEST:-1}" == 0 ]]; then
    ctest_args+=(-E '^pytest')
  fi
  # The installed static library is instrumented: its users must link the sanitizer runtimes.
  # ... with the compiler that built it (its sanitizer runtime: clang links its own statically).
  example_flags=("-DCMAKE_CXX_FLAGS=-fsanitize=address,undefined -fno-omit-frame-pointer"
                 "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined"
                 "-DCMAKE_CXX_COMPILER=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build_dir/CMakeCache.txt")")
fi

log "ctest ${ctest_args[*]}"
ctest "${ctest_args[@]}"
# The C++ cases run in shards, so ctest itself does not show which were skipped: list them with
# their reasons from its log (pytest prints its own with -rs).
skipped="$(awk '/: Skipped$/ {getline why; next_reason = why; next}
                /^\[  SKIPPED \] [^ ]+ \(/ {print "  " $4 ": " next_reason}' \
           "$build_dir/Testing/Temporary/LastTest.log" 2>/dev/null | sort -u || true)"
if [[ -n "$skipped" ]]; then
  log "C++ cases skipped:"
  printf '%s\n' "$skipped" >&2
fi
log "tests passed: ${SECONDS}s"
# The TSan pass is the threaded tests alone: the package and the examples are checked by the
# regular and the ASan+UBSan passes.
if [[ "$sanitize" == thread ]]; then
  log "all passed in ${SECONDS}s (sanitize=thread)"
  exit 0
fi

# ---- The installed package works for a consumer: find_package(lazycube) + the example ----
tmp="$(mktemp -d "${TMPDIR:-/tmp}/lazycube-test.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"
log "installing into $prefix"
cmake --install "$build_dir" --prefix "$prefix" >/dev/null
cmake -S "$REPO_ROOT/examples/cpp" -B "$tmp/example" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_PREFIX_PATH=$prefix" "${example_flags[@]}" >/dev/null
cmake --build "$tmp/example"
for sample in data/era5_sample_v2.zarr data/era5_sample_v3.zarr; do
  log "example: read_window $sample"
  "$tmp/example/read_window" "$REPO_ROOT/$sample"
  log "example: train_batches $sample"
  "$tmp/example/train_batches" "$REPO_ROOT/$sample"
  # Built when the installed lazycube has its LibTorch adapter (not in --sanitize builds).
  if [[ -x "$tmp/example/train_torch" ]]; then
    log "example: train_torch $sample"
    "$tmp/example/train_torch" "$REPO_ROOT/$sample"
  elif [[ -z "$sanitize" ]]; then
    log "example: train_torch not built (no LibTorch or lazycube::torch): skipped"
  fi
done
log "all passed in ${SECONDS}s (sanitize=${sanitize:-none})"
