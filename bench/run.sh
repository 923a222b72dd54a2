#!/usr/bin/env bash
# bench/run.sh: what one probe hit costs under `xref trace`, against a bare
# tracefs uprobe, bpftrace and gdb on the same probe sites, measured side by
# side (interleaved, ROUNDS rounds) in one run. Writes docs/performance.md.
#
#   sudo bash bench/run.sh          # from the repository root, after building
#
# Environment knobs: ROUNDS (15), CALLS (15000), GDB_CALLS (400),
# STATS_RUNS (3), BUILD_DIR (build), OUT (docs/performance.md), LOCK (a file
# to flock per round, see bench/lib.sh).
#
# It rewrites the document but keeps the sections the other benchmarks own,
# each rerun on its own: bench/run_probe.sh (the same method for `xref
# probe`, sharing bench/lib.sh and bench/report_lib.sh with this script),
# bench/run_attach.sh, bench/run_modes.sh and bench/run_modules.sh.
#
# Not a test: the goals get a verdict in the document, not an exit status;
# the script fails only when a run is not a valid measurement.
set -euo pipefail
cd "$(dirname "$0")/.."

# ROUNDS, CALLS and STATS_RUNS default in bench/lib.sh: 15 rounds of ~0.4-1 s
# runs take about 2.5 minutes.
GDB_CALLS=${GDB_CALLS:-400}
RINGBUF_BYTES=$((64 << 20))
VARIANTS=(baseline bare_uprobe bpftrace xref_traced xref_untraced gdb)

# shellcheck source=bench/variants.sh
source bench/variants.sh

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
STARTED=$(date -u '+%Y-%m-%d %H:%M UTC')

# --- the timed rounds ------------------------------------------------------

echo "bench: hot() at $HOT_VA, rets at ${RET_VAS[*]}: $HITS_PER_CALL probe hits per call"
echo "bench: $ROUNDS rounds of ${VARIANTS[*]}; $CALLS calls per run ($GDB_CALLS under gdb)"
timed_rounds "${VARIANTS[@]}"

# --- the BPF programs' own time per hit --------------------------------------

bpf_stats_runs bpftrace xref_traced xref_untraced

# --- docs/performance.md -----------------------------------------------------

LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
{
  declare -p ROUNDS CALLS GDB_CALLS STATS_RUNS HITS_PER_CALL HOT_VA RET_VAS RET_SYMBOLS PROBE_OFFSETS \
    TRACEFS GROUP STARTED LOAD_BEFORE LOAD_AFTER
  echo "BPFTRACE_COMMAND=$(printf '%q' "bpftrace -p PID -e '$(bpftrace_program)'")"
  xref_args PID
  echo "XREF_COMMAND=$(printf '%q' "build/helper/xref ${XREF_ARGS[*]}")"
} | sed "s|$TARGET|build/bench/bench_target|g" >"$WORK/context.sh"
mkdir -p "$(dirname "$OUT")"
bash bench/report.sh "$WORK" >"$WORK/report.md"
# Keep the sections other benchmarks wrote (xref probe, attach time, tracing
# modes, module size).
python3 bench/doc_section.py keep "$OUT" "$WORK/report.md"
cp "$WORK/report.md" "$OUT"
echo "bench: wrote $OUT"
sed -n '/^## Results/,/^## Every round/p' "$OUT" | sed '$d'
