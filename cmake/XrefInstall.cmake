# `cmake --install` and the Debian package (CPack): xref installed the way
# Debian tools are. docs/install.md shows the layout.
#
# With the prefix /usr (the package's, and scripts/build.sh's), the
# debuggers load xref by themselves: LLDB loads every library in its system
# plugin directory at start, and Debian's gdb sources every file in
# /etc/gdb/gdbinit.d. Under another prefix those two files are not installed
# and one line in ~/.lldbinit / ~/.gdbinit does it (docs/install.md).

set(XREF_LLDB_SYSTEM_PLUGIN_DIR "/usr/lib/lldb/plugins"
    CACHE PATH "Where LLDB loads plugins from at start (Debian's lldb-19: /usr/lib/lldb/plugins)")
set(XREF_GDB_SYSTEM_INIT_DIR "/etc/gdb/gdbinit.d"
    CACHE PATH "Where gdb sources every file at start (Debian's gdb: --with-system-gdbinit-dir)")
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(xref_autoload_default ON)
else()
  set(xref_autoload_default OFF)
endif()
option(XREF_INSTALL_DEBUGGER_AUTOLOAD "Install the files that make LLDB and gdb load xref at start"
       ${xref_autoload_default})

set(XREF_INSTALL_LLDB_DIR ${CMAKE_INSTALL_LIBDIR}/xref/lldb)
set(XREF_INSTALL_GDB_DIR ${CMAKE_INSTALL_DATADIR}/xref/gdb)

# The helper.
install(TARGETS xref RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# The LLDB plugin, with its Tab-completion shim beside it (where the plugin
# looks, after resolving the symlink LLDB loaded it through).
if(XREF_BUILD_LLDB_PLUGIN)
  install(TARGETS xref_lldb LIBRARY DESTINATION ${XREF_INSTALL_LLDB_DIR})
  install(FILES ${CMAKE_SOURCE_DIR}/lldb-plugin/xref_complete.py DESTINATION ${XREF_INSTALL_LLDB_DIR})
  if(XREF_INSTALL_DEBUGGER_AUTOLOAD)
    set(xref_link ${CMAKE_BINARY_DIR}/install/lldb/libxref_lldb.so)
    file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/install/lldb)
    file(CREATE_LINK ${CMAKE_INSTALL_FULL_LIBDIR}/xref/lldb/libxref_lldb.so ${xref_link} SYMBOLIC)
    install(FILES ${xref_link} DESTINATION ${XREF_LLDB_SYSTEM_PLUGIN_DIR})
  endif()
endif()

# The GDB front end: the package and its loader, and where the installed
# helper is (gdb-python/xref/frontend.py reads installed.py).
install(FILES ${CMAKE_SOURCE_DIR}/gdb-python/xref.py DESTINATION ${XREF_INSTALL_GDB_DIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/gdb-python/xref DESTINATION ${XREF_INSTALL_GDB_DIR}
        FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
file(WRITE ${CMAKE_BINARY_DIR}/install/gdb/installed.py
     "# Written by cmake/XrefInstall.cmake: the helper installed with this package.\n"
     "HELPER = \"${CMAKE_INSTALL_FULL_BINDIR}/xref\"\n")
install(FILES ${CMAKE_BINARY_DIR}/install/gdb/installed.py DESTINATION ${XREF_INSTALL_GDB_DIR}/xref)
if(XREF_INSTALL_DEBUGGER_AUTOLOAD)
  file(WRITE ${CMAKE_BINARY_DIR}/install/gdb/xref.gdb
       "# Adds the `xref` command to every gdb (installed with xref; ${CMAKE_INSTALL_FULL_DOCDIR}/gdb.md).\n"
       "source ${CMAKE_INSTALL_FULL_DATADIR}/xref/gdb/xref.py\n")
  install(FILES ${CMAKE_BINARY_DIR}/install/gdb/xref.gdb DESTINATION ${XREF_GDB_SYSTEM_INIT_DIR})
endif()

# Man pages and bash completion, written by the built helper from its own
# CLI11 definitions (helper/manual, target xref_manual_files).
if(TARGET xref_manual_files)
  install(DIRECTORY ${CMAKE_BINARY_DIR}/man/ DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 FILES_MATCHING PATTERN "*.1")
  install(FILES ${CMAKE_BINARY_DIR}/completion/xref DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
endif()

# The guides.
install(FILES ${CMAKE_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR})

# The Debian package: `cpack -G DEB` in the build directory (scripts/package.sh)
# writes xref_VERSION_amd64.deb. Its Depends come from dpkg-shlibdeps over
# the installed binaries, so they follow what the code links.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME xref)
set(CPACK_PACKAGE_VENDOR "xref")
set(CPACK_PACKAGE_CONTACT "xref developers <xref@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "live traces and probes of running processes, in gdb, LLDB and the shell")
string(CONCAT CPACK_DEBIAN_PACKAGE_DESCRIPTION
       "What a process does next, in order, without stopping it: eBPF uprobes\n"
       "and perf events mapped back to symbols, source lines and the debugger's\n"
       "breakpoints, as a command-line tool (text and JSON) and as an `xref`\n"
       "command inside gdb and lldb-19.")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "gdb, bash-completion, man-db")
set(CPACK_STRIP_FILES ON)
include(CPack)
