#!/usr/bin/env bash
# Installs every Debian package xref needs to build, test and benchmark.
# Idempotent: packages already present are not reinstalled, and apt is only
# asked to refresh its lists when something is missing.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  libbpf-dev bpftool clang-19 llvm-19 libelf-dev libdw-dev elfutils zlib1g-dev
  libcapstone-dev libzydis-dev libcli11-dev nlohmann-json3-dev libgtest-dev libssl-dev libre2-dev
  liblldb-19-dev lldb-19 python3-lldb-19 gdb
  bpftrace binutils libiberty-dev rustc
  redis-server redis-tools libc6-dbg
  sqlite3 nginx-light
  libfuzzer-19-dev libclang-rt-19-dev
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$package")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "install-deps: run this script as root (or: sudo $0)" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
