#!/usr/bin/env bash
# Installs the Debian packages, builds xref, starts the bundled sample
# service and prints a real trace window from it: one request, in order, on
# the thread that handled it, with call sites and fetched values.
set -euo pipefail
cd "$(dirname "$0")/.."
# Only what the demo runs: the helper and the sample service (the test
# command, scripts/test.sh, installs and builds the rest into the same build/).
echo "== installing the Debian packages the helper needs (scripts/install-deps.sh build)"
bash scripts/install-deps.sh build
bash scripts/mount-tracefs.sh
# A new build/ has what the demo does not run turned off, and no debug
# information (-O2, as the tests build, without -g: the cold build is the
# most of the demo's time); a build/ the test command configured is kept as
# it is (only the two targets below are built).
settings=(-DCMAKE_INSTALL_PREFIX=/usr)
[[ -f build/CMakeCache.txt ]] || settings+=(-DXREF_BUILD_TESTS=OFF -DXREF_BUILD_LLDB_PLUGIN=OFF -DXREF_BUILD_BENCH=OFF
                                           -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG"
                                           "-DCMAKE_C_FLAGS_RELEASE=-O2 -DNDEBUG")
echo "== building the helper and the sample service (the first time about 4 minutes on 2 cores)"
cmake -S . -B build "${settings[@]}" >/dev/null
cmake --build build -j"$(nproc)" --target xref sample_service |
  { grep --line-buffered -E '^\[ *[0-9]+%\] (Building|Linking)' || true; }

xref=build/helper/xref
output=$(mktemp)
build/sample_service --threads 2 --requests 0 --interval-us 20000 >"$output" &
service=$!
trap 'kill $service 2>/dev/null || true; rm -f "$output"' EXIT
for _ in $(seq 50); do grep -q '^ready' "$output" && break; sleep 0.1; done

echo "== xref doctor"
$xref doctor
echo
echo "== xref trace --pid $service --start handle_request ... --max-windows 1"
$xref trace --pid "$service" --start handle_request \
  --functions validate,price_order,apply_fee,route_even,route_odd,settle \
  --fetch-at price_order 'asset=%di:u64,amount=%si:u64' \
  --fetch-ret apply_fee 'fee=%ax:u64' \
  --max-windows 1 --duration-ms 10000
echo
first=$(awk '$1 == "func" {print $3; exit}' "$output")
echo "== xref resolve --pid $service $first"
$xref resolve --pid "$service" "$first"
