#!/usr/bin/env bash
# bench/run_modes.sh: what observing one call costs in each of xref trace's
# ways of seeing returns, and what an entry probe on a 5-byte nop saves,
# measured side by side (interleaved, ROUNDS rounds) in one run. Writes the
# "Tracing modes" section of docs/performance.md.
#
#   sudo bash bench/run_modes.sh     # from the repository root, after building
#
# Knobs: ROUNDS (7), CALLS (15000), BUILD_DIR (build), OUT (docs/performance.md).
#
# The workload is bench_target's loop: outer(n) calls hot(i) n times; every
# variant sees exactly two probe hits per call, and each xref run must report
# one complete window of 2 * CALLS + 2 events with nothing lost, or the run
# is not a valid measurement and the script stops.
set -euo pipefail
cd "$(dirname "$0")/.."

ROUNDS=${ROUNDS:-7}
CALLS=${CALLS:-15000}
BUILD_DIR=${BUILD_DIR:-build}
OUT=${OUT:-docs/performance.md}
RINGBUF_BYTES=$((64 << 20))
VARIANTS=(baseline ret_site call_site uretprobe baseline_nop nop5_entry bare_int3 bare_nop5)
TRACEFS=/sys/kernel/tracing
GROUP=xrefmodes

die() {
  echo "bench: $*" >&2
  exit 1
}

[[ $(id -u) -eq 0 ]] || die "needs root (uprobes, BPF): sudo bash bench/run_modes.sh"
TARGET=$(realpath "$BUILD_DIR/bench/bench_target" 2>/dev/null) || true
XREF=$(realpath "$BUILD_DIR/helper/xref" 2>/dev/null) || true
[[ -x ${TARGET:-} && -x ${XREF:-} ]] || die "build first: bash scripts/build.sh (looked in $BUILD_DIR/)"
for tool in jq nm; do command -v "$tool" >/dev/null || die "$tool is missing"; done
bash scripts/mount-tracefs.sh >/dev/null
# hot_nop is endbr64 (4 bytes), then the 5-byte nop: the bare variants put
# one tracefs uprobe on each, the same function and the same call path.
HOT_NOP_VA=$(nm "$TARGET" | awk '$3 == "hot_nop" { print "0x" $1 }')
[[ -n $HOT_NOP_VA ]] || die "no symbol hot_nop in $TARGET"
HOT_NOP_OFFSET=""
while read -r type offset vaddr _ filesz _; do
  [[ $type == LOAD ]] && ((HOT_NOP_VA >= vaddr && HOT_NOP_VA < vaddr + filesz)) &&
    HOT_NOP_OFFSET=$((HOT_NOP_VA - vaddr + offset))
done < <(readelf -lW "$TARGET")
[[ -n $HOT_NOP_OFFSET ]] || die "hot_nop is in no PT_LOAD segment"

WORK=$(mktemp -d /tmp/xref-bench-modes.XXXXXX)
TARGET_PID=""
TRACER_PID=""
GO_FD=""

remove_bare_events() {
  [[ -d $TRACEFS/events/$GROUP ]] || return 0
  echo 0 >"$TRACEFS/events/$GROUP/enable" 2>/dev/null || true
  echo "-:$GROUP/entry" >>"$TRACEFS/uprobe_events" 2>/dev/null || true
}

cleanup() {
  remove_bare_events
  [[ -z $GO_FD ]] || exec {GO_FD}>&-
  [[ -z $TARGET_PID ]] || kill -KILL "$TARGET_PID" 2>/dev/null || true
  [[ -z $TRACER_PID ]] || kill -TERM "$TRACER_PID" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'echo "bench: interrupted" >&2; exit 130' INT TERM

alive() {
  local state
  state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
  [[ -n $state && $state != Z ]]
}

wait_for() { # FILE REGEX PID WHAT
  until grep -qE "$2" "$1" 2>/dev/null; do
    alive "$3" || die "$4 ended before printing /$2/: $(cat "$1" 2>/dev/null)"
    sleep 0.02
  done
}

# The target blocks on a FIFO whose write end only this shell holds.
start_target() { # [bench_target flags]
  rm -f "$WORK/go"
  mkfifo "$WORK/go"
  : >"$WORK/target.log"
  "$TARGET" --calls "$CALLS" "$@" <"$WORK/go" >"$WORK/target.log" 2>&1 &
  TARGET_PID=$!
  exec {GO_FD}>"$WORK/go"
  wait_for "$WORK/target.log" '^ready' "$TARGET_PID" bench_target
}

measure_and_finish() {
  printf g >&"$GO_FD"
  wait_for "$WORK/target.log" '^ns_per_call' "$TARGET_PID" bench_target
  NS_PER_CALL=$(awk '$1 == "ns_per_call" { print $2 }' "$WORK/target.log")
  CPU_NS_PER_CALL=$(awk '$1 == "cpu_ns_per_call" { print $2 }' "$WORK/target.log")
  if [[ -n $TRACER_PID ]]; then
    wait "$TRACER_PID" || die "xref exited with status $?: $(cat "$WORK/xref.err")"
    TRACER_PID=""
  fi
  exec {GO_FD}>&-
  GO_FD=""
  wait "$TARGET_PID" || die "bench_target exited with status $?"
  TARGET_PID=""
}

# xref_args VARIANT PID -> XREF_ARGS: the one window is outer's call.
xref_args() {
  XREF_ARGS=(trace --pid "$2" --max-windows 1 --ringbuf-bytes "$RINGBUF_BYTES" --json)
  case $1 in
    ret_site) XREF_ARGS+=(--start outer --functions hot) ;;
    call_site) XREF_ARGS+=(--start outer --callees-of outer --depth 1) ;;
    uretprobe) XREF_ARGS+=(--start outer --functions hot --uretprobes) ;;
    nop5_entry) XREF_ARGS+=(--start outer_nop --functions hot_nop) ;;
    *) die "no xref arguments for $1" ;;
  esac
}

# What each variant's summary must say about how returns were seen.
expected_return_mode() {
  case $1 in
    call_site) echo call_site_exact ;;
    uretprobe) echo mixed_uretprobe_best_effort ;;
    *) echo ret_site_exact ;;
  esac
}

# One tracefs uprobe at hot_nop + DELTA (0: endbr64, an int3 probe; 4: the
# 5-byte nop, which 6.18+ kernels optimise into a call), nothing attached to it.
run_bare() { # DELTA
  remove_bare_events
  echo "p:$GROUP/entry $TARGET:$(printf '0x%x' $((HOT_NOP_OFFSET + $1)))" >>"$TRACEFS/uprobe_events"
  echo 1 >"$TRACEFS/events/$GROUP/enable"
  measure_and_finish_bare
}

measure_and_finish_bare() {
  measure_and_finish
  local hits
  hits=$(awk -v path="$TARGET" '$1 == path && $2 == "entry" { print $3 }' "$TRACEFS/uprobe_profile")
  remove_bare_events
  [[ $hits == "$CALLS" ]] || die "bare uprobe fired ${hits:-0} times, expected $CALLS; the measurement is invalid"
}

run_variant() { # VARIANT
  local variant=$1
  case $variant in
    baseline) start_target ;;
    baseline_nop) start_target --nop-entry ;;
    nop5_entry | bare_*) start_target --nop-entry ;;
    *) start_target ;;
  esac
  if [[ $variant == baseline* ]]; then
    measure_and_finish
    return
  fi
  if [[ $variant == bare_* ]]; then
    run_bare "$([[ $variant == bare_nop5 ]] && echo 4 || echo 0)"
    return
  fi
  xref_args "$variant" "$TARGET_PID"
  : >"$WORK/xref.err"
  "$XREF" "${XREF_ARGS[@]}" >"$WORK/xref.json" 2>"$WORK/xref.err" {GO_FD}>&- &
  TRACER_PID=$!
  # xref prints this line once every probe is attached.
  wait_for "$WORK/xref.err" 'tracing PID' "$TRACER_PID" xref
  measure_and_finish
  local events lost complete mode nop5
  read -r events lost complete mode nop5 < <(jq -r '.summary |
    "\(.events) \(.lost) \(.complete_windows) \(.return_mode) \(.nop5_probes | length)"' "$WORK/xref.json")
  [[ $lost == 0 ]] || die "$variant: xref lost $lost events; the measurement is invalid"
  [[ $complete == 1 ]] || die "$variant: xref closed $complete complete windows, expected 1"
  [[ $events == $((2 * CALLS + 2)) ]] || die "$variant: xref saw $events events, expected $((2 * CALLS + 2))"
  [[ $mode == "$(expected_return_mode "$variant")" ]] || die "$variant: return_mode $mode"
  if [[ $variant == nop5_entry ]]; then
    ((nop5 > 0)) || die "nop5_entry: xref put no probe on hot_nop's 5-byte nop"
  else
    ((nop5 == 0)) || die "$variant: xref reports $nop5 probes on a 5-byte nop; expected int3 probes only"
  fi
}

RESULTS=$WORK/results.tsv
: >"$RESULTS"
STARTED=$(date -u '+%Y-%m-%d %H:%M UTC')
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
echo "bench: $ROUNDS rounds of ${VARIANTS[*]}; $CALLS calls per run"
for ((round = 1; round <= ROUNDS; round++)); do
  for ((k = 0; k < ${#VARIANTS[@]}; k++)); do
    variant=${VARIANTS[$(((k + round - 1) % ${#VARIANTS[@]}))]}
    run_variant "$variant"
    printf '%s\t%s\t%s\t%s\n' "$round" "$variant" "$NS_PER_CALL" "$CPU_NS_PER_CALL" >>"$RESULTS"
    printf 'bench: round %d %-13s %10s ns/call %10s CPU ns/call\n' "$round" "$variant" "$NS_PER_CALL" \
      "$CPU_NS_PER_CALL"
  done
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

# Medians per variant, the cost each adds to a call over its own baseline,
# and that cost relative to the default (ret_site) mode.
table=$(python3 - "$RESULTS" <<'PY'
import statistics, sys
rows = [line.split("\t") for line in open(sys.argv[1]).read().splitlines()]
wall, cpu = {}, {}
for _, variant, ns, cpu_ns in rows:
    wall.setdefault(variant, []).append(float(ns))
    cpu.setdefault(variant, []).append(float(cpu_ns))
median = {v: statistics.median(x) for v, x in wall.items()}
cpu_median = {v: statistics.median(x) for v, x in cpu.items()}
base = {"ret_site": "baseline", "call_site": "baseline", "uretprobe": "baseline", "nop5_entry": "baseline_nop",
        "bare_int3": "baseline_nop", "bare_nop5": "baseline_nop"}
what = {
    "baseline": "no tracer; outer calls hot",
    "ret_site": "`--functions hot`: entry probe + probe on hot's ret (default)",
    "call_site": "`--callees-of outer`: probes on the call and its return site in outer",
    "uretprobe": "`--functions hot --uretprobes`: entry probe + uretprobe",
    "baseline_nop": "no tracer; outer_nop calls hot_nop",
    "nop5_entry": "`--functions hot_nop`: entry probe on the 5-byte nop + ret probe",
    "bare_int3": "one tracefs uprobe on hot_nop's endbr64 (int3)",
    "bare_nop5": "one tracefs uprobe on hot_nop's 5-byte nop",
}
cost = {v: median[v] - median[b] for v, b in base.items()}
print("| variant | what is probed | ns per call | CPU ns per call | added per call (ns) | vs ret_site |")
print("|---|---|---:|---:|---:|---:|")
for v in ["baseline", "ret_site", "call_site", "uretprobe", "baseline_nop", "nop5_entry", "bare_int3", "bare_nop5"]:
    added = f"{cost[v]:.0f}" if v in cost else ""
    ratio = f"{cost[v] / cost['ret_site']:.2f}x" if v in cost else ""
    print(f"| {v} | {what[v]} | {median[v]:.0f} | {cpu_median[v]:.0f} | {added} | {ratio} |")
print()
print(f"Per call, the call-site/return-site mode costs {cost['call_site'] / cost['uretprobe']:.2f}x what "
      f"entry+uretprobe costs ({cost['call_site']:.0f} vs {cost['uretprobe']:.0f} ns). "
      f"One bare uprobe on the 5-byte nop costs {cost['bare_nop5']:.0f} ns per hit against "
      f"{cost['bare_int3']:.0f} ns for an int3 uprobe on the endbr64 before it "
      f"({cost['bare_int3'] / cost['bare_nop5']:.1f}x).")
PY
)
section=$(cat <<SECTION
<!-- modes-bench:begin -->
## Tracing modes: call-site/return-site vs entry+uretprobe, nop5 vs int3 entry

Generated by \`bench/run_modes.sh\` on $STARTED, kernel $(uname -r), load $LOAD_BEFORE before and $LOAD_AFTER after.
$ROUNDS interleaved rounds of $CALLS calls per run, medians. Every traced
variant takes exactly two probe hits per call of hot, and every run had to
report one complete window of $((2 * CALLS + 2)) events with none lost and the
expected \`return_mode\`. "Added per call" is the median minus the median of the
variant's own untraced baseline.

$table

How to read it: every traced variant takes two probe hits per call, so
the rows differ only in where the probes sit. ret_site's entry probe is on
hot's first instruction (a 10-byte \`movabs\`), nop5_entry's on the 5-byte nop
of a function of the same body: the gap between those two rows is the price
of an int3 entry probe over a nop5 one, and the bare pair measures the same
thing with nothing but one tracefs uprobe (same function, same call path).
The call-site mode is chosen for what it gives, not for speed: exact call
sites and returns that survive C++ exceptions and Rust panics through traced
frames, where a uretprobe kills the target (docs/trace.md). Rerun:
\`sudo bash bench/run_modes.sh\`.
<!-- modes-bench:end -->
SECTION
)
printf '%s\n' "$section" | python3 bench/doc_section.py put "$OUT" modes-bench
echo "bench: wrote $OUT"
echo "$table"
