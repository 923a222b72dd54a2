#!/usr/bin/env bash
# bench/run_watch.sh: what `xref watch` costs (issue 26), beside its peers on
# the same run. Writes the "xref watch" section of docs/performance.md.
#
#   sudo bash bench/run_watch.sh    # from the repository root, after building
#
# Parts, all in one run:
#   1. Per watched write, stores engine: build/bench/watch_workload's timed
#      loop of CALLS stores to g_watched under no watch (baseline), a bare
#      tracefs uprobe on that store instruction (the per-hit floor), `xref
#      watch --backend stores` (every write recorded: the JSON's writes and
#      records equal CALLS, nothing lost) and gdb's software watchpoint
#      (`set can-use-hw-watchpoints 0`, which single-steps; GDB_CALLS writes),
#      in rotated rounds (bench/lib.sh, as bench/run_probe.sh).
#   2. A probed store that misses the watched range, in the same rounds: the
#      loop stores through a pointer to g_other (never pruned), or rip-relative
#      to g_other, kept in by a --follow range (or pruned without one).
#   3. hw engine: gdb's hardware `watch`, `perf stat -e mem:ADDR/8:w` and `xref
#      watch --backend hw` join the rounds only where `xref doctor --json` says
#      the debug registers fire; elsewhere the section prints the self-test's
#      line and says they were not measured.
#   4. Attach time of 10,000 store sites: `xref watch --backend stores` of
#      build/bench/many_stores's scratch array (bench/watch_attach.py).
#   5. --follow re-arm latency: watch_workload --moves MOVES under `xref watch
#      --follow 'g_slot->+16:8'`: every rearm record's unwatched interval.
#
# Knobs: ROUNDS (5), CALLS (5000), GDB_CALLS (15), GDB_HW_CALLS (500),
# ATTACH_ROUNDS (7), FOLLOW_ROUNDS (5), MOVES (100), PACE_US (25000), BUILD_DIR
# (build), OUT (docs/performance.md), LOCK and KEEP_WORK (bench/lib.sh).
# PARTS=follow runs part 5 alone and prints its figures (min, median, max
# of the unwatched intervals) instead of writing the document.
#
# Not a test: the goals get a verdict in the document, not an exit status;
# the script fails only when a run is not a valid measurement.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-5}
CALLS=${CALLS:-5000}
# A gdb software-watchpoint write costs 1 ms to seconds here (it single-steps
# every instruction of the loop, and a step's time varies wildly on this kind
# of VM): 15 writes take up to a minute.
GDB_CALLS=${GDB_CALLS:-15}
GDB_HW_CALLS=${GDB_HW_CALLS:-500}
ATTACH_ROUNDS=${ATTACH_ROUNDS:-7}
FOLLOW_ROUNDS=${FOLLOW_ROUNDS:-5}
MOVES=${MOVES:-100}
PACE_US=${PACE_US:-25000}
PARTS=${PARTS:-all}
[[ $PARTS == all || $PARTS == follow ]] || { echo "run_watch.sh: PARTS is all or follow, not $PARTS" >&2; exit 2; }

# shellcheck source=bench/lib.sh
source bench/lib.sh
bench_setup bench/run_watch.sh xrefwatch
for tool in perf python3; do command -v "$tool" >/dev/null || die "$tool is missing"; done
TARGET=$(realpath "$BUILD_DIR/bench/watch_workload" 2>/dev/null) || true
MANY=$(realpath "$BUILD_DIR/bench/many_stores" 2>/dev/null) || true
[[ -x ${TARGET:-} && -x ${MANY:-} ]] ||
  die "build first: cmake --build build --target xref watch_workload many_stores (looked in $BUILD_DIR/bench/)"

# --- the store instructions ----------------------------------------------------

# The one store of FUNC (AT&T: a mov whose last operand is memory), or its
# one store to SYMBOL (objdump's comment names it) -> its static VA.
store_va() { # FUNC [SYMBOL]
  local start size vas
  read -r start size < <(nm -S "$TARGET" | awk -v f="$1" '$4 == f { print "0x" $1, "0x" $2 }')
  [[ -n ${start:-} ]] || die "no function $1 in $TARGET"
  mapfile -t vas < <(objdump -d --no-show-raw-insn --start-address="$start" --stop-address=$((start + size)) "$TARGET" |
    awk -F'\t' -v sym="<${2:-}>" '/^ *[0-9a-f]+:\t/ && $2 ~ /^mov/ && $2 ~ /,[^,]*\(/ && (sym == "<>" || index($2, sym)) {
      sub(/:.*/, "", $1); gsub(/ /, "", $1); print "0x" $1 }')
  ((${#vas[@]} == 1)) || die "$1 has ${#vas[@]} stores${2:+ to $2}, expected one"
  echo "${vas[0]}"
}
WATCHED_VA=$(store_va write_watched)
POINTER_VA=$(store_va write_pointer)
STATIC_VA=$(store_va write_static)
WATCHED_OFFSET=$(file_offset_of "$WATCHED_VA")
POINTER_OFFSET=$(file_offset_of "$POINTER_VA")
STATIC_OFFSET=$(file_offset_of "$STATIC_VA")
PROBE_OFFSETS=("$WATCHED_OFFSET")
BARE_NAMES=(store)
HITS_PER_CALL=1

# The live address of an object the workload printed ("obj NAME 0xADDR SIZE").
object_address() { awk -v n="$1" '$1 == "obj" && $2 == n { print $3 }' "$TARGET_LOG"; }

# --- hw: does the self-test say the debug registers fire? -------------------

HW_LINE=$("$XREF" doctor --json | jq -r '.data.checks[] | select(.name == "hardware_breakpoints") | "\(.status): \(.detail)"')
[[ -n $HW_LINE ]] || die "xref doctor --json has no hardware_breakpoints check"
HW_FIRES=0
[[ $HW_LINE == ok:* ]] && HW_FIRES=1

# --- the variants ------------------------------------------------------------

# watch ARGS for the target now running: the watched global by its live
# address (so every peer watches the same 8 bytes), the bound-free options.
watch_args() { # BACKEND [EXTRA...]
  local backend=$1
  shift
  XREF_ARGS=(watch --pid "$TARGET_PID" "$(object_address g_watched):8" --backend "$backend" "$@"
             --duration-ms 0 --max-events 0 --json)
}

# Checks of one xref watch run's JSON: stopped by SIGINT, nothing lost, no
# unobserved change, range 0's writes and records equal WRITES, and every
# write made by the store at WRITER_VA (or none).
check_watch() { # VARIANT WRITES [WRITER_VA]
  local stop lost complete writes recorded unobserved writers
  read -r stop lost complete writes recorded unobserved writers < <(jq -r '.result |
    "\(.stop_reason) \(.lost + .in_flight_full) \(.complete) \(.summary[0].writes) \(.summary[0].recorded) \(.unobserved_changes | length) \([.writes[] | select(.range == 0) | .writer.static_va] | unique | join(","))"' \
    "$XREF_OUT")
  [[ $stop == interrupted ]] || die "$1: stop_reason $stop, expected interrupted"
  [[ $lost == 0 && $complete == true ]] || die "$1: $lost records lost, complete $complete"
  [[ $unobserved == 0 ]] || die "$1: $unobserved unobserved changes of g_watched"
  check_hits "$1 (summary[0].writes)" "$writes" "$2"
  check_hits "$1 (summary[0].recorded)" "$recorded" "$2"
  if [[ -n ${3:-} ]]; then
    [[ $((writers)) == $(($3)) ]] || die "$1: writers $writers, expected the loop's store $3"
  fi
  SITES_PROBED=$(jq -r '.result.sites | "\(.uprobes) uprobes (\(.probed) stores probed, \(.pruned_static) pruned as static, \(.pruned_stack) as stack)"' "$XREF_OUT")
}

run_xref_stores() {
  CALLS_RUN=$CALLS
  PROBE_OFFSETS=("$WATCHED_OFFSET")
  start_target "$CALLS_RUN"
  expect_unarmed
  watch_args stores
  start_xref '^xref: watching PID' "${XREF_ARGS[@]}"
  go_and_measure
  finish_xref --interrupt
  finish_target
  check_watch xref_stores "$CALLS_RUN" "$WATCHED_VA"
  echo "$SITES_PROBED" >"$WORK/sites_watched.txt"
  HITS_SEEN=$CALLS_RUN
}

# The loop stores to g_other while g_watched is watched: every store is a
# probe hit that records nothing. pointer: a store through a register;
# static: rip-relative, kept by a --follow range (the range may move
# anywhere), or pruned without one (then it must hold no int3).
run_xref_miss() { # pointer|follow|pruned
  CALLS_RUN=$CALLS
  local store=static extra=()
  case $1 in
    pointer) store=pointer PROBE_OFFSETS=("$POINTER_OFFSET") ;;
    follow) PROBE_OFFSETS=("$STATIC_OFFSET") ;;
    pruned) PROBE_OFFSETS=("$WATCHED_OFFSET") ;; # armed, though this loop never runs it
  esac
  start_target "$CALLS_RUN" --store "$store"
  PROBE_OFFSETS+=("$STATIC_OFFSET" "$POINTER_OFFSET")
  expect_unarmed
  PROBE_OFFSETS=("${PROBE_OFFSETS[0]}")
  [[ $1 != follow ]] || extra=(--follow "$(object_address g_slot)->+16:8")
  watch_args stores "${extra[@]}"
  start_xref '^xref: watching PID' "${XREF_ARGS[@]}"
  if [[ $1 == pruned && $(byte_at "$(live_address "$STATIC_OFFSET")") == cc ]]; then
    die "xref_pruned: the rip-relative store to g_other holds int3: not pruned"
  fi
  go_and_measure
  finish_xref --interrupt
  finish_target
  check_watch "xref_$1" 0
  echo "$SITES_PROBED" >"$WORK/sites_$1.txt"
  HITS_SEEN=$([[ $1 == pruned ]] && echo 0 || echo "$CALLS_RUN")
  PROBE_OFFSETS=("$WATCHED_OFFSET")
}

# gdb -batch on the target, with a watchpoint on g_watched whose commands
# count each stop ("hit") and continue, and delete it at the CALLS-th;
# armed once its `shell touch` ran.
# The target is killed after the loop (single-stepping its exit takes long).
run_gdb_watch() { # sw|hw CALLS
  CALLS_RUN=$2
  start_target "$CALLS_RUN"
  local log=$WORK/gdb.log script=$WORK/watch.gdb armed=$WORK/gdb.armed kind=Watchpoint
  [[ $1 == hw ]] && kind="Hardware watchpoint"
  {
    echo "set pagination off"
    echo "set confirm off"
    [[ $1 == sw ]] && echo "set can-use-hw-watchpoints 0"
    echo "watch g_watched"
    # After the last write the watchpoint goes: single-stepping the
    # workload's printf of its figures took minutes of wall time here.
    echo 'set $hits = 0'
    printf 'commands\nsilent\nprintf "hit\\n"\nset $hits = $hits + 1\nif $hits >= %d\ndelete\nend\ncontinue\nend\n' "$CALLS_RUN"
    echo "shell touch $armed"
    echo "continue"
  } >"$script"
  rm -f "$armed"
  : >"$log"
  gdb -nx -batch -p "$TARGET_PID" -x "$script" >"$log" 2>&1 {GO_FD}>&- &
  TRACER_PID=$!
  until [[ -e $armed ]]; do
    alive "$TRACER_PID" || die "gdb ended before arming its watchpoint: $(cat "$log")"
    sleep 0.02
  done
  grep -q "^$kind [0-9]*: g_watched" "$log" || die "gdb_$1: gdb did not set a $kind: $(cat "$log")"
  go_and_measure
  stop_processes # SIGKILL to the target, then gdb
  HITS_SEEN=$(grep -cx hit "$log" || true)
  check_hits "gdb_$1" "$HITS_SEEN" "$CALLS_RUN"
}

# perf stat counting the breakpoint event on g_watched, started disabled
# and enabled through its control FIFO (the ack says it counts).
run_perf_mem() {
  CALLS_RUN=$CALLS
  start_target "$CALLS_RUN"
  local ctl=$WORK/perf.ctl ack=$WORK/perf.ack out=$WORK/perf.out reply
  rm -f "$ctl" "$ack"
  mkfifo "$ctl" "$ack"
  perf stat -x, -o "$out" -e "mem:$(object_address g_watched)/8:w" -p "$TARGET_PID" -D -1 \
    --control "fifo:$ctl,$ack" {GO_FD}>&- &
  TRACER_PID=$!
  echo enable >"$ctl"
  read -r reply <"$ack"
  [[ $reply == ack* ]] || die "perf_mem: perf answered $reply to enable"
  go_and_measure
  kill -INT "$TRACER_PID"
  wait "$TRACER_PID" || true # perf stat exits 130 on SIGINT
  TRACER_PID=""
  finish_target
  HITS_SEEN=$(awk -F, '$3 ~ /^mem:/ { print $1 }' "$out")
  check_hits perf_mem "${HITS_SEEN:-none}" "$CALLS_RUN"
}

run_xref_hw() {
  CALLS_RUN=$CALLS
  start_target "$CALLS_RUN"
  watch_args hw
  XREF_OUT=$WORK/xref.json XREF_ERR=$WORK/xref.err
  "$XREF" "${XREF_ARGS[@]}" >"$XREF_OUT" 2>"$XREF_ERR" {GO_FD}>&- &
  TRACER_PID=$!
  wait_for "$XREF_ERR" '^xref: watching PID' "$TRACER_PID" xref
  go_and_measure
  finish_xref --interrupt
  finish_target
  check_watch xref_hw "$CALLS_RUN" "$WATCHED_VA" # the writer: the instruction before the trap
  HITS_SEEN=$CALLS_RUN
}

run_variant() {
  case $1 in
    gdb_sw) run_gdb_watch sw "$GDB_CALLS" ;;
    gdb_hw) run_gdb_watch hw "$GDB_HW_CALLS" ;;
    xref_miss_pointer) run_xref_miss pointer ;;
    xref_miss_follow) run_xref_miss follow ;;
    xref_pruned) run_xref_miss pruned ;;
    *) "run_$1" ;;
  esac
}

if [[ $PARTS == all ]]; then
VARIANTS=(baseline bare_uprobe xref_stores gdb_sw xref_miss_pointer xref_miss_follow xref_pruned)
((HW_FIRES == 0)) || VARIANTS+=(gdb_hw perf_mem xref_hw)

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
STARTED=$(date -u '+%Y-%m-%d %H:%M UTC')
echo "bench: stores at $WATCHED_VA (watched), $POINTER_VA (pointer), $STATIC_VA (static); debug registers: $HW_LINE"
echo "bench: $ROUNDS rounds of ${VARIANTS[*]}; $CALLS writes per run, $GDB_CALLS under gdb's software watch"
timed_rounds "${VARIANTS[@]}"

# --- part 4: attach time of 10,000 store sites ---------------------------------

echo "bench: attach time: $ATTACH_ROUNDS rounds on $MANY"
: >"$WORK/attach.tsv"
for ((run = 1; run <= ATTACH_ROUNDS; run++)); do
  for tool in xref xref_1; do
    bench_lock
    python3 bench/watch_attach.py --tool "$tool" --run "$run" --xref "$XREF" --target "$MANY" --work "$WORK" \
      >>"$WORK/attach.tsv"
    bench_unlock
  done
done
fi # PARTS == all

# --- part 5: --follow re-arm latency ------------------------------------------

# The slot g_slot (8 bytes, watched itself) and its block's length field
# (+16) follow it; each move is a rearm record whose unwatched_ns is from the
# slot's write (BPF time) to the ranges map update (the helper's clock, the
# same CLOCK_MONOTONIC). -> follow.tsv: round, move, unwatched ns.
echo "bench: --follow: $FOLLOW_ROUNDS rounds of $MOVES moves, $PACE_US us apart"
: >"$WORK/follow.tsv"
: >"$WORK/follow_runs.tsv"
for ((run = 1; run <= FOLLOW_ROUNDS; run++)); do
  bench_lock
  start_target_args --moves "$MOVES" --pace-us "$PACE_US"
  PROBE_OFFSETS=("$(file_offset_of "$(store_va set_length)")") # a store through a register: always probed
  expect_unarmed
  XREF_ARGS=(watch --pid "$TARGET_PID" --follow "$(object_address g_slot)->+16:8" --backend stores
             --duration-ms 0 --max-events 0 --json)
  start_xref '^xref: watching PID' "${XREF_ARGS[@]}"
  printf g >&"$GO_FD"
  wait_for "$TARGET_LOG" '^length_writes' "$TARGET_PID" watch_workload
  moved=$(awk '$1 == "moved" { print $2 }' "$TARGET_LOG")
  [[ $moved == "$MOVES" ]] || die "follow: the block moved $moved times of $MOVES"
  finish_xref --interrupt
  finish_target
  read -r rearms parked slot_writes length_writes unobserved lost < <(jq -r '.result |
    "\(.rearms | length) \([.rearms[] | select(.parked)] | length) \(.summary[0].writes) \([.writes[] | select(.range == 1)] | length) \(.unobserved_changes | length) \(.lost + .in_flight_full)"' "$XREF_OUT")
  [[ $lost == 0 ]] || die "follow: $lost records lost"
  check_hits "follow (rearm records)" "$rearms" "$MOVES"
  check_hits "follow (slot writes)" "$slot_writes" "$MOVES"
  [[ $parked == 0 ]] || die "follow: $parked rearms parked the range"
  jq -r --arg run "$run" '.result.rearms | to_entries[] | "\($run)\t\(.key + 1)\t\(.value.unwatched_ns)"' "$XREF_OUT" \
    >>"$WORK/follow.tsv"
  printf '%s\t%s\t%s\t%s\t%s\n' "$run" "$rearms" "$length_writes" "$unobserved" "$slot_writes" >>"$WORK/follow_runs.tsv"
  echo "bench: follow $run: $rearms rearms, $length_writes of $MOVES length writes recorded at the new place, $unobserved unobserved"
  bench_unlock
done

# --- docs/performance.md -------------------------------------------------------

if [[ $PARTS == follow ]]; then
  cut -f3 "$WORK/follow.tsv" | sort -n | awk '{ v[NR] = $1 / 1000 } END {
    printf "bench: follow: %d rearms, unwatched us: min %.1f, median %.1f, max %.1f\n", NR, v[1], v[int((NR + 1) / 2)], v[NR] }'
  exit 0
fi

LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
{
  declare -p ROUNDS CALLS GDB_CALLS GDB_HW_CALLS ATTACH_ROUNDS FOLLOW_ROUNDS MOVES PACE_US WATCHED_VA POINTER_VA \
    STATIC_VA WATCHED_OFFSET TRACEFS GROUP STARTED LOAD_BEFORE LOAD_AFTER HW_LINE HW_FIRES
  echo "SITES_WATCHED=$(printf '%q' "$(cat "$WORK/sites_watched.txt")")"
  echo "SITES_POINTER=$(printf '%q' "$(cat "$WORK/sites_pointer.txt")")"
  echo "SITES_FOLLOW=$(printf '%q' "$(cat "$WORK/sites_follow.txt")")"
  echo "SITES_PRUNED=$(printf '%q' "$(cat "$WORK/sites_pruned.txt")")"
  lock_text
} >"$WORK/context.sh"
write_section watch '^### Goals' '^### Every round'
