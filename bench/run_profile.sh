#!/usr/bin/env bash
# bench/run_profile.sh: what `xref profile` costs (issue 27), beside perf
# record on the same run. Writes the "xref profile" section of
# docs/performance.md (between its profile-bench markers).
#
#   sudo bash bench/run_profile.sh    # from the repository root, after building
#
# The target is build/bench/profile_workload (bench/profile_workload.c: gcc
# -O2, PIE, no frame pointers): THREADS threads running work units through
# this program and libc for RUN_SECONDS after a go byte, counting their own
# units per wall second and per second of their own CPU time.
#
# Parts, all in one run:
#   1. Slowdown: rotated rounds of RUN_SECONDS runs, each in a fresh target:
#      two unprofiled runs (baseline, baseline2) and, at each of FREQS (99
#      and 999 Hz), `xref profile --callers dwarf`, `xref profile --callers
#      fp`, `perf record -g` and `perf record --call-graph dwarf`, each
#      attached (xref's "profiling" line; perf's enable acked on its control
#      FIFO) before the go byte and ending at the target's exit.
#   2. Tool CPU, same runs: user + sys of the capturing process
#      (bench/rusage_run.py), then of `xref profile report --by function` and
#      `--by caller`, or of `perf report --stdio` and `perf script`.
#   3. Stacks complete, same runs: xref's `stack_ends.complete` of its
#      samples; perf's samples whose outermost frame in `perf script` is
#      _start or clone3.
#   4. Report time: one REPORT_SECONDS capture at 999 Hz by each tool;
#      REPORT_REPEATS runs of each report on it, and the file sizes.
#   5. The BPF unwinder's own cost: STATS_RUNS captures per frequency with
#      kernel.bpf_stats_enabled=1; the profile program's run_time_ns and
#      run_cnt (bpftool, read while xref still holds it) over the capture's
#      samples and frames_walked.
#
# Knobs: ROUNDS (5), RUN_SECONDS (5), THREADS (2), FREQS ("99 999"),
# REPORT_SECONDS (10), REPORT_REPEATS (5), STATS_RUNS (3), BUILD_DIR (build),
# OUT (docs/performance.md), LOCK and KEEP_WORK (bench/lib.sh).
#
# Not a test: the goals get a verdict in the document, not an exit status;
# the script fails only when a run is not a valid measurement.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-5}
RUN_SECONDS=${RUN_SECONDS:-5}
THREADS=${THREADS:-2}
FREQS=${FREQS:-99 999}
REPORT_SECONDS=${REPORT_SECONDS:-10}
REPORT_REPEATS=${REPORT_REPEATS:-5}
STATS_RUNS=${STATS_RUNS:-3}

# shellcheck source=bench/lib.sh
source bench/lib.sh
bench_setup bench/run_profile.sh xrefprofile
for tool in perf python3 stat; do command -v "$tool" >/dev/null || die "$tool is missing"; done
TARGET=$(realpath "$BUILD_DIR/bench/profile_workload" 2>/dev/null) || true
[[ -x ${TARGET:-} ]] || die "build first: cmake --build build --target xref profile_workload (looked in $BUILD_DIR/bench/)"
PERF=$(command -v perf)
# The commit measured (the section names it, not the one it is reported at).
COMMIT_TEXT="\`$(git rev-parse --short HEAD 2>/dev/null || echo unknown)\`"
if git status --porcelain --untracked-files=no 2>/dev/null | grep -q .; then COMMIT_TEXT+=" plus uncommitted changes"; fi

# --- one run -------------------------------------------------------------------

# "user+sys seconds" of a bench/rusage_run.py output file; its wall seconds.
cpu_of() { awk '{ printf "%.6f", $1 + $2 }' "$1"; }
wall_of() { awk '{ printf "%.6f", $3 }' "$1"; }

# timed OUT_PREFIX CMD...: CMD under bench/rusage_run.py, stdout to
# OUT_PREFIX.out, stderr to OUT_PREFIX.err; it must exit 0.
timed() {
  local prefix=$1
  shift
  python3 bench/rusage_run.py "$prefix.rusage" -- "$@" >"$prefix.out" 2>"$prefix.err" ||
    die "$* exited with status $?: $(head -5 "$prefix.err")"
}

# xref profile MODE HZ on the target now running, until it says it profiles.
start_xref() { # MODE HZ
  CAPTURE=$WORK/capture.xprof
  rm -f "$CAPTURE"
  # Emptied here, not by the redirection below: that one runs in the
  # background child, and wait_for would meet the last run's "profiling"
  # line if it looked first (then the go byte went before xref attached).
  : >"$WORK/capture.err"
  python3 bench/rusage_run.py "$WORK/capture.rusage" -- "$XREF" profile --pid "$TARGET_PID" --freq "$2" \
    --callers "$1" --duration-ms 0 --out "$CAPTURE" >"$WORK/capture.out" 2>"$WORK/capture.err" {GO_FD}>&- &
  TRACER_PID=$!
  wait_for "$WORK/capture.err" '^xref: profiling PID' "$TRACER_PID" "xref profile"
}

# perf record MODE HZ on the target now running, started disabled and
# enabled through its control FIFO: the ack says it samples.
start_perf() { # fp|dwarf HZ
  local ctl=$WORK/perf.ctl ack=$WORK/perf.ack reply graph=(-g)
  [[ $1 == fp ]] || graph=(--call-graph "$1")
  CAPTURE=$WORK/perf.data
  rm -f "$ctl" "$ack" "$CAPTURE"
  mkfifo "$ctl" "$ack"
  python3 bench/rusage_run.py "$WORK/capture.rusage" -- "$PERF" record -q -e cpu-clock -F "$2" "${graph[@]}" \
    -p "$TARGET_PID" -o "$CAPTURE" -D -1 --control "fifo:$ctl,$ack" >"$WORK/capture.out" 2>"$WORK/capture.err" \
    {GO_FD}>&- &
  TRACER_PID=$!
  echo enable >"$ctl"
  read -r reply <"$ack"
  [[ $reply == ack* ]] || die "perf record answered $reply to enable"
}

# The tool ends with the target (xref: ended_by target_exited; perf: its
# events hang up); it must exit 0.
finish_tool() { # WHAT
  wait "$TRACER_PID" || die "$1 exited with status $?: $(head -5 "$WORK/capture.err")"
  TRACER_PID=""
}

# A capture's figures (the .xprof file, docs/xprof.md): "ENDED_BY SAMPLES
# COMPLETE FRAMES_WALKED OTHER_PROCESS LOSSES ENDS", ENDS the samples of
# stacks that are not whole by how they ended ("read_failed:3,no_cfi:1", or -).
xprof_figures() { # FILE
  jq -r '"\(.capture.ended_by) \([.samples[].count] | add // 0) \(.stack_ends.complete // 0) \(.frames_walked)
    \(.losses.other_process // 0) \(.losses | [.[]] | add // 0)
    \([.stack_ends | to_entries[] | select(.key != "complete" and .value > 0) | "\(.key):\(.value)"] | join(",") |
       if . == "" then "-" else . end)"' "$1" | tr '\n' ' '
  echo
}

# After an xref capture: its figures, then the two reports, timed.
xref_figures() { # VARIANT
  local ended
  local ended opened
  read -r ended SAMPLES WHOLE _ _ LOST ENDS < <(xprof_figures "$CAPTURE")
  opened=$(sed -n 's/^xref: profiling PID .* on \([0-9]*\) threads\?,.*/\1/p' "$WORK/capture.err")
  FAILED=""
  [[ $ended == target_exited ]] || FAILED="ended by $ended, expected target_exited"
  [[ $opened == "$THREADS" ]] || FAILED="${FAILED:+$FAILED; }events opened on ${opened:-?} threads of $THREADS"
  ((SAMPLES > 0)) || FAILED="${FAILED:+$FAILED; }no sample"
  [[ -z $FAILED ]] || return 0
  BYTES=$(stat -c %s "$CAPTURE")
  TOOL_CPU=$(cpu_of "$WORK/capture.rusage")
  timed "$WORK/report_function" "$XREF" profile report "$CAPTURE" --by function
  timed "$WORK/report_caller" "$XREF" profile report "$CAPTURE" --by caller
  REPORT_CPU=$(cpu_of "$WORK/report_function.rusage")
  SCRIPT_CPU=$(cpu_of "$WORK/report_caller.rusage")
  REPORT_WALL=$(wall_of "$WORK/report_function.rusage")
  SCRIPT_WALL=$(wall_of "$WORK/report_caller.rusage")
}

# perf script's samples, and those whose outermost frame is the process's
# root: _start (the main thread) or clone3/clone (threads libc started; the
# names the tests' complete_percent accepts) -> "SAMPLES WHOLE".
perf_whole() { # SCRIPT_OUTPUT
  awk 'BEGIN { RS = ""; FS = "\n" }
    {
      n++
      root = $NF
      sub(/^[ \t]*[0-9a-f]+ /, "", root); sub(/ \(.*$/, "", root); sub(/@.*/, "", root); sub(/\+0x[0-9a-f]+$/, "", root)
      if (root ~ /^(_start|clone3|clone|__clone3|__clone)$/) whole++
    }
    END { print n + 0, whole + 0 }' "$1"
}

perf_figures() { # VARIANT
  BYTES=$(stat -c %s "$CAPTURE")
  TOOL_CPU=$(cpu_of "$WORK/capture.rusage")
  timed "$WORK/report_perf" "$PERF" report -i "$CAPTURE" --stdio
  timed "$WORK/script_perf" "$PERF" script -i "$CAPTURE" --no-inline -F comm,tid,ip,sym,dso
  LOST=$(awk '/^# Total Lost Samples:/ { print $NF; exit }' "$WORK/report_perf.out")
  REPORT_CPU=$(cpu_of "$WORK/report_perf.rusage")
  SCRIPT_CPU=$(cpu_of "$WORK/script_perf.rusage")
  REPORT_WALL=$(wall_of "$WORK/report_perf.rusage")
  SCRIPT_WALL=$(wall_of "$WORK/script_perf.rusage")
  read -r SAMPLES WHOLE < <(perf_whole "$WORK/script_perf.out")
  ((SAMPLES > 0)) || die "$1: perf record took no sample"
}

# A run xref did not profile as asked (the events on fewer threads than
# the target has, an early end, no sample, an error) is not a measurement: it is kept
# in failures.tsv and the failed/ directory, counted in the document, and
# the run is repeated, up to 3 times.
run_checked() { # VARIANT [SECONDS]
  local attempt
  for attempt in 1 2 3; do
    FAILED=""
    run_variant "$@"
    [[ -n $FAILED ]] || return 0
    FAILURES=$((${FAILURES:-0} + 1))
    mkdir -p "$WORK/failed/$FAILURES"
    cp "$WORK/capture.out" "$WORK/capture.err" "$TARGET_LOG" "$WORK/failed/$FAILURES/"
    printf '%s\t%s\t%s\t%s\n' "$1" "$attempt" "$FAILED" \
      "$(grep -m1 '^  threads:' "$WORK/capture.out" | sed 's/^ *//')" >>"$WORK/failures.tsv"
    echo "bench: $1: xref profile failed ($FAILED); the run is repeated" >&2
  done
  die "$1: xref profile failed 3 times in a row ($FAILED)"
}

# run_variant VARIANT [SECONDS]: baseline, baseline2, or TOOL_MODE_HZ
# (xref_dwarf_99, perf_fp_999, ...): a fresh target, the tool attached, the
# go byte, the target's own figures, the tool's end, its reports.
run_variant() {
  local tool="" mode hz seconds=${2:-$RUN_SECONDS}
  start_target_args --threads "$THREADS" --seconds "$seconds"
  SAMPLES=- WHOLE=- LOST=- BYTES=- TOOL_CPU=- REPORT_CPU=- SCRIPT_CPU=- REPORT_WALL=- SCRIPT_WALL=- ENDS=-
  if [[ $1 != baseline* ]]; then
    IFS=_ read -r tool mode hz <<<"$1"
    "start_$tool" "$mode" "$hz"
  fi
  printf g >&"$GO_FD"
  wait_for "$TARGET_LOG" '^done' "$TARGET_PID" profile_workload
  UNITS_PER_S=$(awk '$1 == "units_per_s" { print $2 }' "$TARGET_LOG")
  UNITS_PER_CPU_S=$(awk '$1 == "units_per_cpu_s" { print $2 }' "$TARGET_LOG")
  finish_target
  [[ -n $tool ]] || return 0
  if [[ $tool == xref ]]; then
    local status=0
    wait "$TRACER_PID" || status=$?
    TRACER_PID=""
    if ((status != 0)); then
      FAILED="exit status $status: $(grep -m1 'error' "$WORK/capture.err")"
      return 0
    fi
  else
    finish_tool "$tool ($1)"
  fi
  "${tool}_figures" "$1"
}

# --- part 1-3: the rounds -------------------------------------------------------

VARIANTS=(baseline baseline2)
for hz in $FREQS; do VARIANTS+=("xref_dwarf_$hz" "xref_fp_$hz" "perf_fp_$hz" "perf_dwarf_$hz"); done

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
STARTED=$(date -u '+%Y-%m-%d %H:%M UTC')
echo "bench: $ROUNDS rounds of ${VARIANTS[*]}; $RUN_SECONDS s runs of $THREADS threads; load $LOAD_BEFORE"
RESULTS=$WORK/results.tsv
: >"$RESULTS"
: >"$WORK/failures.tsv"
for ((round = 1; round <= ROUNDS; round++)); do
  bench_lock
  for ((k = 0; k < ${#VARIANTS[@]}; k++)); do
    variant=${VARIANTS[$(((k + round - 1) % ${#VARIANTS[@]}))]}
    run_checked "$variant"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$variant" "$UNITS_PER_S" \
      "$UNITS_PER_CPU_S" "$TOOL_CPU" "$REPORT_CPU" "$SCRIPT_CPU" "$SAMPLES" "$WHOLE" "$BYTES" "$REPORT_WALL" \
      "$SCRIPT_WALL" "$LOST" "$(cut -d' ' -f1 /proc/loadavg)" "$ENDS" >>"$RESULTS"
    printf 'bench: round %d %-15s %9s units/s %9s units/CPU-s  tool %s s, reports %s + %s s CPU, %s of %s stacks whole\n' \
      "$round" "$variant" "$UNITS_PER_S" "$UNITS_PER_CPU_S" "$TOOL_CPU" "$REPORT_CPU" "$SCRIPT_CPU" "$WHOLE" "$SAMPLES"
  done
  bench_unlock
done

# --- part 4: report time on a REPORT_SECONDS capture at 999 Hz -----------------

# -> reports.tsv: tool, report, repeat, wall s, CPU s; captures.tsv: variant,
# samples, bytes, capture CPU s.
echo "bench: report time: $REPORT_SECONDS s captures at 999 Hz, $REPORT_REPEATS repeats"
: >"$WORK/reports.tsv"
: >"$WORK/captures.tsv"
for variant in xref_dwarf_999 perf_dwarf_999 perf_fp_999; do
  bench_lock
  run_checked "$variant" "$REPORT_SECONDS"
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$variant" "$SAMPLES" "$BYTES" "$TOOL_CPU" "$UNITS_PER_S" "$WHOLE" >>"$WORK/captures.tsv"
  for ((repeat = 1; repeat <= REPORT_REPEATS; repeat++)); do
    if [[ $variant == xref_* ]]; then
      for by in function caller; do
        timed "$WORK/report_$by" "$XREF" profile report "$CAPTURE" --by "$by"
        printf 'xref\t--by %s\t%s\t%s\t%s\n' "$by" "$repeat" "$(wall_of "$WORK/report_$by.rusage")" \
          "$(cpu_of "$WORK/report_$by.rusage")" >>"$WORK/reports.tsv"
      done
      [[ $repeat != 1 ]] || cp "$WORK/report_function.out" "$WORK/report_function_10s.txt"
    else
      timed "$WORK/report_perf" "$PERF" report -i "$CAPTURE" --stdio
      printf '%s\tperf report --stdio\t%s\t%s\t%s\n' "$variant" "$repeat" "$(wall_of "$WORK/report_perf.rusage")" \
        "$(cpu_of "$WORK/report_perf.rusage")" >>"$WORK/reports.tsv"
    fi
  done
  echo "bench: $variant: $SAMPLES samples, $BYTES bytes"
  bench_unlock
done

# --- part 5: the BPF unwinder's cost per sample and per frame -------------------

# The profile program among xref's descriptors (type perf_event): "NAME
# RUN_TIME_NS RUN_CNT".
profile_prog_stats() { # XREF_PID
  local ids
  ids=$(cat /proc/"$1"/fdinfo/* 2>/dev/null | awk '$1 == "prog_id:" { print $2 }' | sort -u)
  [[ -n $ids ]] || die "no BPF program among the fds of xref ($1)"
  for id in $ids; do bpftool prog show id "$id" --json; done |
    jq -rs 'map(select(.type == "perf_event")) |
      if length == 1 then "\(.[0].name) \(.[0].run_time_ns // 0) \(.[0].run_cnt // 0)" else error("perf_event programs: \(length)") end'
}

# -> bpf_stats.tsv: run, Hz, program, run_time_ns, run_cnt, samples,
# frames_walked, other-process samples, losses.
echo "bench: BPF statistics: $STATS_RUNS runs per frequency"
: >"$WORK/bpf_stats.tsv"
for ((run = 1; run <= STATS_RUNS; run++)); do
  for hz in $FREQS; do
    for attempt in 1 2 3; do
      bench_lock
      start_target_args --threads "$THREADS" --seconds "$RUN_SECONDS"
      echo 1 >/proc/sys/kernel/bpf_stats_enabled
      CAPTURE=$WORK/stats.xprof
      : >"$WORK/stats.err" # here, not in the background child: the loop below must not meet the last run's line
      "$XREF" profile --pid "$TARGET_PID" --freq "$hz" --callers dwarf --duration-ms 0 --out "$CAPTURE" \
        >"$WORK/stats.out" 2>"$WORK/stats.err" {GO_FD}>&- &
      TRACER_PID=$!
      until grep -q '^xref: profiling PID' "$WORK/stats.err" || ! alive "$TRACER_PID"; do sleep 0.02; done
      if ! grep -q "on $THREADS threads" "$WORK/stats.err"; then
        FAILURES=$((${FAILURES:-0} + 1))
        reason="$(grep -m1 -o 'on [0-9]* threads\?' "$WORK/stats.err" || true)"
        reason=${reason:+events opened $reason, of $THREADS}
        reason=${reason:-xref ended before profiling: $(head -1 "$WORK/stats.err")}
        printf 'statistics_%s\t%s\t%s\t-\n' "$hz" "$attempt" "$reason" >>"$WORK/failures.tsv"
        echo "bench: statistics run at $hz Hz: $reason; repeated" >&2
        stop_processes
        echo "$BPF_STATS_BEFORE" >/proc/sys/kernel/bpf_stats_enabled
        bench_unlock
        continue
      fi
      printf g >&"$GO_FD"
      # The target's threads have ended their work and wait for EOF: no more
      # samples; read the counters while xref still holds the program.
      wait_for "$TARGET_LOG" '^done' "$TARGET_PID" profile_workload
      read -r prog run_ns run_cnt < <(profile_prog_stats "$TRACER_PID")
      kill -INT "$TRACER_PID"
      wait "$TRACER_PID" || die "xref profile (statistics run) exited with status $?: $(head -5 "$WORK/stats.err")"
      TRACER_PID=""
      echo "$BPF_STATS_BEFORE" >/proc/sys/kernel/bpf_stats_enabled
      finish_target
      read -r ended samples _ frames other lost _ < <(xprof_figures "$CAPTURE")
      [[ $ended == interrupted ]] || die "statistics run: xref profile ended by $ended, expected interrupted"
      printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$run" "$hz" "$prog" "$run_ns" "$run_cnt" "$samples" "$frames" \
        "$other" "$lost" >>"$WORK/bpf_stats.tsv"
      echo "bench: bpf stats $run at $hz Hz: $prog $run_ns ns in $run_cnt runs; $samples samples, $frames frames"
      bench_unlock
      break
    done
  done
done

# --- docs/performance.md -------------------------------------------------------

LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
{
  declare -p ROUNDS RUN_SECONDS THREADS FREQS REPORT_SECONDS REPORT_REPEATS STATS_RUNS STARTED LOAD_BEFORE \
    LOAD_AFTER TRACEFS BPF_STATS_BEFORE COMMIT_TEXT
  echo "PERF_VERSION=$(printf '%q' "$("$PERF" --version)")"
  lock_text
} >"$WORK/context.sh"
write_section profile '^### Goals' '^### '
