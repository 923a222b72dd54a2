# shellcheck shell=bash disable=SC2034  # sets variables bench/run.sh reads
# bench/variants.sh: sourced by bench/run.sh. The probe sites of xref trace
# --functions hot, and the variants only this benchmark runs (xref trace,
# gdb); the plumbing, the baseline, the bare uprobe, bpftrace and the rounds
# are bench/lib.sh's. Each run_<variant> sets NS_PER_CALL, CPU_NS_PER_CALL,
# CALLS_RUN and HITS_SEEN, and dies when the run is not a valid measurement
# (a probe that did not fire, a lost xref event).

# shellcheck source=bench/lib.sh
source bench/lib.sh
bench_setup bench/run.sh xrefbench

# --- the probe sites: hot's entry and each of its ret instructions ---------

find_hot
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
# The bare uprobe's event names, one per site.
BARE_NAMES=(hot)
for ((i = 1; i < HITS_PER_CALL; i++)); do BARE_NAMES+=("hot_ret$((i - 1))"); done

run_variant() {
  case $1 in
    xref_traced) run_xref traced ;;
    xref_untraced) run_xref untraced ;;
    *) "run_$1" ;;
  esac
}

# One program run per hit: this also checks xref untraced's hit count,
# which xref itself cannot report (outer's entry and ret add 2 when traced).
expected_program_runs() {
  local expected=$((CALLS * HITS_PER_CALL))
  [[ $1 == xref_traced ]] && expected=$((expected + 2))
  echo "$expected"
}

# --- the variants: each sets NS_PER_CALL, CALLS_RUN, HITS_SEEN --------------

bpftrace_program() {
  local program="uprobe:$TARGET:hot" symbol
  for symbol in "${RET_SYMBOLS[@]}"; do program+=", uprobe:$TARGET:$symbol"; done
  echo "$program { @c = count(); }"
}

xref_args() { # PID [MAX_WINDOWS] -> XREF_ARGS
  XREF_ARGS=(trace --pid "$1" --start outer --functions hot --max-windows "${2:-1}" --ringbuf-bytes "$RINGBUF_BYTES"
             --json)
}

run_xref() { # traced|untraced
  CALLS_RUN=$CALLS
  if [[ $1 == untraced ]]; then start_target "$CALLS_RUN" --untraced; else start_target "$CALLS_RUN"; fi
  expect_unarmed
  # Traced: the window closes when outer returns and --max-windows 1 stops
  # xref. Untraced: no window ever opens, so it is stopped with SIGINT. To
  # read its program's statistics, xref must outlive the loop: --max-windows
  # 2 (never reached; the per-hit path is the same) and SIGINT.
  local max_windows=1
  [[ -z $BPF_STATS ]] || max_windows=2
  xref_args "$TARGET_PID" "$max_windows"
  start_xref 'tracing PID' "${XREF_ARGS[@]}"
  go_and_measure
  if [[ $1 == untraced || -n $BPF_STATS ]]; then finish_xref --interrupt; else finish_xref; fi
  finish_target
  local windows lost events stop
  read -r windows lost events stop < <(jq -r '.summary | "\(.windows) \(.lost) \(.events) \(.stop_reason)"' "$XREF_OUT")
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
