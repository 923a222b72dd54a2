#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, clang-19 with ASan and UBSan) and
# runs one of them over its committed corpus (docs/reliability.md).
#
#   scripts/fuzz.sh                      build every target
#   scripts/fuzz.sh TARGET [SECONDS]     build, then fuzz TARGET for SECONDS
#                                        (default XREF_FUZZ_SECONDS, else 30)
#   scripts/fuzz.sh TARGET INPUT...      build, then run TARGET once on each INPUT file
#
# TARGET is a name of tests/fuzz/NAME_fuzz.cpp: fetch_spec, filter_expr,
# serve_protocol, saved_trace, proc_maps, elf_image, source_lines, eh_frame, mark_regex.
# The build goes to XREF_FUZZ_BUILD_DIR (default build/fuzz); inputs that
# find new coverage collect in its corpus/TARGET, a crash's input in its
# artifacts/TARGET/. Exits non-zero when the target crashes, hangs
# (XREF_FUZZ_INPUT_TIMEOUT seconds for one input, default 10) or leaks.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${XREF_FUZZ_BUILD_DIR:-$root/build/fuzz}"
jobs="${XREF_FUZZ_JOBS:-$(nproc)}"

# ctest's fuzz tests build once (fuzz.build) and set XREF_FUZZ_SKIP_BUILD=1.
if [[ "${XREF_FUZZ_SKIP_BUILD:-0}" != 1 ]]; then
  if [[ ! -f "$build/CMakeCache.txt" ]]; then
    cmake -S "$root/tests/fuzz" -B "$build" -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 >/dev/null
  fi
  cmake --build "$build" -j"$jobs"
fi
(($# == 0)) && exit 0

target="$1"
shift
fuzzer="$build/${target}_fuzz"
corpus="$root/tests/fuzz/corpus/$target"
if [[ ! -x "$fuzzer" || ! -d "$corpus" ]]; then
  echo "fuzz.sh: no fuzz target '$target' (see tests/fuzz/*_fuzz.cpp and tests/fuzz/corpus/)" >&2
  exit 2
fi

if (($# > 0)) && [[ -f "$1" ]]; then
  exec "$fuzzer" "$@"
fi

seconds="${1:-${XREF_FUZZ_SECONDS:-30}}"
work="$build/corpus/$target"
artifacts="$build/artifacts/$target"
mkdir -p "$work" "$artifacts"
seeds=("$corpus")
[[ -d "$build/seeds/$target" ]] && seeds+=("$build/seeds/$target")
# New inputs go to the first directory (build/, never the committed corpus).
exec "$fuzzer" -max_total_time="$seconds" -timeout="${XREF_FUZZ_INPUT_TIMEOUT:-10}" -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$artifacts/" "$work" "${seeds[@]}"
