#!/usr/bin/env bash
# Installs the Debian packages, builds xref, starts the bundled sample
# service and shows what xref sees in it: the host's capabilities, the
# process's modules, and live addresses resolved to static VAs and symbols.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/mount-tracefs.sh
bash scripts/build.sh >/dev/null

xref=build/helper/xref
output=$(mktemp)
build/tests/targets/sample_service --threads 2 --requests 0 >"$output" &
service=$!
trap 'kill $service 2>/dev/null || true; rm -f "$output"' EXIT
for _ in $(seq 50); do grep -q '^ready' "$output" && break; sleep 0.1; done

echo "== xref doctor"
$xref doctor
echo
echo "== xref maps --pid $service"
$xref maps --pid "$service"
echo
addresses=$(awk '$1 == "func" {print $3}' "$output" | head -4)
echo "== xref resolve --pid $service $(echo $addresses)"
# shellcheck disable=SC2086
$xref resolve --pid "$service" $addresses
