# -DLAZYCUBE_FUZZ=ON: every library object is compiled for libFuzzer (coverage counters, no
# main) with ASan+UBSan; the targets in fuzz/ link -fsanitize=fuzzer. Only clang has libFuzzer.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang" OR NOT CMAKE_C_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "LAZYCUBE_FUZZ=ON needs clang with libFuzzer (the C and C++ compilers are "
    "${CMAKE_C_COMPILER_ID} / ${CMAKE_CXX_COMPILER_ID}): configure a fresh build folder with "
    "-DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14, or run scripts/fuzz.sh")
endif()
if(LAZYCUBE_SANITIZER STREQUAL "thread")
  message(FATAL_ERROR "LAZYCUBE_FUZZ=ON needs ASan+UBSan: it cannot share a ThreadSanitizer build")
elseif(LAZYCUBE_SANITIZER STREQUAL "address")
  # The fuzz targets inside the ASan+UBSan build (cmake/Sanitizers.cmake has added its flags):
  # CI's smoke run builds them there instead of compiling the library a fourth time. Only the
  # edge counters libFuzzer needs are added, not the comparison hooks of fuzzer-no-link (each
  # compare becomes a call), so that the ASan tests run in that build at nearly their speed;
  # long runs (scripts/fuzz.sh --minutes) use build-fuzz/ with the full instrumentation.
  add_compile_options(-fsanitize-coverage=inline-8bit-counters,pc-table)
else()
  # -O1 -g1 after the build type's flags, as in the sanitizer build: fast to compile, line tables
  # for the reports.
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined -O1 -g1)
  add_link_options(-fsanitize=address,undefined)
endif()
