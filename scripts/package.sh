#!/usr/bin/env bash
# Builds the Debian package build/xref_VERSION_amd64.deb: the helper, the
# LLDB plugin, the GDB front end, the man pages and bash completion, under
# the prefix /usr (docs/install.md). Install it with
#   apt-get install ./build/xref_VERSION_amd64.deb
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh build plugin package
# A build/ the tests configured keeps its tests; a new one builds only what
# the package holds.
parts=(-DXREF_BUILD_LLDB_PLUGIN=ON)
[[ -f build/CMakeCache.txt ]] || parts+=(-DXREF_BUILD_TESTS=OFF -DXREF_BUILD_BENCH=OFF)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr "${parts[@]}" >/dev/null
cmake --build build -j"$(nproc)" --target xref xref_lldb xref_manual_files
(cd build && cpack -G DEB -B "$PWD" >/dev/null)
ls -1 build/xref_*_amd64.deb
