#!/usr/bin/env bash
# bench/run_drain.sh: the event path at ring-buffer speed (issue 16). How
# fast `xref trace` takes events from its ring buffer through windows to its
# output, and what that costs the helper in CPU time per event, in each
# output format, beside bpftrace printing the same hits. Writes the
# "Event path: drain speed (issue 16)" section of docs/performance.md.
#
#   sudo bash bench/run_drain.sh    # from the repository root, after building
#
# The target, build/bench/drain_target --threads N (bench/drain_target.c),
# loops handle_request(i) -> validate(i) on N threads as fast as it can:
# under `xref trace --start handle_request --functions validate` every call
# is one window of 4 events. It starts its loop on a go byte, sent once the
# tracer has attached, and ends it LOOP_MS later, inside the tracer's
# TRACE_MS, so every call of the loop is traced and its count is the ground
# truth (4 events per call).
#
# Every round runs, each in a fresh target and in an order rotated from
# round to round:
#   text, json, jsonl   `xref trace --pid P --start handle_request --functions
#                       validate --duration-ms TRACE_MS` [--json|--jsonl],
#                       output to a file, VARIANT_THREADS target threads;
#   serve               the same trace as a session of `xref serve`
#                       (bench/serve_client.py writes its window events to a
#                       file; the CPU time is xref serve's only);
#   bpftrace            bpftrace 0.17 printing every hit (tid, kind, time,
#                       arg0 or retval) from a uprobe and a uretprobe on both
#                       functions, exit() after TRACE_MS, output to a file;
#   X_idle              each of those on a target that never gets its go
#                       byte: the tracer's fixed cost (start-up, attach, an
#                       idle TRACE_MS, detach) at 0 events;
#   sweep_T             jsonl with T target threads, for T in THREADS;
#   ring_now            jsonl with COMPARE_THREADS (16) target threads and a
#                       small ring buffer (--ringbuf-bytes SMALL_RING, 65536),
#                       so that events are lost: the loss accounting under
#                       pressure (kept + lost against 4 x calls, and every
#                       window of the output that lost events marked);
# and with BEFORE=/path/to/xref (the engine before issue 16, copied into the
# work directory at the start like the current one):
#   cmp_now_jsonl, cmp_before_jsonl, cmp_now_text, cmp_before_text
#                       --jsonl and text at COMPARE_THREADS target threads,
#                       default ring buffer, the current binary and BEFORE;
#   cmp_before_jsonl_idle, cmp_before_text_idle
#                       BEFORE's fixed cost (its marginal CPU per event; the
#                       current binary's are jsonl_idle and text_idle);
#   ring_before         ring_now with BEFORE.
# Those runs are not held to the checks that make the other runs valid
# measurements in their accounting (kept + lost against 4 x calls, the
# output against the summary): there those are the result, and the report
# gives them as they are.
# The tracer's CPU time is user + system from wait4 (bench/rusage_run.py):
# per event (its events: xref's summary, serve's window events, bpftrace's
# printed lines) including the fixed cost, and marginal: (CPU - the same
# round's idle CPU) / events.
#
# Knobs: ROUNDS (5), THREADS (the sweep: "1 2 4 8 16"), VARIANT_THREADS (4),
# COMPARE_THREADS (16), SMALL_RING (65536; 0 leaves out the ring_ runs),
# BEFORE (an xref binary of the engine before issue 16; unset: no cmp_ and
# ring_before runs), BEFORE_LABEL (what the report calls it: "before"),
# TRACE_MS (2000), LOOP_MS (1500), BUILD_DIR (build), OUT
# (docs/performance.md), LOCK (FILE[:FILE...]: every run holds flock on
# them, see bench/lib.sh), KEEP_WORK (keep the raw results: rerun
# `python3 bench/report_drain.py WORK` on them).
#
# Not a test: the goals get a verdict in the document, not an exit status;
# the script fails only when a run is not a valid measurement, saying why.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-5}
# Another target: DRAIN_TARGET=PATH, speaking drain_target's protocol (on
# stdout "ready PID" and "threads N"; a go byte on stdin starts its loop,
# EOF or a second byte ends it; then "loop_ns X" and "calls_total X"), with
# START_FUNCTION calling CALLEE_FUNCTION once per call (symbols as nm
# prints them: plain C names).
START_FUNCTION=${START_FUNCTION:-handle_request}
CALLEE_FUNCTION=${CALLEE_FUNCTION:-validate}
THREADS=${THREADS:-1 2 4 8 16}
VARIANT_THREADS=${VARIANT_THREADS:-4}
COMPARE_THREADS=${COMPARE_THREADS:-16}
SMALL_RING=${SMALL_RING:-65536}
BEFORE=${BEFORE:-}
BEFORE_LABEL=${BEFORE_LABEL:-before}
TRACE_MS=${TRACE_MS:-2000}
LOOP_MS=${LOOP_MS:-1500}
EVENTS_PER_CALL=4
FORMATS=(text json jsonl serve bpftrace)

# shellcheck source=bench/lib.sh
source bench/lib.sh
bench_setup bench/run_drain.sh xrefdrain
# Which build was copied, said in the report: the build tree may change
# during a long run.
XREF_BUILT="$(date -u -r "$BUILD_DIR/helper/xref" '+%Y-%m-%d %H:%M UTC'), sha256 $(sha256sum "$XREF" | cut -c1-12)"
# The commit the current binary is said to be: HEAD, whether the tree was
# dirty, and which of the uncommitted files go into the helper, each said to
# be modified before or after the binary was linked.
# shellcheck source=bench/report_lib.sh
source bench/report_lib.sh # commit_text
NOW_COMMIT=$(commit_text)
NOW_DIRTY=$(git status --porcelain --untracked-files=no 2>/dev/null | cut -c4- |
  { grep -E '^(helper|bpf|shared)/|CMakeLists\.txt$' || true; } |
  while read -r path; do
    if [[ -e $path && $(stat -c %Y "$path") -gt $(stat -c %Y "$BUILD_DIR/helper/xref") ]]; then
      echo "$path (changed after the build)"
    else
      echo "$path (changed before the build: likely in the binary)"
    fi
  done | paste -sd';' -)
BEFORE_BUILT=""
if [[ -n $BEFORE ]]; then
  [[ -x $BEFORE ]] || die "BEFORE=$BEFORE is not an executable file"
  cp "$BEFORE" "$WORK/xref-before"
  BEFORE_BUILT="$(date -u -r "$BEFORE" '+%Y-%m-%d %H:%M UTC'), sha256 $(sha256sum "$WORK/xref-before" | cut -c1-12)"
  BEFORE=$WORK/xref-before
  "$BEFORE" trace --help 2>&1 | grep -q -- '--ringbuf-bytes' ||
    die "BEFORE's xref trace has no --ringbuf-bytes: not an xref this benchmark can run"
fi
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive number, not '$ROUNDS'"
[[ $TRACE_MS =~ ^[1-9][0-9]*$ && $LOOP_MS =~ ^[1-9][0-9]*$ ]] || die "TRACE_MS and LOOP_MS must be positive numbers"
((LOOP_MS + 200 <= TRACE_MS)) ||
  die "LOOP_MS ($LOOP_MS) must end at least 200 ms before TRACE_MS ($TRACE_MS): the loop must lie inside the trace"
read -ra SWEEP <<<"$THREADS"
if ! [[ $SMALL_RING =~ ^[0-9]+$ ]] || ((SMALL_RING != 0 && (SMALL_RING < 4096 || (SMALL_RING & (SMALL_RING - 1)) != 0))); then
  die "SMALL_RING is 0 or a power of two from 4096, not '$SMALL_RING'"
fi
for threads in "$VARIANT_THREADS" "$COMPARE_THREADS" "${SWEEP[@]}"; do
  [[ $threads =~ ^[1-9][0-9]*$ && $threads -le 256 ]] || die "thread counts are 1 to 256, not '$threads'"
done
# lib.sh's live_address and wait_armed read the target's path from TARGET.
TARGET=$(realpath "${DRAIN_TARGET:-$BUILD_DIR/bench/drain_target}" 2>/dev/null) || true
[[ -x ${TARGET:-} ]] ||
  die "build first: flock /work/build.lock cmake --build build --target drain_target (looked in $BUILD_DIR/bench/)"
command -v python3 >/dev/null || die "python3 is missing"
# bpftrace asks for RLIMIT_MEMLOCK; where it may not raise it, it says so on
# stderr and runs anyway (this kernel charges BPF memory to the cgroup).
ulimit -l unlimited 2>/dev/null || true
LOOP_S=$(awk -v ms="$LOOP_MS" 'BEGIN { printf "%.3f", ms / 1000 }')
CPUS_ONLINE=$(getconf _NPROCESSORS_ONLN)

# Both functions' entries: every tracer puts int3 there (xref's entry
# probes, bpftrace's uprobe and uretprobe share the entry's).
PROBE_OFFSETS=()
for function in "$START_FUNCTION" "$CALLEE_FUNCTION"; do
  va=$(nm "$TARGET" | awk -v f="$function" '$3 == f { print "0x" $1 }')
  [[ -n $va ]] || die "no symbol $function in $TARGET"
  PROBE_OFFSETS+=("$(file_offset_of "$va")")
done

xref_args() { # PID FORMAT [RING_BYTES] -> XREF_ARGS (the CLI's) and SERVE_ARGV (the session's words)
  SERVE_ARGV=(trace --start "$START_FUNCTION" --functions "$CALLEE_FUNCTION" --duration-ms "$TRACE_MS")
  XREF_ARGS=(trace --pid "$1" --start "$START_FUNCTION" --functions "$CALLEE_FUNCTION" --duration-ms "$TRACE_MS")
  case $2 in
    json | jsonl) XREF_ARGS+=("--$2") ;;
  esac
  [[ -z ${3:-} ]] || XREF_ARGS+=(--ringbuf-bytes "$3")
}

# One printf per hit: thread, kind (> entry, < return) and function, time,
# one register. Filtered on the target's PID beside -p's per-process attach.
bpftrace_program() { # PID
  local function kind
  for function in "$START_FUNCTION" "$CALLEE_FUNCTION"; do
    for kind in entry return; do
      if [[ $kind == entry ]]; then
        printf 'uprobe:%s:%s /pid == %s/ { printf("%%d > %s %%llu 0x%%lx\\n", tid, nsecs, arg0); }\n' \
          "$TARGET" "$function" "$1" "$function"
      else
        printf 'uretprobe:%s:%s /pid == %s/ { printf("%%d < %s %%llu 0x%%lx\\n", tid, nsecs, retval); }\n' \
          "$TARGET" "$function" "$1" "$function"
      fi
    done
  done
  echo "interval:ms:$TRACE_MS { exit(); }"
}

# --- one run -------------------------------------------------------------------

# lib.sh's start_target, for drain_target: the go byte comes through a FIFO
# only this shell writes to; the loop ends LOOP_MS after it.
start_drain_target() { # THREADS
  rm -f "$WORK/go"
  mkfifo "$WORK/go"
  TARGET_LOG=$RUN_DIR/target.log
  : >"$TARGET_LOG"
  "$TARGET" --threads "$1" --seconds "$LOOP_S" <"$WORK/go" >"$TARGET_LOG" 2>&1 &
  TARGET_PID=$!
  exec {GO_FD}>"$WORK/go"
  wait_for "$TARGET_LOG" '^threads' "$TARGET_PID" drain_target
}

# The tracer, under bench/rusage_run.py (serve: bench/serve_client.py), its
# output in $RUN_DIR/out, until it has attached and both entries hold int3.
# XREF_BIN (text, json, jsonl) is the binary; RING_BYTES, when set, its
# --ringbuf-bytes.
start_tracer() { # KIND
  local out=$RUN_DIR/out err=$RUN_DIR/err
  : >"$out"
  : >"$err"
  case $1 in
    text | json | jsonl)
      xref_args "$TARGET_PID" "$1" "$RING_BYTES"
      python3 bench/rusage_run.py "$RUN_DIR/cpu" -- "$XREF_BIN" "${XREF_ARGS[@]}" >"$out" 2>"$err" {GO_FD}>&- &
      TRACER_PID=$!
      wait_for "$err" '^xref: tracing PID' "$TRACER_PID" xref
      ;;
    serve)
      xref_args "$TARGET_PID" serve
      python3 bench/serve_client.py --xref "$XREF" --pid "$TARGET_PID" --out "$out" --result "$RUN_DIR/result.json" \
        -- "${SERVE_ARGV[@]}" >/dev/null 2>"$err" {GO_FD}>&- &
      TRACER_PID=$!
      wait_for "$err" '^attached session' "$TRACER_PID" "serve_client.py (xref serve)"
      ;;
    bpftrace)
      python3 bench/rusage_run.py "$RUN_DIR/cpu" -- bpftrace -p "$TARGET_PID" -e "$(bpftrace_program "$TARGET_PID")" \
        >"$out" 2>"$err" {GO_FD}>&- &
      TRACER_PID=$!
      wait_for "$out" '^Attaching' "$TRACER_PID" bpftrace
      grep -qx 'Attaching 5 probes\.\.\.' "$out" || die "bpftrace attaches other than 5 probes: $(head -3 "$out")"
      wait_bpftrace_attached
      ;;
  esac
  wait_armed "$TRACER_PID" "$1"
}

# bpftrace prints "Attaching 5 probes..." before it attaches them, one at a
# time, the interval last. Each is a perf event, as is its printf output
# buffer on each CPU: all 5 are in once it holds CPUS_ONLINE + 5 of them.
wait_bpftrace_attached() {
  local pid="" polls=0 events
  while [[ -z $pid ]]; do
    pid=$(awk '{ print $1 }' "/proc/$TRACER_PID/task/$TRACER_PID/children" 2>/dev/null)
    alive "$TRACER_PID" || die "bpftrace ended before attaching: $(cat "$RUN_DIR/err")"
    [[ -n $pid ]] || sleep 0.01
  done
  until
    events=$(find "/proc/$pid/fd" -lname 'anon_inode:\[perf_event\]' 2>/dev/null | wc -l)
    ((events >= CPUS_ONLINE + 5))
  do
    alive "$pid" || die "bpftrace ended before attaching: $(cat "$RUN_DIR/err")"
    ((++polls % 500 == 0)) && echo "bench: still waiting for bpftrace to attach ($events perf events)" >&2
    sleep 0.01
  done
}

# VARIANT -> KIND, THREADS, LOADED, BINARY (now or before), XREF_BIN,
# RING_BYTES (empty: the default) and STRICT (1: the accounting checks of
# check_run make the run valid; 0: they are the result, see the header).
variant_spec() {
  local variant=$1
  BINARY=now XREF_BIN=$XREF RING_BYTES="" STRICT=1 LOADED=1 THREADS_RUN=$VARIANT_THREADS
  case $variant in
    sweep_*) KIND=jsonl THREADS_RUN=${variant#sweep_} ;;
    cmp_*)
      local rest=${variant#cmp_}
      BINARY=${rest%%_*} rest=${rest#*_}
      KIND=${rest%_idle} STRICT=0 THREADS_RUN=$COMPARE_THREADS
      [[ $rest == *_idle ]] && LOADED=0 THREADS_RUN=$VARIANT_THREADS
      ;;
    ring_*) BINARY=${variant#ring_} KIND=jsonl STRICT=0 THREADS_RUN=$COMPARE_THREADS RING_BYTES=$SMALL_RING ;;
    *_idle) KIND=${variant%_idle} LOADED=0 ;;
    *) KIND=$variant ;;
  esac
  [[ $BINARY == before ]] && XREF_BIN=$BEFORE
  return 0
}

# run_variant VARIANT: one run -> one line of $RESULTS; dies when the run is
# not a valid measurement.
run_variant() {
  local variant=$1 kind threads loaded status
  variant_spec "$variant"
  kind=$KIND threads=$THREADS_RUN loaded=$LOADED
  RUN_DIR=$WORK/runs/$round-$variant
  mkdir -p "$RUN_DIR"
  start_drain_target "$threads"
  expect_unarmed
  start_tracer "$kind"
  ((loaded == 0)) || printf g >&"$GO_FD"
  status=0
  wait "$TRACER_PID" || status=$?
  TRACER_PID=""
  ((status == 0)) || die "$variant: the tracer exited with status $status: $(tail -5 "$RUN_DIR/err")"
  # The loop ends by itself LOOP_MS after the go byte; the trace must have
  # outlasted it, or calls went by untraced.
  if ((loaded)) && ! grep -q '^calls_total' "$TARGET_LOG"; then
    die "$variant: the target's loop was still running when the tracer ended; the trace must outlast the loop (TRACE_MS $TRACE_MS, LOOP_MS $LOOP_MS)"
  fi
  exec {GO_FD}>&-
  GO_FD=""
  wait "$TARGET_PID" || die "$variant: drain_target exited with status $?"
  TARGET_PID=""

  local calls loop_ns cpu counts
  calls=$(awk '$1 == "calls_total" { print $2 }' "$TARGET_LOG")
  loop_ns=$(awk '$1 == "loop_ns" { print $2 }' "$TARGET_LOG")
  [[ -n $calls && -n $loop_ns ]] || die "$variant: drain_target printed no calls_total: $(cat "$TARGET_LOG")"
  if [[ $kind == serve ]]; then
    cpu=$(jq -r '"\(.user_s) \(.sys_s) \(.wall_s) \(.status)"' "$RUN_DIR/result.json")
  else
    cpu=$(cat "$RUN_DIR/cpu")
  fi
  counts=$(python3 bench/drain_count.py "$kind" "$RUN_DIR/out" --window-events "$EVENTS_PER_CALL") ||
    die "$variant: its output does not read as $kind"
  echo "$counts" >"$RUN_DIR/counts.json"
  check_run "$variant" "$kind" "$loaded" "$calls" "$counts" "$STRICT"
  local events lost windows complete incomplete output_events summary_events not_shown user sys wall bytes
  read -r events output_events summary_events windows complete incomplete lost not_shown < <(jq -r \
    '[.events, .output_events, .summary_events, .windows, .complete, .incomplete, .lost, .not_shown]
     | map(if . == null then "-" else tostring end) | join(" ")' <<<"$counts")
  read -r user sys wall _ <<<"$cpu"
  bytes=$(stat -c %s "$RUN_DIR/out")
  local extra
  extra=$(jq -r '[.windows_opened, .windows_without_records, .starts_refused, .output_windows,
      .end_records_lost_shown, .lossy_windows, .unmarked_windows, .marked_no_loss, .lost_shown,
      .lost_unknown_windows] | map(if . == null then "-" else tostring end) | join("\t")' <<<"$counts")
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
    "$round" "$variant" "$kind" "$threads" "$loaded" "$calls" "$loop_ns" "$events" "$output_events" \
    "$summary_events" "$windows" "$complete" "$incomplete" "$lost" "$not_shown" "$user" "$sys" "$wall" "$bytes" \
    "$(((loop_ns > 0) ? calls * 1000000000 / loop_ns : 0))" "$BINARY" "${RING_BYTES:--}" "$extra" >>"$RESULTS"
  printf 'bench: round %d %-21s %2d threads: %9s calls, %9s events, lost %8s, CPU %6.3f s (user %s, sys %s)\n' \
    "$round" "$variant" "$threads" "$calls" "$events" "$lost" "$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')" \
    "$user" "$sys"
  [[ -n ${KEEP_WORK:-} ]] || rm -f "$RUN_DIR/out" # the big file; the counts are kept
}

# What makes a run a measurement. With STRICT 0 (the cmp_ and ring_ runs),
# what the tracer accounted for is the result, not a condition: only the
# run itself must be sound (exit status, stop reason, the target's calls,
# idle runs idle, no more events than 4 x calls).
check_run() { # VARIANT KIND LOADED CALLS COUNTS_JSON STRICT
  local variant=$1 kind=$2 loaded=$3 calls=$4 counts=$5 strict=$6 expected
  expected=$((calls * EVENTS_PER_CALL))
  local events output_events summary_events windows complete lost not_shown stop
  read -r events output_events summary_events windows complete lost not_shown stop < <(jq -r \
    '[.events, .output_events, .summary_events, .windows, .complete, .lost, .not_shown, .stop]
     | map(if . == null then "-" else tostring end) | join(" ")' <<<"$counts")
  local bad="$variant: the run is not a valid measurement:"
  if ((loaded == 0)); then
    ((calls == 0)) || die "$bad the idle target made $calls calls"
    ((events == 0)) || die "$bad $events events from an idle target"
  else
    ((calls > 0)) || die "$bad the target made no calls"
    ((events > 0)) || die "$bad the tracer reported no events ($calls calls)"
    ((events <= expected)) || die "$bad $events events reported, more than $EVENTS_PER_CALL × $calls calls"
  fi
  [[ $kind == bpftrace ]] && return 0 # what bpftrace misses is a result (the report counts it), not a failure
  [[ $stop == duration ]] || die "$bad xref stopped on '$stop', not on its --duration-ms"
  ((strict)) || return 0
  if [[ $kind == serve ]]; then
    # What the protocol delivered: every event of the summary, unless
    # windows were counted as not shown.
    ((not_shown == 0 ? events == summary_events : events <= summary_events)) ||
      die "$bad the window events carry $events events, the summary says $summary_events ($not_shown windows not shown)"
  else
    ((output_events == events)) || die "$bad the output holds $output_events events, the summary says $events"
  fi
  ((loaded)) || return 0
  if ((lost == 0)); then
    # Nothing lost: every call is a whole window of 4 events.
    ((summary_events == expected && windows == calls && complete == calls)) ||
      die "$bad no loss reported, yet $summary_events events in $windows windows ($complete complete) for $calls calls (expected $expected events, one complete window per call)"
  else
    # Every event not reported must be counted as lost.
    ((summary_events + lost >= expected)) ||
      die "$bad $summary_events events + $lost lost < $expected: events went missing uncounted"
  fi
}

# --- the rounds ------------------------------------------------------------------

VARIANTS=()
for kind in "${FORMATS[@]}"; do VARIANTS+=("$kind" "${kind}_idle"); done
for threads in "${SWEEP[@]}"; do VARIANTS+=("sweep_$threads"); done
((SMALL_RING == 0)) || VARIANTS+=(ring_now)
if [[ -n $BEFORE ]]; then
  VARIANTS+=(cmp_now_jsonl cmp_before_jsonl cmp_before_jsonl_idle cmp_now_text cmp_before_text cmp_before_text_idle)
  ((SMALL_RING == 0)) || VARIANTS+=(ring_before)
fi
RESULTS=$WORK/results.tsv
printf '%s\t' round variant kind threads loaded calls loop_ns events output_events summary_events windows complete \
  incomplete lost not_shown user_s sys_s wall_s output_bytes calls_per_s binary ring_bytes windows_opened \
  windows_without_records starts_refused output_windows end_records_lost_shown lossy_windows unmarked_windows \
  marked_no_loss lost_shown lost_unknown_windows | sed 's/\t$/\n/' >"$RESULTS"

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
STARTED=$(date -u '+%Y-%m-%d %H:%M UTC')
echo "bench: $ROUNDS rounds of ${#VARIANTS[@]} runs (${VARIANTS[*]}); $VARIANT_THREADS target threads," \
  "sweep over ${SWEEP[*]}; loop ${LOOP_MS} ms inside a ${TRACE_MS} ms trace${BEFORE:+; before: $BEFORE_LABEL}"
for ((round = 1; round <= ROUNDS; round++)); do
  for ((k = 0; k < ${#VARIANTS[@]}; k++)); do
    variant=${VARIANTS[$(((k + round - 1) % ${#VARIANTS[@]}))]}
    bench_lock
    run_variant "$variant"
    bench_unlock
  done
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

# --- docs/performance.md -----------------------------------------------------------

xref_args PID text
text_command="build/helper/xref ${XREF_ARGS[*]} > out.txt"
jq -n --arg started "$STARTED" --arg commit "$NOW_COMMIT" --arg load_before "$LOAD_BEFORE" \
  --arg load_after "$LOAD_AFTER" --argjson rounds "$ROUNDS" --argjson variant_threads "$VARIANT_THREADS" \
  --argjson trace_ms "$TRACE_MS" --argjson loop_ms "$LOOP_MS" --arg sweep "${SWEEP[*]}" \
  --arg lock "${LOCK:-}" --arg kernel "$(uname -r) ($(uname -m))" --argjson cpus "$(nproc)" \
  --arg cpu_model "$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)" \
  --arg bpftrace_version "$(bpftrace --version 2>&1 | head -1)" \
  --arg xref_built "$XREF_BUILT" --arg now_dirty "$NOW_DIRTY" \
  --arg before_label "${BEFORE:+$BEFORE_LABEL}" --arg before_built "$BEFORE_BUILT" \
  --argjson compare_threads "$COMPARE_THREADS" --argjson small_ring "$SMALL_RING" \
  --arg text_command "$text_command" \
  --arg serve_argv "$(printf '%s\n' "${SERVE_ARGV[@]}" | jq -R . | jq -sc .)" \
  --arg bpftrace_program "$(bpftrace_program PID | sed "s|$TARGET|build/bench/drain_target|g")" \
  '$ARGS.named' >"$WORK/context.json"
python3 bench/report_drain.py "$WORK" >"$WORK/section.md"
mkdir -p "$(dirname "$OUT")"
python3 bench/doc_section.py put "$OUT" drain-bench <"$WORK/section.md"
echo "bench: wrote the drain-bench section of $OUT"
sed -n '/^### Formats/,/^### Thread sweep/p' "$WORK/section.md" | sed '$d'
