#!/usr/bin/env bash
# bench/run_probe.sh: what `xref probe` costs (issue 15), beside its peers on
# the same run. Writes the "xref probe" section of docs/performance.md.
#
#   sudo bash bench/run_probe.sh    # from the repository root, after building
#
# Two parts:
#   1. Per hit: `xref probe --pid P hot --count --duration-ms 0`, stopped with
#      SIGINT after bench_target's timed loop, against bpftrace `count()`,
#      a bare tracefs uprobe and no probe, all on the same instruction
#      (hot's first), in rotated rounds (bench/lib.sh, as bench/run.sh);
#      then the BPF programs' own run time in separate runs.
#   2. Attach time of 1,000 addresses: `xref probe` on the 1,000 functions
#      of build/bench/many_functions, and bpftrace on the same 1,000
#      (bench/probe_attach.py).
#
# Knobs: ROUNDS (15), CALLS (15000), STATS_RUNS (3), ATTACH_ROUNDS (7),
# BPFTRACE_ATTACH_ROUNDS (3; 0 leaves bpftrace out of part 2), BUILD_DIR
# (build), OUT (docs/performance.md), LOCK (a file to flock per round and
# per attach run, so other BPF work on the machine waits for a round, not
# the whole run), KEEP_WORK (bench/lib.sh).
#
# Not a test: the goals get a verdict in the document, not an exit status;
# the script fails only when a run is not a valid measurement.
set -euo pipefail
cd "$(dirname "$0")/.."

# ROUNDS, CALLS and STATS_RUNS default in bench/lib.sh, as for bench/run.sh:
# 15 rounds of four short runs take about a minute. One bpftrace attach run
# takes about two minutes (its detach of 1,000 perf uprobes).
ATTACH_ROUNDS=${ATTACH_ROUNDS:-7}
BPFTRACE_ATTACH_ROUNDS=${BPFTRACE_ATTACH_ROUNDS:-3}
VARIANTS=(baseline bare_uprobe bpftrace xref_probe)

# shellcheck source=bench/lib.sh
source bench/lib.sh
bench_setup bench/run_probe.sh xrefprobe
MANY=$(realpath "$BUILD_DIR/bench/many_functions" 2>/dev/null) || true
[[ -x ${MANY:-} ]] || die "build first: cmake --build build --target many_functions (looked in $BUILD_DIR/bench/)"

# --- part 1: the probe site, and xref probe as a variant ----------------------

# One probe site: hot's first instruction. hot has no endbr64, so xref's
# entry probe goes on that same byte (each run checks probe_va); the bare
# uprobe gets its file offset and bpftrace the symbol, which is the same
# address.
find_hot
PROBE_OFFSETS=("$HOT_OFFSET")
BARE_NAMES=(hot)
HITS_PER_CALL=1

bpftrace_program() { echo "uprobe:$TARGET:hot { @c = count(); }"; }

xref_probe_args() { # PID -> XREF_ARGS
  XREF_ARGS=(probe --pid "$1" hot --count --duration-ms 0 --json)
}

# Started before the go byte, stopped with SIGINT after the loop: its counts
# cover the loop and nothing else runs hot. Checked: every address's hits,
# and the summary's, equal the calls; the probe sat on hot's first byte;
# the run stopped because it was interrupted.
run_xref_probe() {
  CALLS_RUN=$CALLS
  start_target "$CALLS_RUN"
  expect_unarmed
  xref_probe_args "$TARGET_PID"
  start_xref '^xref: probing PID' "${XREF_ARGS[@]}"
  go_and_measure
  finish_xref --interrupt
  finish_target
  local hits address_hits probe_va stop not_counted
  read -r hits address_hits probe_va stop not_counted < <(jq -r \
    '"\(.summary.hits) \([.addresses[].hits] | join(",")) \(.addresses[0].probe_va) \(.summary.stop_reason) \(.summary.not_counted)"' \
    "$XREF_OUT")
  [[ $stop == interrupted ]] || die "xref_probe: stop_reason $stop, expected interrupted"
  [[ $((probe_va)) == $((HOT_VA)) ]] || die "xref_probe: probed $probe_va, not hot's first instruction $HOT_VA"
  [[ $not_counted == 0 ]] || die "xref_probe: $not_counted hits not counted"
  check_hits "xref_probe (addresses[].hits)" "$address_hits" "$CALLS_RUN"
  check_hits "xref_probe (summary.hits)" "$hits" "$CALLS_RUN"
  HITS_SEEN=$hits
}

run_variant() { "run_$1"; }
expected_program_runs() { echo $((CALLS * HITS_PER_CALL)); }

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
STARTED=$(date -u '+%Y-%m-%d %H:%M UTC')
echo "bench: hot() at $HOT_VA (file offset $HOT_OFFSET): $HITS_PER_CALL probe hit per call"
echo "bench: $ROUNDS rounds of ${VARIANTS[*]}; $CALLS calls per run"
timed_rounds "${VARIANTS[@]}"
bpf_stats_runs bpftrace xref_probe

# --- part 2: attach time of 1,000 addresses ----------------------------------

# Rounds of xref on all 1,000, xref on one (its fixed start-up), and in the
# first BPFTRACE_ATTACH_ROUNDS rounds bpftrace, far slower to attach and to
# detach; each run in a fresh target, under LOCK.
echo "bench: attach time: $ATTACH_ROUNDS rounds of xref probe, $BPFTRACE_ATTACH_ROUNDS with bpftrace, on $MANY"
: >"$WORK/attach.tsv"
for ((run = 1; run <= ATTACH_ROUNDS; run++)); do
  tools=(xref xref_1)
  ((run > BPFTRACE_ATTACH_ROUNDS)) || tools+=(bpftrace)
  for tool in "${tools[@]}"; do
    bench_lock
    python3 bench/probe_attach.py --tool "$tool" --run "$run" --xref "$XREF" --target "$MANY" --work "$WORK" \
      >>"$WORK/attach.tsv"
    bench_unlock
  done
done

# --- docs/performance.md -------------------------------------------------------

LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
{
  declare -p ROUNDS CALLS STATS_RUNS ATTACH_ROUNDS BPFTRACE_ATTACH_ROUNDS HITS_PER_CALL HOT_VA HOT_OFFSET \
    TRACEFS GROUP STARTED LOAD_BEFORE LOAD_AFTER
  lock_text
  echo "BPFTRACE_COMMAND=$(printf '%q' "bpftrace -p PID -e '$(bpftrace_program)'")"
  xref_probe_args PID
  echo "XREF_COMMAND=$(printf '%q' "build/helper/xref ${XREF_ARGS[*]}")"
} | sed "s|$TARGET|build/bench/bench_target|g" >"$WORK/context.sh"
write_section probe '^### Per hit' '^### Every round'
