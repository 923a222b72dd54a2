# shellcheck shell=bash disable=SC2034  # sets variables the scripts read
# bench/lib.sh: what the side-by-side benchmarks share, sourced by
# bench/variants.sh (bench/run.sh: xref trace) and bench/run_probe.sh (xref
# probe). The setup and cleanup, the target process plumbing (bench_target
# waits for a go byte, the go byte is sent once every probe site holds int3),
# the bare tracefs uprobe and bpftrace peers, the kernel's BPF statistics,
# and the rotated rounds.
#
# A script defines run_variant VARIANT (sets NS_PER_CALL, CPU_NS_PER_CALL,
# CALLS_RUN, HITS_SEEN and dies when the run is not a valid measurement),
# sets PROBE_OFFSETS (the file offsets every tracer must arm), then calls
# timed_rounds and bpf_stats_runs.
#
# In the environment: LOCK=FILE[:FILE...], each round (and each statistics
# run) holds flock(FILE) and releases it after, so a long benchmark shares
# the machine with other BPF work between rounds, never during one;
# KEEP_WORK=1 keeps the work directory (the raw results: rerun a report on
# it).
#
# xref is measured as a copy taken at the start ($WORK/xref), so a rebuild
# during a long benchmark cannot mix two builds in one table.

die() {
  echo "bench: $*" >&2
  exit 1
}

# bench_setup SCRIPT GROUP: root, the built binaries, the tools, tracefs, a
# work directory and the traps that leave nothing behind.
bench_setup() {
  BENCH_SCRIPT=$1
  GROUP=$2
  TRACEFS=/sys/kernel/tracing
  BUILD_DIR=${BUILD_DIR:-build}
  OUT=${OUT:-docs/performance.md}
  # The size of a run, the same for every benchmark built on this file. A
  # hit costs ~12-20 us on this kind of VM when it is quiet (more when other
  # work shares its 2 CPUs), and one run's per-hit cost differs from the next
  # by up to ~40 %, so 5 rounds cannot tell 1.05x from 1.0x.
  ROUNDS=${ROUNDS:-15}
  CALLS=${CALLS:-15000}
  STATS_RUNS=${STATS_RUNS:-3}
  [[ $(id -u) -eq 0 ]] || die "needs root (uprobes, BPF, ptrace): sudo bash $BENCH_SCRIPT"
  TARGET=$(realpath "$BUILD_DIR/bench/bench_target" 2>/dev/null) || true
  XREF=$(realpath "$BUILD_DIR/helper/xref" 2>/dev/null) || true
  [[ -x ${TARGET:-} && -x ${XREF:-} ]] ||
    die "build first: cmake -S . -B build && make -C build -j2 (looked in $BUILD_DIR/)"
  local tool
  for tool in bpftrace bpftool gdb objdump readelf nm jq mkfifo dd od flock; do
    command -v "$tool" >/dev/null || die "$tool is missing"
  done
  bash scripts/mount-tracefs.sh >/dev/null
  WORK=$(mktemp -d "/tmp/xref-bench.XXXXXX")
  bench_lock # not while it is being linked
  cp "$XREF" "$WORK/xref"
  bench_unlock
  XREF=$WORK/xref
  TARGET_PID=""
  TRACER_PID=""
  GO_FD=""
  LOCK_FDS=()
  BPF_STATS=""
  BPF_STATS_BEFORE=$(cat /proc/sys/kernel/bpf_stats_enabled)
  trap cleanup EXIT
  trap 'echo "bench: interrupted" >&2; exit 130' INT TERM
  remove_bare_events # left over from a run that was killed outright
}

remove_bare_events() {
  [[ -d $TRACEFS/events/$GROUP ]] || return 0
  echo 0 >"$TRACEFS/events/$GROUP/enable" 2>/dev/null || true
  local event
  for event in "$TRACEFS/events/$GROUP"/*/; do
    [[ -d $event ]] && echo "-:$GROUP/$(basename "$event")" >>"$TRACEFS/uprobe_events"
  done
}

stop_processes() {
  if [[ -n $GO_FD ]]; then
    exec {GO_FD}>&- || true
    GO_FD=""
  fi
  # The target first, with SIGKILL: a tracer (gdb) may hold it stopped or
  # swallow its signals.
  if [[ -n $TARGET_PID ]]; then
    kill -KILL "$TARGET_PID" 2>/dev/null || true
    wait "$TARGET_PID" 2>/dev/null || true
  fi
  if [[ -n $TRACER_PID ]]; then
    kill -TERM "$TRACER_PID" 2>/dev/null || true
    wait "$TRACER_PID" 2>/dev/null || true
  fi
  TRACER_PID=""
  TARGET_PID=""
}

cleanup() {
  stop_processes
  remove_bare_events
  echo "$BPF_STATS_BEFORE" >/proc/sys/kernel/bpf_stats_enabled
  bench_unlock
  if [[ -n ${KEEP_WORK:-} ]]; then echo "bench: kept $WORK" >&2; else rm -rf "$WORK"; fi
}

# --- LOCK: one round at a time ---------------------------------------------

# LOCK is one file or several, colon-separated (e.g. the test lock and the
# build lock: no BPF test and no build runs during a round). All are taken,
# or none: the script waits for the busy one holding nothing else, so it
# never deadlocks with a process that takes the same files in another order.
bench_lock() {
  [[ -n ${LOCK:-} ]] || return 0
  local files file fd i
  IFS=: read -ra files <<<"$LOCK"
  LOCK_FDS=()
  while ((${#LOCK_FDS[@]} < ${#files[@]})); do
    for i in "${!files[@]}"; do
      file=${files[$i]}
      exec {fd}>>"$file"
      if ((i == 0)); then
        flock "$fd"
      elif ! flock -n "$fd"; then
        # Busy: let everything go, and wait for this one first next time.
        exec {fd}>&-
        bench_unlock
        files=("$file" "${files[@]:0:i}" "${files[@]:i+1}")
        break
      fi
      LOCK_FDS+=("$fd")
    done
  done
}

bench_unlock() {
  local fd
  for fd in "${LOCK_FDS[@]}"; do
    flock -u "$fd" || true
    exec {fd}>&-
  done
  LOCK_FDS=()
}

# --- the target's probe sites -----------------------------------------------

# Static VA -> file offset through the PT_LOAD segment that holds it.
file_offset_of() {
  local type offset vaddr filesz
  while read -r type offset vaddr _ filesz _; do
    [[ $type == LOAD ]] || continue
    if (($1 >= vaddr && $1 < vaddr + filesz)); then
      printf '0x%x\n' $(($1 - vaddr + offset))
      return
    fi
  done < <(readelf -lW "$TARGET")
  die "$1 is in no PT_LOAD segment of $TARGET"
}

# hot's entry -> HOT_VA, HOT_SIZE, HOT_OFFSET.
find_hot() {
  read -r HOT_VA HOT_SIZE < <(nm -S "$TARGET" | awk '$4 == "hot" { print "0x" $1, "0x" $2 }')
  [[ -n ${HOT_VA:-} ]] || die "no symbol hot in $TARGET"
  HOT_VA=$(printf '0x%x' "$HOT_VA")
  HOT_OFFSET=$(file_offset_of "$HOT_VA")
}

# --- processes -------------------------------------------------------------

alive() {
  local state
  state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
  [[ -n $state && $state != Z ]]
}

# wait_for FILE REGEX PID WHAT: until REGEX shows up in FILE, or PID dies.
wait_for() {
  until grep -qE "$2" "$1" 2>/dev/null; do
    alive "$3" || die "$4 ended before printing /$2/; its output:
$(cat "$1" 2>/dev/null)"
    sleep 0.02
  done
}

# The target reads its go byte from a FIFO whose write end only this shell
# holds (tracers are started with {GO_FD}>&-), and exits on its EOF.
start_target() { # CALLS [--untraced]
  local calls=$1
  shift
  start_target_args --calls "$calls" "$@"
}

# start_target_args ARG...: the target with exactly these arguments, until
# it prints ready.
start_target_args() {
  rm -f "$WORK/go"
  mkfifo "$WORK/go"
  TARGET_LOG=$WORK/target.log
  : >"$TARGET_LOG" # emptied here, not in the child: wait_for must not see the last run's lines
  "$TARGET" "$@" <"$WORK/go" >"$TARGET_LOG" 2>&1 &
  TARGET_PID=$!
  exec {GO_FD}>"$WORK/go"
  wait_for "$TARGET_LOG" '^ready' "$TARGET_PID" bench_target
}

# Live address of a file offset of the target, from /proc/PID/maps.
live_address() {
  local range offset path start end
  while read -r range _ offset _ _ path; do
    [[ $path == "$TARGET" ]] || continue
    start=$((16#${range%-*})) end=$((16#${range#*-})) offset=$((16#$offset))
    if (($1 >= offset && $1 < offset + end - start)); then
      printf '0x%x\n' $((start + $1 - offset))
      return
    fi
  done <"/proc/$TARGET_PID/maps"
  die "file offset $1 of $TARGET is not mapped in $TARGET_PID"
}

byte_at() {
  dd if="/proc/$TARGET_PID/mem" bs=1 skip=$(($1)) count=1 iflag=skip_bytes 2>/dev/null | od -An -tx1 | tr -d ' '
}

# Every probe site holds int3 in the target's memory: the tracer has armed
# them all (uprobes and gdb breakpoints both show up this way).
# No deadline (a slow attach is not a failure), but say what it waits for.
wait_armed() { # TRACER_PID WHAT
  local offset address polls
  for offset in "${PROBE_OFFSETS[@]}"; do
    address=$(live_address "$offset")
    polls=0
    until [[ $(byte_at "$address") == cc ]]; do
      alive "$1" || die "$2 ended before arming $address"
      ((++polls % 500 == 0)) && echo "bench: still waiting for $2 to put a probe at $address (Ctrl-C stops)" >&2
      sleep 0.02
    done
  done
}

# Every probe site holds int3 right now.
all_armed() {
  local offset
  for offset in "${PROBE_OFFSETS[@]}"; do
    [[ $(byte_at "$(live_address "$offset")") == cc ]] || return 1
  done
}

expect_unarmed() {
  local offset address
  for offset in "${PROBE_OFFSETS[@]}"; do
    address=$(live_address "$offset")
    [[ $(byte_at "$address") != cc ]] || die "$address already holds int3 before the run (a stray probe?)"
  done
}

# The go byte, and the loop's times. In a statistics run (BPF_STATS), the
# tracer's BPF programs' counters too, while it is still loaded.
go_and_measure() {
  printf g >&"$GO_FD"
  wait_for "$TARGET_LOG" '^ns_per_call' "$TARGET_PID" bench_target
  NS_PER_CALL=$(awk '$1 == "ns_per_call" { print $2 }' "$TARGET_LOG")
  CPU_NS_PER_CALL=$(awk '$1 == "cpu_ns_per_call" { print $2 }' "$TARGET_LOG")
  [[ -z $BPF_STATS || -z $TRACER_PID ]] || read_bpf_stats "$TRACER_PID"
}

finish_target() {
  exec {GO_FD}>&-
  GO_FD=""
  wait "$TARGET_PID" || die "bench_target exited with status $?"
  TARGET_PID=""
}

check_hits() { # VARIANT SEEN EXPECTED
  [[ $2 == "$3" ]] || die "$1: the probes fired $2 times, expected $3; the measurement is invalid"
}

# --- the peers ---------------------------------------------------------------

# The baseline: the same loop with nothing attached.
run_baseline() {
  CALLS_RUN=$CALLS
  start_target "$CALLS_RUN"
  expect_unarmed
  go_and_measure
  finish_target
  HITS_SEEN=0
}

# The bare uprobe: one tracefs uprobe event per PROBE_OFFSETS entry, named
# by BARE_NAMES, enabled with nothing attached (each hit writes an ftrace
# record); HITS_SEEN from uprobe_profile.
run_bare_uprobe() {
  CALLS_RUN=$CALLS
  start_target "$CALLS_RUN"
  expect_unarmed
  remove_bare_events
  local i
  for i in "${!PROBE_OFFSETS[@]}"; do
    echo "p:$GROUP/${BARE_NAMES[$i]} $TARGET:${PROBE_OFFSETS[$i]}" >>"$TRACEFS/uprobe_events"
  done
  echo 1 >"$TRACEFS/events/$GROUP/enable"
  wait_armed "$TARGET_PID" "bench_target"
  go_and_measure
  # uprobe_profile: "FILE EVENT HITS", the event without its group.
  HITS_SEEN=$(awk -v path="$TARGET" -v names=" ${BARE_NAMES[*]} " \
    '$1 == path && index(names, " " $2 " ") { sum += $3 } END { print sum + 0 }' "$TRACEFS/uprobe_profile")
  remove_bare_events
  finish_target
  check_hits bare_uprobe "$HITS_SEEN" $((CALLS_RUN * HITS_PER_CALL))
}

# bpftrace: the program bpftrace_program prints, counting every hit into
# @c; it must attach HITS_PER_CALL probes.
run_bpftrace() {
  CALLS_RUN=$CALLS
  start_target "$CALLS_RUN"
  expect_unarmed
  local log=$WORK/bpftrace.log
  : >"$log"
  bpftrace -p "$TARGET_PID" -e "$(bpftrace_program)" >"$log" 2>&1 {GO_FD}>&- &
  TRACER_PID=$!
  wait_for "$log" '^Attaching' "$TRACER_PID" bpftrace
  # It drops attach points it cannot resolve without failing: count them.
  grep -qx "Attaching $HITS_PER_CALL probes\?\.\.\." "$log" ||
    die "bpftrace attaches fewer probes than $HITS_PER_CALL: $(cat "$log")"
  wait_armed "$TRACER_PID" bpftrace
  go_and_measure
  stop_bpftrace "$log"
  finish_target
  HITS_SEEN=$(awk '$1 == "@c:" { print $2 }' "$log")
  check_hits bpftrace "${HITS_SEEN:-none}" $((CALLS_RUN * HITS_PER_CALL))
}

# start_xref REGEX ARG...: `xref ARG...`, its stdout in XREF_OUT and its
# stderr in XREF_ERR, until it prints REGEX on stderr (it has attached) and
# every probe site holds int3.
start_xref() {
  local regex=$1
  shift
  XREF_OUT=$WORK/xref.json
  XREF_ERR=$WORK/xref.err
  : >"$XREF_OUT"
  : >"$XREF_ERR"
  "$XREF" "$@" >"$XREF_OUT" 2>"$XREF_ERR" {GO_FD}>&- &
  TRACER_PID=$!
  wait_for "$XREF_ERR" "$regex" "$TRACER_PID" xref
  wait_armed "$TRACER_PID" xref
}

# finish_xref [--interrupt]: until xref exits (after a SIGINT, with
# --interrupt); it must exit with status 0.
finish_xref() {
  [[ ${1:-} != --interrupt ]] || kill -INT "$TRACER_PID"
  wait "$TRACER_PID" || die "xref exited with status $?: $(cat "$XREF_ERR")"
  TRACER_PID=""
}

# bpftrace 0.17 can miss a SIGINT that lands between its exit-flag check
# and its next epoll_wait, and then waits for events forever: repeat it, but
# only while every probe is still in. Once bpftrace detaches it has taken
# the signal, and from then on (it restores SIGINT's default before it
# prints its maps) another one would kill it.
stop_bpftrace() { # LOG
  local polls=0
  kill -INT "$TRACER_PID" 2>/dev/null || true
  while alive "$TRACER_PID"; do
    ((++polls % 50 == 0)) && all_armed && kill -INT "$TRACER_PID" 2>/dev/null
    sleep 0.02
  done
  wait "$TRACER_PID" || die "bpftrace exited with status $?: $(cat "$1")"
  TRACER_PID=""
}

# The tracer's BPF programs (the prog_id lines of its fds' fdinfo) and their
# summed kernel.bpf_stats_enabled counters -> BPF_RUN_NS, BPF_RUN_COUNT.
read_bpf_stats() { # TRACER_PID
  local ids
  ids=$(cat /proc/"$1"/fdinfo/* 2>/dev/null | awk '$1 == "prog_id:" { print $2 }' | sort -u)
  [[ -n $ids ]] || die "no BPF program among the fds of $1"
  read -r BPF_RUN_NS BPF_RUN_COUNT < <(for id in $ids; do bpftool prog show id "$id" --json; done |
    jq -rs '"\(map(.run_time_ns // 0) | add) \(map(.run_cnt // 0) | add)"')
}

# --- rounds ------------------------------------------------------------------

# ROUNDS rounds of every variant, each in a fresh target, in an order rotated
# from round to round so no variant always runs first or last ->
# $WORK/results.tsv: round, variant, ns per call, calls, hits seen, CPU ns
# per call.
timed_rounds() { # VARIANT...
  local variants=("$@") round k variant
  RESULTS=$WORK/results.tsv
  : >"$RESULTS"
  for ((round = 1; round <= ROUNDS; round++)); do
    bench_lock
    for ((k = 0; k < ${#variants[@]}; k++)); do
      variant=${variants[$(((k + round - 1) % ${#variants[@]}))]}
      run_variant "$variant"
      printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$variant" "$NS_PER_CALL" "$CALLS_RUN" "$HITS_SEEN" \
        "$CPU_NS_PER_CALL" >>"$RESULTS"
      printf 'bench: round %d %-14s %12s ns/call, %12s CPU ns/call  (%s calls, hits %s)\n' \
        "$round" "$variant" "$NS_PER_CALL" "$CPU_NS_PER_CALL" "$CALLS_RUN" "$HITS_SEEN"
    done
    bench_unlock
  done
}

# STATS_RUNS runs of each variant with kernel.bpf_stats_enabled=1 ->
# $WORK/bpf_stats.tsv: run, variant, BPF run time ns, program runs. Separate
# from the timed rounds, since the statistics add two clock reads to every
# program run and would tax the BPF variants but not the bare uprobe. Each
# run's program runs must equal expected_program_runs VARIANT: one per hit.
bpf_stats_runs() { # VARIANT...
  local run variant
  BPF_RESULTS=$WORK/bpf_stats.tsv
  : >"$BPF_RESULTS"
  for ((run = 1; run <= STATS_RUNS; run++)); do
    bench_lock
    echo 1 >/proc/sys/kernel/bpf_stats_enabled
    BPF_STATS=1
    for variant in "$@"; do
      run_variant "$variant"
      check_hits "$variant (BPF program runs)" "$BPF_RUN_COUNT" "$(expected_program_runs "$variant")"
      printf '%s\t%s\t%s\t%s\n' "$run" "$variant" "$BPF_RUN_NS" "$BPF_RUN_COUNT" >>"$BPF_RESULTS"
      printf 'bench: bpf stats %d %-14s %s ns in %s program runs\n' "$run" "$variant" "$BPF_RUN_NS" "$BPF_RUN_COUNT"
    done
    BPF_STATS=""
    echo "$BPF_STATS_BEFORE" >/proc/sys/kernel/bpf_stats_enabled
    bench_unlock
  done
}

# For context.sh: the locks the run held, as its section says them.
lock_text() {
  [[ -z ${LOCK:-} ]] || echo "LOCK_TEXT=$(printf '%q' ", each holding ${LOCK//:/ and }")"
}

# bench/report_NAME.sh over $WORK becomes the NAME-bench section of $OUT;
# then its part from the heading matching FROM up to (without) the next
# line matching TO is printed.
write_section() { # NAME FROM TO
  bash "bench/report_$1.sh" "$WORK" >"$WORK/section.md"
  python3 bench/doc_section.py put "$OUT" "$1-bench" <"$WORK/section.md"
  echo "bench: wrote the $1-bench section of $OUT"
  sed -n "/$2/,/$3/p" "$WORK/section.md" | sed '$d'
}
