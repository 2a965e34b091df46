# -DLAZYCUBE_FUZZ=ON: every library object is compiled for libFuzzer (coverage counters, no
# main) with ASan+UBSan; the targets in fuzz/ link -fsanitize=fuzzer. Only clang has libFuzzer.
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang" OR NOT CMAKE_C_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "LAZYCUBE_FUZZ=ON needs clang with libFuzzer (the C and C++ compilers are "
    "${CMAKE_C_COMPILER_ID} / ${CMAKE_CXX_COMPILER_ID}): configure a fresh build folder with "
    "-DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14, or run scripts/fuzz.sh")
endif()
if(LAZYCUBE_SANITIZER)
  message(FATAL_ERROR "LAZYCUBE_FUZZ=ON brings its own ASan+UBSan: leave LAZYCUBE_SANITIZE off")
endif()
# -O1 -g1 after the build type's flags, as in the sanitizer build: fast to compile, line tables
# for the reports.
add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer
                    -fno-sanitize-recover=undefined -O1 -g1)
add_link_options(-fsanitize=address,undefined)
