# ctest side of the fuzz targets (label fuzz; docs/reliability.md): the
# targets are a clang-19 project of their own (tests/fuzz/CMakeLists.txt),
# built into <build>/fuzz by scripts/fuzz.sh. fuzz.build builds them (a
# no-op when scripts/test.sh already did); then each target runs over its
# corpus for XREF_FUZZ_SECONDS (read when the test runs; default 30) and
# the test fails on any crash, hang, leak or sanitizer report.
set(fuzz_script ${CMAKE_SOURCE_DIR}/scripts/fuzz.sh)
set(fuzz_build_dir ${CMAKE_BINARY_DIR}/fuzz)

add_test(NAME fuzz.build COMMAND bash ${fuzz_script})
set_tests_properties(fuzz.build PROPERTIES LABELS fuzz FIXTURES_SETUP xref_fuzz_targets TIMEOUT 3600
                     ENVIRONMENT XREF_FUZZ_BUILD_DIR=${fuzz_build_dir})

file(GLOB fuzz_target_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*_fuzz.cpp)
foreach(source ${fuzz_target_sources})
  get_filename_component(name ${source} NAME_WE)
  string(REGEX REPLACE "_fuzz$" "" name ${name})
  add_test(NAME fuzz.${name} COMMAND bash ${fuzz_script} ${name})
  # libFuzzer bounds the run (-max_total_time, -timeout per input); the
  # ctest timeout is only a safety net for a long XREF_FUZZ_SECONDS.
  set_tests_properties(fuzz.${name} PROPERTIES LABELS fuzz FIXTURES_REQUIRED xref_fuzz_targets TIMEOUT 3600
                       ENVIRONMENT "XREF_FUZZ_BUILD_DIR=${fuzz_build_dir};XREF_FUZZ_SKIP_BUILD=1")
endforeach()
