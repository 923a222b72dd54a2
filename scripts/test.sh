#!/usr/bin/env bash
# Installs the Debian packages, builds, and runs every test with ctest.
# Run as root: the tests load real BPF programs and attach real uprobes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/mount-tracefs.sh
bash scripts/build.sh
bash scripts/fuzz.sh  # the fuzz targets (clang-19, ASan, UBSan) into build/fuzz; ctest runs them (label fuzz)
cd build
ctest --output-on-failure --timeout 600
