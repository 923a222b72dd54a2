# pprof export (render/profile_pprof.cpp): the profile.proto messages are
# compiled by Debian's protoc and linked to Debian's libprotobuf.
# scripts/install-deps.sh installs both packages.
xref_require_pkg(PROTOBUF protobuf libprotobuf-dev)
xref_require_program(XREF_PROTOC protoc protobuf-compiler)

# xref_protobuf_library(TARGET ROOT PROTO): a static library of the C++ that
# protoc writes for ROOT/PROTO (a path relative to ROOT, so the generated
# header is included as "PROTO-without-.proto.pb.h" from the build tree).
function(xref_protobuf_library target root proto)
  string(REGEX REPLACE "\\.proto$" "" stem ${proto})
  set(out ${CMAKE_CURRENT_BINARY_DIR}/protobuf)
  add_custom_command(
    OUTPUT ${out}/${stem}.pb.cc ${out}/${stem}.pb.h
    COMMAND ${CMAKE_COMMAND} -E make_directory ${out}
    COMMAND ${XREF_PROTOC} --proto_path=${root} --cpp_out=${out} ${root}/${proto}
    DEPENDS ${root}/${proto}
    COMMENT "protoc: ${proto}"
    VERBATIM)
  add_library(${target} STATIC ${out}/${stem}.pb.cc)
  # Generated code: not ours to warn about.
  target_compile_options(${target} PRIVATE -w)
  target_include_directories(${target} SYSTEM PUBLIC ${out})
  target_link_libraries(${target} PUBLIC PkgConfig::PROTOBUF)
endfunction()
