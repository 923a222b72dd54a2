# sample_service, the process the README demo and the end-to-end tests
# attach to, built like a typical release binary a user would trace: PIE,
# -O2, with debug info. Frame pointers and no sibling calls keep every traced
# call a real frame, so stacks and return probes are predictable; the source
# marks each traced function noipa/noinline + used. Included by
# tests/targets/ and, without the tests, by the top level (the demo's build).
find_package(Threads REQUIRED)

add_executable(sample_service ${CMAKE_CURRENT_LIST_DIR}/sample_service.c)
target_compile_options(sample_service PRIVATE -O2 -g -fPIE -fno-omit-frame-pointer -fno-optimize-sibling-calls
                       ${XREF_WARNINGS})
target_link_options(sample_service PRIVATE -pie)
target_link_libraries(sample_service PRIVATE Threads::Threads)
# build/sample_service, with the tests or without (the README names it).
set_target_properties(sample_service PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
