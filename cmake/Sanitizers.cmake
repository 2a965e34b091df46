# LAZYCUBE_SANITIZE: which sanitizer the build is instrumented with. The one place that says what
# each value means (scripts/setup.sh and scripts/test.sh pass --sanitize[=KIND] straight through):
#
#   OFF (or empty, 0, FALSE, NO)   no sanitizer
#   ON or address (1, TRUE, YES)   AddressSanitizer + UndefinedBehaviorSanitizer   (build-asan/)
#   thread                         ThreadSanitizer                                 (build-tsan/)
#
# Anything else stops the configure step. Sets LAZYCUBE_SANITIZER to "", "address" or "thread"
# (what the rest of the build tests) and adds the compile and link flags.
set(LAZYCUBE_SANITIZE OFF CACHE STRING
  "Sanitizer build: OFF, ON/address (ASan+UBSan) or thread (TSan)")
set_property(CACHE LAZYCUBE_SANITIZE PROPERTY STRINGS OFF address thread)

string(TOLOWER "${LAZYCUBE_SANITIZE}" _lazycube_sanitize)
if(_lazycube_sanitize MATCHES "^(|off|0|false|no)$")
  set(LAZYCUBE_SANITIZER "")
elseif(_lazycube_sanitize MATCHES "^(on|1|true|yes|address)$")
  set(LAZYCUBE_SANITIZER address)
elseif(_lazycube_sanitize STREQUAL "thread")
  set(LAZYCUBE_SANITIZER thread)
else()
  message(FATAL_ERROR "LAZYCUBE_SANITIZE='${LAZYCUBE_SANITIZE}' is not a sanitizer build: "
    "use OFF, ON/address (ASan+UBSan) or thread (TSan)")
endif()

# -O1 -g1 (line tables) after the build type's flags: the usual sanitizer setting, and it halves
# the compile time of -O2 -g under ASan (CI builds everything twice).
# LAZYCUBE_SANITIZER_ADDRESS / _THREAD tell the code which build it is in, with either compiler
# (GCC defines __SANITIZE_ADDRESS__, clang 14 only answers __has_feature).
if(LAZYCUBE_SANITIZER STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined -O1 -g1)
  add_compile_definitions(LAZYCUBE_SANITIZER_ADDRESS=1)
  add_link_options(-fsanitize=address,undefined)
elseif(LAZYCUBE_SANITIZER STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer -O1 -g1)
  add_compile_definitions(LAZYCUBE_SANITIZER_THREAD=1)
  add_link_options(-fsanitize=thread)
endif()
