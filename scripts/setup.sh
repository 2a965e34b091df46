#!/usr/bin/env bash
# Prepares a Debian 12 machine for lazycube and builds it. Safe to run again and again.
#
#   bash scripts/setup.sh [--sanitize[=KIND]] [--build-dir DIR] [--target T]... [--no-build] [--dry-run]
#
#   --sanitize[=KIND] a sanitizer build (-DLAZYCUBE_SANITIZE=KIND; env LAZYCUBE_SANITIZE):
#                     address (the default: ASan+UBSan, build-asan/) or thread (TSan, build-tsan/)
#   --build-dir DIR   build folder (env LAZYCUBE_BUILD_DIR; default build/, or the sanitizer's)
#   --target T        build only target T and what it needs (repeatable; default: everything),
#                     e.g. lazycube_cli (the CLI) or lazycube_python (the Python package)
#   --no-build        only install the missing Debian packages
#   --dry-run         print the commands that would change the machine or the build, run none
#
# Extra CMake arguments can be passed in LAZYCUBE_CMAKE_ARGS (split on spaces).
# Installing packages needs root (CI runs as root); when everything is installed already it does
# not touch apt at all.
set -euo pipefail

# Every Debian package the project needs, in one place. Later features add to this list.
APT_PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libxtensor-dev xtl-dev nlohmann-json3-dev
  libblosc-dev libzstd-dev liblz4-dev zlib1g-dev libdeflate-dev libisal-dev libbz2-dev liblzma-dev libzfp-dev libeccodes-dev
  libgtest-dev libcli11-dev libgdal-dev gdal-bin
  python3-dev python3-numpy python3-zarr python3-numcodecs python3-xarray python3-pytest
  python3-dask python3-netcdf4 python3-h5netcdf python3-fsspec python3-aiohttp
  pybind11-dev python3-pybind11 python3-setuptools python3-pip python3-wheel
  python3-torch libtorch-dev python3-tqdm
  libcurl4-openssl-dev libssl-dev openssl python3-cryptography nginx libnginx-mod-http-lua
  libsimdjson-dev libhdf5-dev python3-azure python3-distributed
  flatbuffers-compiler libflatbuffers-dev
  clang-14 libclang-rt-14-dev
)

# npm packages, installed into the git-ignored $REPO_ROOT/.tools/npm (never globally): the Azure
# Blob Storage emulator the az:// tests start on 127.0.0.1 (tests/servers/start_azurite.sh).
NPM_PACKAGES=(azurite@3)

# Debian's interpreter: it is the one with numpy/zarr/pytest (the PATH python3 may be another).
PYTHON=/usr/bin/python3

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$REPO_ROOT/scripts/sanitizer.sh"

sanitize="${LAZYCUBE_SANITIZE:-}"
build_dir="${LAZYCUBE_BUILD_DIR:-}"
do_build=1
dry_run=0
targets=()

usage() { sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --sanitize)
      sanitize=address
      if [[ $# -gt 1 && "$2" != -* ]]; then sanitize="$2"; shift; fi ;;
    --sanitize=*) sanitize="${1#*=}" ;;
    --build-dir) build_dir="${2:?--build-dir needs a folder}"; shift ;;
    --build-dir=*) build_dir="${1#*=}" ;;
    --target) targets+=("${2:?--target needs a target name}"); shift ;;
    --target=*) targets+=("${1#*=}") ;;
    --no-build) do_build=0 ;;
    --dry-run) dry_run=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "setup.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

sanitize="$(lazycube_sanitizer_kind "$sanitize")" || exit 2
[[ -n "$build_dir" ]] || build_dir="$(lazycube_sanitizer_build_dir "$sanitize")"
[[ "$build_dir" == /* ]] || build_dir="$REPO_ROOT/$build_dir"

log() { printf '[setup] %s\n' "$*" >&2; }

# Runs a command, or only prints it with --dry-run.
run() {
  if [[ "$dry_run" == 1 ]]; then
    printf '[setup] would run:' >&2
    printf ' %q' "$@" >&2
    printf '\n' >&2
  else
    "$@"
  fi
}

# ---- 1. Debian packages: install only what is missing ----
missing_packages() {
  local pkg status
  for pkg in "${APT_PACKAGES[@]}"; do
    # "ii " = installed; anything else (not known, removed, half-configured) counts as missing.
    status="$(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null || true)"
    if [[ "$status" != ii* ]]; then
      printf '%s\n' "$pkg"
    fi
  done
}

mapfile -t missing < <(missing_packages)
if [[ ${#missing[@]} -eq 0 ]]; then
  log "all ${#APT_PACKAGES[@]} Debian packages are installed"
else
  log "missing Debian packages: ${missing[*]}"
  as_root=()
  if [[ "$(id -u)" != 0 ]]; then
    if command -v sudo >/dev/null 2>&1; then
      as_root=(sudo)
    elif [[ "$dry_run" != 1 ]]; then
      echo "setup.sh: installing packages needs root; run as root or install: ${missing[*]}" >&2
      exit 1
    fi
  fi
  run "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
  run "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends "${missing[@]}"
  if [[ "$dry_run" != 1 ]]; then
    mapfile -t still < <(missing_packages)
    if [[ ${#still[@]} -ne 0 ]]; then
      echo "setup.sh: still missing after apt-get install: ${still[*]}" >&2
      exit 1
    fi
  fi
fi

# ---- 1b. npm tools (Node.js from the machine; Debian's nodejs + npm when there is none) ----
# Only the tests use them (the Azure emulator): a build of chosen targets (run-sample.sh's CLI)
# skips them.
npm_prefix="$REPO_ROOT/.tools/npm"
if [[ ${#targets[@]} -gt 0 ]]; then
  log "npm tools skipped: they serve the tests, and only ${targets[*]} is built"
elif [[ ! -x "$npm_prefix/node_modules/.bin/azurite-blob" ]]; then
  if ! command -v npm >/dev/null 2>&1; then
    log "npm is missing: installing Debian's nodejs and npm"
    as_root=()
    [[ "$(id -u)" != 0 ]] && command -v sudo >/dev/null 2>&1 && as_root=(sudo)
    run "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends nodejs npm
  fi
  log "installing ${NPM_PACKAGES[*]} into $npm_prefix"
  run npm install --prefix "$npm_prefix" --no-audit --no-fund --loglevel=error "${NPM_PACKAGES[@]}"
else
  log "npm tools are installed in $npm_prefix"
fi

[[ "$do_build" == 1 ]] || exit 0

# ---- 2. Configure and build ----
cmake_args=(
  -S "$REPO_ROOT" -B "$build_dir" -G Ninja
  -DCMAKE_BUILD_TYPE=RelWithDebInfo
  "-DPython_EXECUTABLE=$PYTHON"
)
if [[ -n "$sanitize" ]]; then
  # The benchmark drivers are never run by ctest: no need to build them instrumented (saves
  # a minute of the sanitizer pass in CI).
  read -r -a compilers <<<"$(lazycube_sanitizer_compilers "$sanitize")"
  cmake_args+=("-DLAZYCUBE_SANITIZE=$sanitize" -DLAZYCUBE_BUILD_BENCH=OFF "${compilers[@]}")
fi
if [[ -n "${LAZYCUBE_CMAKE_ARGS:-}" ]]; then
  read -r -a extra <<<"$LAZYCUBE_CMAKE_ARGS"
  cmake_args+=("${extra[@]}")
fi

# A folder configured earlier with another generator cannot be reused by `-G Ninja`.
cache="$build_dir/CMakeCache.txt"
if [[ -f "$cache" ]] && ! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "$cache"; then
  echo "setup.sh: $build_dir was configured with another generator; remove it or pick --build-dir" >&2
  exit 1
fi

log "configuring $build_dir (sanitize=${sanitize:-none})"
run cmake "${cmake_args[@]}"
# The same configuration either way: a later full build (scripts/test.sh) in the same folder
# only adds what was left out.
build_args=(--build "$build_dir")
if [[ ${#targets[@]} -gt 0 ]]; then
  build_args+=(--target "${targets[@]}")
  log "building $build_dir (targets: ${targets[*]})"
else
  log "building $build_dir"
fi
run cmake "${build_args[@]}"
log "done: $build_dir"
