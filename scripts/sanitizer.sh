# Sourced by setup.sh and test.sh: the sanitizer kinds their --sanitize[=KIND] flag (or env
# LAZYCUBE_SANITIZE) takes, and the build folder of each. What a kind builds is defined once,
# by LAZYCUBE_SANITIZE in cmake/Sanitizers.cmake, which the scripts pass the kind to.
#
#   (none), 0          no sanitizer       build/
#   address, 1         ASan + UBSan       build-asan/
#   thread             ThreadSanitizer    build-tsan/

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
