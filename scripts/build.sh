#!/usr/bin/env bash
# Configures and builds everything (helper, BPF skeletons, tests) in build/.
set -euo pipefail
cd "$(dirname "$0")/.."
# Every part on (a build/ the demo configured has some off).
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr -DXREF_BUILD_TESTS=ON -DXREF_BUILD_LLDB_PLUGIN=ON \
  -DXREF_BUILD_BENCH=ON >/dev/null
cmake --build build -j"$(nproc)"
