# Sourced by setup.sh and test.sh: the sanitizer kinds their --sanitize[=KIND] flag (or env
# LAZYCUBE_SANITIZE) takes, and the build folder of each. What a kind builds is defined once,
# by LAZYCUBE_SANITIZE in cmake/Sanitizers.cmake, which the scripts pass the kind to.
#
#   (none), 0          no sanitizer       build/
#   address, 1         ASan + UBSan       build-asan/
#   thread             ThreadSanitizer    build-tsan/
#
# Sanitizer builds use clang (clang-14, as the fuzz build): GCC's ASan+UBSan compiled the
# libraries in 1,443 CPU seconds against clang's 661 (the regular build: 447), and CI builds
# them on 2 cores. The regular build keeps the default compiler.

# Prints the kind ("", address or thread) for a flag value; fails with a message on another.
lazycube_sanitizer_kind() {
  case "$1" in
    ""|0) echo "" ;;
    1|address) echo address ;;
    thread) echo thread ;;
    *) echo "--sanitize/LAZYCUBE_SANITIZE must be address or thread (or 1 = address), not '$1'" >&2
       return 2 ;;
  esac
}

lazycube_sanitizer_build_dir() {
  case "$1" in
    address) echo build-asan ;;
    thread) echo build-tsan ;;
    *) echo build ;;
  esac
}

# The compilers of a kind's build, as CMake arguments (none for the regular build).
lazycube_sanitizer_compilers() {
  case "$1" in
    address|thread) echo "-DCMAKE_C_COMPILER=${CC:-clang-14} -DCMAKE_CXX_COMPILER=${CXX:-clang++-14}" ;;
    *) echo "" ;;
  esac
}
