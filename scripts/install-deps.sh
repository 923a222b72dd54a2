#!/usr/bin/env bash
# Installs the Debian packages xref needs, by purpose: the one list of them.
#
#   scripts/install-deps.sh [PURPOSE...]   PURPOSE: build, plugin, package, test, bench, fuzz, all (default)
#
#   build   the helper (xref) and its BPF programs: what scripts/demo.sh needs
#   plugin  the LLDB plugin (liblldb-19)
#   package the Debian package (cpack -G DEB: dpkg-shlibdeps declares its
#           dependencies, `file` finds the binaries)
#   test    the test suite: GoogleTest, the debuggers, the peers it compares
#           with (bpftrace), the Debian programs it traces (redis, sqlite3,
#           nginx), the Rust target, libc's debug symbols; groff, man-db
#           and bash-completion, which check the man pages and Tab completion
#   bench   bench/: the peers the benchmarks measure against
#   fuzz    the libFuzzer targets (tests/fuzz)
#
# Idempotent: packages already present are not reinstalled, and apt is only
# asked to refresh its lists when something is missing.
set -euo pipefail

build=(build-essential cmake pkg-config git
       libbpf-dev bpftool clang-19 llvm-19 libelf-dev libdw-dev elfutils zlib1g-dev
       libcapstone-dev libzydis-dev libcli11-dev nlohmann-json3-dev libssl-dev libre2-dev
       binutils libiberty-dev libprotobuf-dev protobuf-compiler)
plugin=(liblldb-19-dev)
package=(dpkg-dev file)
test=(libgtest-dev lldb-19 python3-lldb-19 gdb bpftrace rustc redis-server redis-tools libc6-dbg sqlite3 nginx-light
      bash-completion man-db groff-base python3 clang linux-perf chromium golang-go)
bench=(bpftrace gdb redis-server redis-tools linux-perf)
fuzz=(libfuzzer-19-dev libclang-rt-19-dev)

purposes=("$@")
((${#purposes[@]} > 0)) || purposes=(all)
packages=()
for purpose in "${purposes[@]}"; do
  case "$purpose" in
    build) packages+=("${build[@]}") ;;
    plugin) packages+=("${plugin[@]}") ;;
    package) packages+=("${package[@]}") ;;
    test) packages+=("${test[@]}") ;;
    bench) packages+=("${bench[@]}") ;;
    fuzz) packages+=("${fuzz[@]}") ;;
    all) packages+=("${build[@]}" "${plugin[@]}" "${package[@]}" "${test[@]}" "${bench[@]}" "${fuzz[@]}") ;;
    *)
      echo "install-deps: unknown purpose '$purpose': use build, plugin, package, test, bench, fuzz or all" >&2
      exit 2
      ;;
  esac
done
mapfile -t packages < <(printf '%s\n' "${packages[@]}" | awk '!seen[$0]++')

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$package")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present (${purposes[*]})"
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "install-deps: run this script as root (or: sudo $0 ${purposes[*]})" >&2
  exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
