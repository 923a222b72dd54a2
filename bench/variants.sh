# shellcheck shell=bash disable=SC2034  # sets variables bench/run.sh reads
# bench/variants.sh: sourced by bench/run.sh. The probe sites, the target
# process plumbing, and one run_<variant> function per measured variant;
# each sets NS_PER_CALL, CPU_NS_PER_CALL, CALLS_RUN and HITS_SEEN, and dies when the run is
# not a valid measurement (a probe that did not fire, a lost xref event).

# --- the probe sites: hot's entry and each of its ret instructions ---------

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

read -r HOT_VA HOT_SIZE < <(nm -S "$TARGET" | awk '$4 == "hot" { print "0x" $1, "0x" $2 }')
[[ -n ${HOT_VA:-} ]] || die "no symbol hot in $TARGET"
HOT_VA=$(printf '0x%x' "$HOT_VA")
mapfile -t RET_VAS < <(objdump -d --no-show-raw-insn --start-address="$HOT_VA" \
  --stop-address=$((HOT_VA + HOT_SIZE)) "$TARGET" |
  awk -F'\t' '/^ *[0-9a-f]+:\t/ { split($2, m, " "); if (m[1] ~ /^ret/ || m[2] ~ /^ret/) { sub(/:.*/, "", $1); gsub(/ /, "", $1); print "0x" $1 } }')
((${#RET_VAS[@]} > 0)) || die "found no ret instruction in hot"
# Debian's bpftrace refuses probes inside a function (no offset checking
# compiled in), so bench_target gives each ret a symbol of its own.
RET_SYMBOLS=()
for va in "${RET_VAS[@]}"; do
  symbol=$(nm "$TARGET" | awk -v want="$(printf '%016x' "$va")" '$1 == want && $3 != "hot" { print $3; exit }')
  [[ -n $symbol ]] || die "the ret at $va has no symbol of its own; bpftrace could not probe it"
  RET_SYMBOLS+=("$symbol")
done
PROBE_VAS=("$HOT_VA" "${RET_VAS[@]}")
PROBE_OFFSETS=()
for va in "${PROBE_VAS[@]}"; do PROBE_OFFSETS+=("$(file_offset_of "$va")"); done
HITS_PER_CALL=${#PROBE_VAS[@]}

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
  rm -f "$WORK/go"
  mkfifo "$WORK/go"
  TARGET_LOG=$WORK/target.log
  : >"$TARGET_LOG" # emptied here, not in the child: wait_for must not see the last run's lines
  "$TARGET" --calls "$calls" "$@" <"$WORK/go" >"$TARGET_LOG" 2>&1 &
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

expect_unarmed() {
  local offset address
  for offset in "${PROBE_OFFSETS[@]}"; do
    address=$(live_address "$offset")
    [[ $(byte_at "$address") != cc ]] || die "$address already holds int3 before the run (a stray probe?)"
  done
}

go_and_measure() {
  printf g >&"$GO_FD"
  wait_for "$TARGET_LOG" '^ns_per_call' "$TARGET_PID" bench_target
  NS_PER_CALL=$(awk '$1 == "ns_per_call" { print $2 }' "$TARGET_LOG")
  CPU_NS_PER_CALL=$(awk '$1 == "cpu_ns_per_call" { print $2 }' "$TARGET_LOG")
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

# --- the variants: each sets NS_PER_CALL, CALLS_RUN, HITS_SEEN --------------

run_baseline() {
  CALLS_RUN=$CALLS
  start_target "$CALLS_RUN"
  expect_unarmed
  go_and_measure
  finish_target
  HITS_SEEN=0
}

run_bare_uprobe() {
  CALLS_RUN=$CALLS
  start_target "$CALLS_RUN"
  expect_unarmed
  remove_bare_events
  local i name
  for i in "${!PROBE_OFFSETS[@]}"; do
    name=hot
    ((i == 0)) || name=hot_ret$((i - 1))
    echo "p:$GROUP/$name $TARGET:${PROBE_OFFSETS[$i]}" >>"$TRACEFS/uprobe_events"
  done
  echo 1 >"$TRACEFS/events/$GROUP/enable"
  wait_armed "$TARGET_PID" "bench_target"
  go_and_measure
  # uprobe_profile: "FILE EVENT HITS", the event without its group.
  HITS_SEEN=$(awk -v path="$TARGET" '$1 == path && $2 ~ /^hot(_ret[0-9]+)?$/ { sum += $3 } END { print sum + 0 }' \
    "$TRACEFS/uprobe_profile")
  remove_bare_events
  finish_target
  check_hits bare_uprobe "$HITS_SEEN" $((CALLS_RUN * HITS_PER_CALL))
}

bpftrace_program() {
  local program="uprobe:$TARGET:hot" symbol
  for symbol in "${RET_SYMBOLS[@]}"; do program+=", uprobe:$TARGET:$symbol"; done
  echo "$program { @c = count(); }"
}

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
  grep -qx "Attaching $HITS_PER_CALL probes\.\.\." "$log" ||
    die "bpftrace attaches fewer probes than $HITS_PER_CALL: $(cat "$log")"
  wait_armed "$TRACER_PID" bpftrace
  go_and_measure
  [[ -z $BPF_STATS ]] || read_bpf_stats "$TRACER_PID"
  # bpftrace 0.17 can miss a SIGINT that lands between its exit-flag check
  # and its next epoll_wait, and then waits for events forever: repeat it.
  local polls=0
  while alive "$TRACER_PID"; do
    ((polls++ % 50 == 0)) && kill -INT "$TRACER_PID" 2>/dev/null
    sleep 0.02
  done
  wait "$TRACER_PID" || die "bpftrace exited with status $?: $(cat "$log")"
  TRACER_PID=""
  finish_target
  HITS_SEEN=$(awk '$1 == "@c:" { print $2 }' "$log")
  check_hits bpftrace "${HITS_SEEN:-none}" $((CALLS_RUN * HITS_PER_CALL))
}

xref_args() { # PID [MAX_WINDOWS] -> XREF_ARGS
  XREF_ARGS=(trace --pid "$1" --start outer --functions hot --max-windows "${2:-1}" --ringbuf-bytes "$RINGBUF_BYTES"
             --json)
}

run_xref() { # traced|untraced
  CALLS_RUN=$CALLS
  if [[ $1 == untraced ]]; then start_target "$CALLS_RUN" --untraced; else start_target "$CALLS_RUN"; fi
  expect_unarmed
  local out=$WORK/xref.json err=$WORK/xref.err
  # Traced: the window closes when outer returns and --max-windows 1 stops
  # xref. Untraced: no window ever opens, so it is stopped with SIGINT. To
  # read its program's statistics, xref must outlive the loop: --max-windows
  # 2 (never reached; the per-hit path is the same) and SIGINT.
  local max_windows=1
  [[ -z $BPF_STATS ]] || max_windows=2
  xref_args "$TARGET_PID" "$max_windows"
  : >"$out"
  : >"$err"
  "$XREF" "${XREF_ARGS[@]}" >"$out" 2>"$err" {GO_FD}>&- &
  TRACER_PID=$!
  wait_for "$err" 'tracing PID' "$TRACER_PID" xref
  wait_armed "$TRACER_PID" xref
  go_and_measure
  [[ -z $BPF_STATS ]] || read_bpf_stats "$TRACER_PID"
  [[ $1 == untraced || -n $BPF_STATS ]] && kill -INT "$TRACER_PID"
  wait "$TRACER_PID" || die "xref exited with status $?: $(cat "$err")"
  TRACER_PID=""
  finish_target
  local windows lost events stop
  read -r windows lost events stop < <(jq -r '.summary | "\(.windows) \(.lost) \(.events) \(.stop_reason)"' "$out")
  [[ $lost == 0 ]] || die "xref_$1: xref lost $lost events (see --ringbuf-bytes); the measurement is invalid"
  if [[ $1 == traced ]]; then
    [[ $windows == 1 ]] || die "xref_traced: expected one window, got $windows (stop $stop)"
    # The window holds outer's entry and return around the hot() events.
    HITS_SEEN=$((events - 2))
    check_hits xref_traced "$HITS_SEEN" $((CALLS_RUN * HITS_PER_CALL))
  else
    [[ $windows == 0 ]] || die "xref_untraced: a window opened ($windows); the run was not untraced"
    HITS_SEEN=unknown
  fi
}

run_gdb() {
  CALLS_RUN=$GDB_CALLS
  start_target "$CALLS_RUN"
  expect_unarmed
  local log=$WORK/gdb.log offset
  local args=(-nx -batch -p "$TARGET_PID")
  for offset in "${PROBE_OFFSETS[@]}"; do args+=(-ex "dprintf *$(live_address "$offset"),\"hit\\n\""); done
  args+=(-ex continue)
  : >"$log"
  gdb "${args[@]}" >"$log" 2>&1 {GO_FD}>&- &
  TRACER_PID=$!
  # gdb writes its breakpoints as it resumes the target ("Continuing." may
  # sit in its output buffer): the int3 bytes are the signal.
  wait_armed "$TRACER_PID" gdb
  go_and_measure
  finish_target # gdb's batch ends when the target exits
  wait "$TRACER_PID" || die "gdb exited with status $?: $(cat "$log")"
  TRACER_PID=""
  HITS_SEEN=$(grep -cx hit "$log" || true)
  check_hits gdb "$HITS_SEEN" $((CALLS_RUN * HITS_PER_CALL))
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
