#!/usr/bin/env bash
# Installs the Debian packages, builds xref, starts the bundled sample
# service and prints a real trace window from it: one request, in order, on
# the thread that handled it, with call sites and fetched values.
set -euo pipefail
cd "$(dirname "$0")/.."
# Only what the demo runs: the helper and the sample service (the test
# command, scripts/test.sh, installs and builds the rest into the same build/).
bash scripts/install-deps.sh build
bash scripts/mount-tracefs.sh
# A new build/ has the parts the demo does not run turned off; one the test
# command configured keeps them (only the two targets below are built).
parts=()
[[ -f build/CMakeCache.txt ]] || parts=(-DXREF_BUILD_TESTS=OFF -DXREF_BUILD_LLDB_PLUGIN=OFF -DXREF_BUILD_BENCH=OFF)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr "${parts[@]}" >/dev/null
cmake --build build -j"$(nproc)" --target xref sample_service >/dev/null

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
