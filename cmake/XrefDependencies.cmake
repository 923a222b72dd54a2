# Finds every dependency and stops with the Debian package that provides it.
# scripts/install-deps.sh installs all of them.
find_package(PkgConfig REQUIRED)

function(xref_require_pkg var module package)
  pkg_check_modules(${var} QUIET IMPORTED_TARGET ${module})
  if(NOT ${var}_FOUND)
    message(FATAL_ERROR "xref: '${module}' not found: install the Debian package ${package} "
                        "(or run scripts/install-deps.sh as root)")
  endif()
endfunction()

function(xref_require_program var name package)
  find_program(${var} NAMES ${name} PATHS /usr/sbin /usr/lib/llvm-19/bin)
  if(NOT ${var})
    message(FATAL_ERROR "xref: program '${name}' not found: install the Debian package ${package} "
                        "(or run scripts/install-deps.sh as root)")
  endif()
endfunction()

function(xref_require_header var header package)
  find_path(${var} NAMES ${header} PATHS /usr/include /usr/lib/llvm-19/include)
  if(NOT ${var})
    message(FATAL_ERROR "xref: header '${header}' not found: install the Debian package ${package} "
                        "(or run scripts/install-deps.sh as root)")
  endif()
endfunction()

xref_require_pkg(LIBBPF libbpf libbpf-dev)
xref_require_pkg(LIBELF libelf libelf-dev)
# DWARF line tables (shared/source_lines.h); zlib for the .gnu_debuglink CRC.
xref_require_pkg(LIBDW libdw libdw-dev)
xref_require_pkg(ZLIB zlib zlib1g-dev)
xref_require_pkg(CAPSTONE capstone libcapstone-dev)
# Zydis has no pkg-config file, only a CMake package (which finds Zycore).
find_package(zydis 4.0 CONFIG QUIET)
if(NOT zydis_FOUND)
  message(FATAL_ERROR "xref: Zydis 4 not found: install the Debian package libzydis-dev "
                      "(or run scripts/install-deps.sh as root)")
endif()
xref_require_pkg(LIBCRYPTO libcrypto libssl-dev)
xref_require_pkg(RE2 re2 libre2-dev)
xref_require_header(CLI11_INCLUDE_DIR CLI/CLI.hpp libcli11-dev)
xref_require_header(NLOHMANN_JSON_INCLUDE_DIR nlohmann/json.hpp nlohmann-json3-dev)
xref_require_header(LIBIBERTY_INCLUDE_DIR libiberty/demangle.h libiberty-dev)
find_library(LIBIBERTY_LIBRARY NAMES libiberty.a iberty)
if(NOT LIBIBERTY_LIBRARY)
  message(FATAL_ERROR "xref: libiberty not found: install the Debian package libiberty-dev")
endif()

xref_require_program(XREF_CLANG_BPF clang-19 clang-19)
xref_require_program(XREF_BPFTOOL bpftool bpftool)
xref_require_program(XREF_LLVM_STRIP llvm-strip-19 llvm-19)

if(XREF_BUILD_TESTS OR NOT DEFINED XREF_BUILD_TESTS)
  find_package(GTest QUIET)
  if(NOT GTest_FOUND)
    message(FATAL_ERROR "xref: GoogleTest not found: install the Debian package libgtest-dev")
  endif()
endif()
