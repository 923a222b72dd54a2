# liblldb-19 for the LLDB plugin (lldb-plugin/), pinned to LLVM 19's own
# directories so another LLDB on the machine is never picked up; and
# lldb-19 for the plugin's tests (they fail or skip without it, see
# tests/support/require.h, so configure does not insist on it).
find_path(XREF_LLDB_INCLUDE_DIR NAMES lldb/API/LLDB.h PATHS /usr/lib/llvm-19/include NO_DEFAULT_PATH)
find_library(XREF_LLDB_LIBRARY NAMES lldb liblldb.so.1 PATHS /usr/lib/llvm-19/lib NO_DEFAULT_PATH)
if(NOT XREF_LLDB_INCLUDE_DIR OR NOT XREF_LLDB_LIBRARY)
  message(FATAL_ERROR "xref: liblldb-19 not found (/usr/lib/llvm-19/include/lldb/API/LLDB.h, "
                      "/usr/lib/llvm-19/lib/liblldb.so): install the Debian package liblldb-19-dev "
                      "(or run scripts/install-deps.sh as root)")
endif()
find_program(XREF_LLDB_PROGRAM NAMES lldb-19 PATHS /usr/lib/llvm-19/bin)
