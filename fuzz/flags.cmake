# Included from the top-level CMakeLists.txt when VBN_BUILD_FUZZ is on, before any library:
# the libraries get coverage instrumentation for libFuzzer and the address and undefined
# behaviour sanitizers; the fuzz targets themselves link libFuzzer's main (fuzz/CMakeLists.txt).
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "VBN_BUILD_FUZZ needs Clang (e.g. -DCMAKE_CXX_COMPILER=clang++), not ${CMAKE_CXX_COMPILER_ID}")
endif()
add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g)
add_link_options(-fsanitize=address,undefined)
