#!/usr/bin/env bash
# shellcheck disable=SC2153  # ROUNDS, CALLS, ...: from context.sh
# bench/report_watch.sh WORK_DIR: the "xref watch" section of
# docs/performance.md (between its watch-bench markers), from what
# bench/run_watch.sh left in WORK_DIR: results.tsv (the rounds, as for
# bench/report.sh), attach.tsv (bench/watch_attach.py's runs), follow.tsv and
# follow_runs.tsv (the rearm records) and context.sh (the run's parameters).
set -euo pipefail
WORK=$1
# shellcheck source=/dev/null
source "$WORK/context.sh"
# shellcheck source=bench/report_lib.sh
source bench/report_lib.sh

PAIRS=(gdb_over_xref=gdb_sw/xref_stores)
((HW_FIRES == 0)) || PAIRS+=(gdbhw_over_xrefhw=gdb_hw/xref_hw xrefhw_over_perf=xref_hw/perf_mem)
analyse "$WORK" 1 "${PAIRS[@]}"

# A goal of "at least LIMIT×": met / missed on the median per-round ratio.
verdict_at_least() { # METRIC:NAME LIMIT
  awk -v r="${RATIO[$1]}" -v q1="${Q1[$1]}" -v q3="${Q3[$1]}" -v limit="$2" 'BEGIN {
    spread = sprintf("middle half of the rounds %.0f–%.0f×", q1, q3)
    if (r >= limit && q1 >= limit) printf "**met**: %.0f× (%s)", r, spread
    else if (r >= limit) printf "**met on the median**, %.0f×, but not settled: %s", r, spread
    else printf "**missed**: %.0f× (%s)", r, spread
  }'
}

watch_table() { # METRIC
  echo "| variant | writes per run | ns per write | ns per store over baseline | ratio to bare uprobe | ratio IQR |"
  echo "|---|---:|---:|---:|---:|---:|"
  row "$1" baseline "baseline (no watch)"
  row "$1" bare_uprobe "bare tracefs uprobe on the store"
  row "$1" xref_stores "xref watch --backend stores (g_watched written)"
  row "$1" gdb_sw "gdb software watchpoint"
  row "$1" xref_miss_pointer "xref stores, probed store misses (through a pointer)"
  row "$1" xref_miss_follow "xref stores, probed store misses (rip-relative, kept by --follow)"
  row "$1" xref_pruned "xref stores, rip-relative store pruned"
  if ((HW_FIRES)); then
    row "$1" gdb_hw "gdb hardware watchpoint"
    row "$1" perf_mem "perf stat -e mem:ADDR/8:w"
    row "$1" xref_hw "xref watch --backend hw"
  fi
  printf '| **gdb software watch ÷ xref stores** (per round) | | | | **%.0f×** | %.0f–%.0f× |\n' \
    "${RATIO[$1:gdb_over_xref]}" "${Q1[$1:gdb_over_xref]}" "${Q3[$1:gdb_over_xref]}"
  if ((HW_FIRES)); then
    printf '| **gdb hardware watch ÷ xref hw** (per round) | | | | **%.0f×** | %.0f–%.0f× |\n' \
      "${RATIO[$1:gdbhw_over_xrefhw]}" "${Q1[$1:gdbhw_over_xrefhw]}" "${Q3[$1:gdbhw_over_xrefhw]}"
    printf '| **xref hw ÷ perf mem breakpoint** (per round) | | | | **%.2f×** | %.2f–%.2f× |\n' \
      "${RATIO[$1:xrefhw_over_perf]}" "${Q1[$1:xrefhw_over_perf]}" "${Q3[$1:xrefhw_over_perf]}"
  fi
}

# What bounds the stores goal: no uprobe engine can beat the bare uprobe.
floor_text() {
  awk -v x="${RATIO[wall:xref_stores]}" -v g="${RATIO[wall:gdb_sw]}" -v xc="${RATIO[cpu:xref_stores]}" 'BEGIN {
    printf "**What bounds the stores ratio.** A recorded write under xref stores costs %.2f× a bare uprobe on the same store (wall clock; %.2f× in the target'\''s CPU time): the trap is nearly all of it. gdb'\''s software watchpoint costs %.0f× that bare uprobe here, so no engine built on uprobes could be more than about %.0f× faster than gdb on this host and load; a uprobe trap costs 16–25 µs of CPU on this kind of VM against about 1.4 µs on bare metal (the machine notes of the project), and the cost of a gdb single step differs from host to host too: the ratio is this host'\''s.", x, xc, g, g
  }'
}

# --- attach and follow figures -------------------------------------------------

ATTACH=$WORK/attach.tsv
attach_col() { awk -F'\t' -v t="$1" -v c="$2" '$1 == t { print $c }' "$ATTACH"; } # TOOL COLUMN
attach_cell() { attach_col "$1" "$2" | summary | awk '{ printf "%.0f ms (%.0f–%.0f)", $3, $2, $4 }'; }
attach_row() { # TOOL LABEL
  printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$2" "$(attach_col "$1" 1 | wc -l)" \
    "$(attach_col "$1" 9 | head -1)" "$(attach_cell "$1" 3)" "$(attach_cell "$1" 4)" "$(attach_cell "$1" 5)" \
    "$(attach_cell "$1" 7)" "$(attach_cell "$1" 8)" "$(attach_cell "$1" 6)"
}
attach_verdict() {
  attach_col xref 3 | summary | awk '{
    spread = sprintf("middle half of the runs %.0f–%.0f ms", $2, $4)
    if ($3 < 1000 && $4 < 1000) printf "**met**: %.0f ms (%s)", $3, spread
    else if ($3 < 1000) printf "**met on the median**, %.0f ms, but not settled: %s", $3, spread
    else printf "**missed**: %.0f ms (%s)", $3, spread
  }'
}
follow_us() { cut -f3 "$WORK/follow.tsv" | awk '{ print $1 / 1000 }'; }
read -r F_MIN F_Q1 F_MED F_Q3 F_MAX < <(follow_us | summary)
F_COUNT=$(wc -l <"$WORK/follow.tsv")

hw_text() {
  if ((HW_FIRES)); then
    echo "The debug registers fire on this host: \`xref doctor\`'s live self-test said \`$HW_LINE\`; the hw rows above were measured."
  else
    cat <<EOF
**Not measured on this host.** \`xref doctor --json\`'s live self-test said:

    hardware_breakpoints $HW_LINE

so the debug registers do not fire here: gdb's hardware \`watch\`, \`perf stat -e
mem:ADDR/8:w\` and \`xref watch --backend hw\` would count nothing (gdb's
hardware watchpoint never triggers; the program runs to its end). The script
asks the self-test at run time and, where it says \`ok\`, adds three variants to
the same rounds: \`gdb_hw\` (gdb \`watch g_watched\` with hardware watchpoints,
$GDB_HW_CALLS writes, each stop counted by its commands), \`perf_mem\` (\`perf stat
-e mem:ADDR/8:w -p PID\`, started disabled and enabled through its control
FIFO, its count checked against the writes) and \`xref_hw\` (\`xref watch
--backend hw\`, its writes and records checked like the stores run), with the
goals \`gdb hw ÷ xref hw ≥ 100×\` and \`xref hw ÷ perf ≤ 1.2×\` in the table
above.
EOF
  fi
}

cat <<EOF
<!-- watch-bench:begin -->
## \`xref watch\`: what a watched write costs, attaching 10,000 store sites, and \`--follow\`

Generated by \`bench/run_watch.sh\` on $STARTED, commit $(commit_text).
Do not edit by hand: rerun the benchmark (see the end of this section).
The method is bench/run.sh's (the first section): rotated rounds of short
runs, each in a fresh target, checked before it counts.

### What is measured: the cost of a watched write

\`build/bench/watch_workload --calls N [--store watched|pointer|static]\`
(\`bench/watch_workload.c\`, gcc -O2, PIE) waits for a go byte, then runs one
loop of N stores, each writing \`i + 1\`, timed with \`CLOCK_MONOTONIC\` and
\`CLOCK_THREAD_CPUTIME_ID\`: \`write_watched\` stores to \`g_watched\` (static VA
of the store \`$WATCHED_VA\`, \`mov qword ptr [rip + …], rax\`), \`write_pointer\`
stores through a register to \`g_other\` (\`$POINTER_VA\`), \`write_static\` stores
rip-relative to \`g_other\` (\`$STATIC_VA\`). Every xref run watches \`g_watched\`
by its live address (\`0xADDR:8\`, the address the workload prints).

| variant | what runs |
|---|---|
| baseline | \`--store watched\`, no watch |
| bare uprobe | a tracefs uprobe event on the store (\`$WATCHED_VA\`), enabled, nothing else: the per-hit floor of any uprobe |
| xref stores | \`xref watch --pid PID 0xADDR:8 --backend stores --duration-ms 0 --max-events 0 --json\`, stopped with SIGINT after the loop; every write recorded |
| gdb software watch | \`gdb -batch -p PID\`: \`set can-use-hw-watchpoints 0\`, \`watch g_watched\`, \`commands / silent / printf "hit\\n" / continue / end\`, \`continue\`; **$GDB_CALLS writes** (gdb single-steps every instruction, tens of ms per write here) |
| xref stores, store misses: pointer | \`--store pointer\` under the same xref command: every store is a probe hit whose address is not watched (no static pruning can rule out a store through a register) |
| xref stores, store misses: --follow | \`--store static\` under the same command plus \`--follow '0xG_SLOT->+16:8'\`: a range that may move anywhere keeps every rip-relative store probed |
| xref stores, pruned | \`--store static\` under the same command, no --follow: the rip-relative store cannot reach \`g_watched\` and is not probed (checked: no int3 there) |

One round runs every variant once in an order rotated from round to round;
$ROUNDS rounds of $CALLS writes. Per round, **ns per store over baseline** = the
variant's ns per write − that round's baseline ns per write, and the **ratio**
is that over the same round's bare-uprobe figure; **gdb software watch ÷ xref
stores** is gdb's figure over xref's, same round. Medians over the rounds, a
ratio as the median of the per-round ratios with its interquartile range.
The baseline is the \`write_watched\` loop; the other two loops differ from it
by nothing but the store's address (each runs about 1–3 ns per store
unwatched). gdb's per-write time includes the few single-stepped
instructions around the workload's clock reads (system calls, not the vDSO:
under single-stepping the vDSO's seqlock retried at every timer tick and gdb
never reached the loop), about one write's worth, so up to 1/$GDB_CALLS of its
figure; its watchpoint is deleted at the last write, so the workload's exit
path runs free. gdb runs only $GDB_CALLS writes because a single step's cost varies
widely on this kind of VM: its rows spread far wider than any other.

A run counts only when checked: the bare uprobe's hits in \`uprobe_profile\` and
gdb's printed \`hit\` lines equal the writes; xref stopped as \`interrupted\`, its
\`summary[0].writes\` and \`summary[0].recorded\` equal the writes (0 in the miss
runs), every write's writer is the loop's store, nothing lost, \`complete\`, no
unobserved change; every probed store held \`int3\` before the go byte. A run
that fails its check stops the script with the reason, and nothing is written.

Sites xref probed in the executable (the default scope, plus libc's
memcpy/memset/... by contract): watching \`g_watched\`: $SITES_WATCHED; with
\`--follow\`: $SITES_FOLLOW.

### Machine

$(machine_lines)
- debug registers (\`xref doctor --json\`, hardware_breakpoints): $HW_LINE
- the run shared the machine's 2 CPUs with other work (builds and tests of other branches; the load
  averages above): the wall-clock figures include time the target waited for a CPU, which is why the
  CPU-time tables are given beside them

### Per write: wall clock (medians of $ROUNDS rounds)

EOF
watch_table wall
cat <<EOF

Run-to-run noise: the bare uprobe alone cost $(printf '%.0f' "${BARE_MIN[wall]}") to $(printf '%.0f' "${BARE_MAX[wall]}") ns per
hit across the rounds.

### Per write: the target thread's CPU time (same runs)

\`CLOCK_THREAD_CPUTIME_ID\` around the same loop: the trap and the uprobe
handlers run on that thread; waiting for a CPU (or for gdb) does not count.

EOF
watch_table cpu
cat <<EOF

### Goals

| goal | wall clock (the measurement asked for) | target CPU time (cross check) |
|---|---|---|
| stores: gdb software watch ≥ 100× the time per write of xref stores | $(verdict_at_least wall:gdb_over_xref 100) | $(printf '%.0f×' "${RATIO[cpu:gdb_over_xref]}") — not a measure of gdb: its work (a ptrace stop per instruction, the value read and compared) runs in gdb's process, outside the target thread's CPU time |
EOF
if ((HW_FIRES)); then
  cat <<EOF
| hw: gdb hardware watch ≥ 100× the time per write of xref hw | $(verdict_at_least wall:gdbhw_over_xrefhw 100) | $(printf '%.0f×' "${RATIO[cpu:gdbhw_over_xrefhw]}") — gdb's own work is outside the target thread's CPU time |
| hw: xref hw ≤ 1.2× a bare perf breakpoint counter | $(verdict wall:xrefhw_over_perf 1.2) | $(verdict cpu:xrefhw_over_perf 1.2) |
EOF
else
  cat <<EOF
| hw: gdb hardware watch ≥ 100× xref hw; xref hw ≤ 1.2× \`perf stat -e mem:ADDR:w\` | not measured: the debug registers do not fire here (below) | — |
EOF
fi
cat <<EOF
| 10,000 store sites attached in < 1 s (exec until armed) | $(attach_verdict) | — |
| \`--follow\` re-arm latency: median, max (no goal set) | median $(printf '%.0f' "$F_MED") µs, max $(printf '%.0f' "$F_MAX") µs over $F_COUNT re-arms | — |

$(floor_text)

**The cost every probed store pays.** A store xref probes costs its uprobe
trap whether or not it writes a watched range: the "store misses" rows are
that cost (the BPF program computes the address and finds no range), next to
the write that is recorded (\`xref stores\`, which also reads the old bytes and
sends a record through the ring buffer). The "pruned" row is the store that
static pruning took out: it costs nothing. So the slowdown of a watched
program is (probed stores executed) × the per-hit cost above; \`--in\`, and a
watch without \`--follow\`, keep the probed set small.

### hw engine: gdb hardware watch, perf breakpoints, xref --backend hw

$(hw_text)

### Attach time: 10,000 store sites

\`build/bench/many_stores\` (\`bench/many_stores.c\`, gcc -O2, PIE) has 1,000
functions \`st_000\` … \`st_999\`, each with 10 stores through a pointer argument
into the global \`scratch\` array (80,000 bytes) and one rip-relative store to a
counter of its own; it calls each once per byte it reads.
\`bench/watch_attach.py\` starts a fresh target, then
\`xref watch --pid PID 0xSCRATCH:80000 --backend stores --duration-ms 0 --max-events 0 --json\`
(all of \`scratch\`; the counters' stores are pruned), and, as the fixed
start-up, the same on \`0xSCRATCH:80 --in st_000\` (10 stores). Times from the
exec (\`CLOCK_MONOTONIC\`): **armed** is the JSON's \`result.armed_ns\` (every
uprobe in, the program recording); **line**, xref's \`xref: watching PID … N
uprobes\` on stderr; **int3**, all the stores in scope hold \`int3\` in the
target's memory (polled through \`/proc/PID/mem\`); then one go byte
(**workload**: 10,000 recorded writes), SIGINT, **stop** (SIGINT to exit) and
**whole** (exec to exit). A run counts when the writers of xref's recorded
writes are exactly the stores \`objdump\` lists in scope, one write each,
nothing lost, no unobserved change. Median (interquartile range):

| run | runs | uprobes | armed | line | int3 in place | stop | whole command | workload (in whole) |
|---|---:|---:|---:|---:|---:|---:|---:|---:|
$(attach_row xref "10,000 stores (all of scratch)")
$(attach_row xref_1 "st_000 only (\`--in st_000\`)")

Sites of the 10,000-store runs (JSON \`result.sites\`): $(awk -F'\t' '$1 == "xref" { printf "%s uprobes, %s stores probed, %s pruned as static, %s as stack, in %s functions", $9, $10, $11, $12, $13; exit }' "$ATTACH") (the uprobes beyond the stores are libc's memcpy/memset/... entries and returns, by contract).

### \`--follow\` re-arm latency

\`watch_workload --moves $MOVES --pace-us $PACE_US\` moves a heap block $MOVES times with
\`realloc\` (an allocation after each new block keeps the next realloc from
growing in place: every move is real, checked), storing the new pointer in
\`g_slot\` (\`move_buffer\`), then after $PACE_US µs writes the new block's
length field at +16 (\`set_length\`), then waits $PACE_US µs again. Under
\`xref watch --pid PID --follow '0xG_SLOT->+16:8' --backend stores --duration-ms 0 --max-events 0 --json\`
each move is a \`rearm\` record whose \`unwatched_ns\` runs from the slot's
write (the BPF record's time) to the ranges-map update that watches the new
place (the helper's \`CLOCK_MONOTONIC\`): the window in which a write to the
new place is missed. A run counts when the rearms and the slot's writes both
equal $MOVES, none parked, nothing lost. The helper moves a range when it
reads the slot's record, and it reads the ring buffer every 20 ms when idle
(\`kDrainIntervalMs\` in helper/attach/run_loop.cpp): most of the interval is
that wait, so a median near 10 ms and a max near 20 ms (plus scheduling on a
loaded machine) are what this design gives. A length write inside the
interval is neither a write nor an unobserved change: the new place is read
when it is armed, after that write (the per-run table counts them).
$FOLLOW_ROUNDS runs, $F_COUNT re-arms:

| re-arms | min | Q1 | median | Q3 | max |
|---:|---:|---:|---:|---:|---:|
| $F_COUNT | $(printf '%.0f µs | %.0f µs | **%.0f µs** | %.0f µs | **%.0f µs**' "$F_MIN" "$F_Q1" "$F_MED" "$F_Q3" "$F_MAX") |

Per run (length writes recorded at the block's new place, of $MOVES; writes
xref saw as unobserved changes instead):

| run | rearms | median | max | length writes recorded | unobserved changes |
|---:|---:|---:|---:|---:|---:|
$(while IFS=$'\t' read -r run rearms lengths unobserved _; do
  read -r _ _ med _ max < <(awk -F'\t' -v r="$run" '$1 == r { print $3 / 1000 }' "$WORK/follow.tsv" | summary)
  printf '| %s | %s | %.0f µs | %.0f µs | %s | %s |\n' "$run" "$rearms" "$med" "$max" "$lengths" "$unobserved"
done <"$WORK/follow_runs.tsv")

### Every round

Per-write runs (ratios to the same round's bare uprobe):

EOF
every_round_table "${PAIRS[@]%%=*}"
cat <<EOF

Attach runs (ms from exec):

| run | round | armed | line | int3 in place | workload | stop | whole command | uprobes |
|---|---:|---:|---:|---:|---:|---:|---:|---:|
$(awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9 }' "$ATTACH")

### The exact commands

\`\`\`sh
build/bench/watch_workload --calls $CALLS [--store pointer|static]
echo 'p:$GROUP/store build/bench/watch_workload:$WATCHED_OFFSET' >> $TRACEFS/uprobe_events   # bare uprobe
echo 1 > $TRACEFS/events/$GROUP/enable
build/helper/xref watch --pid PID 0xG_WATCHED:8 --backend stores [--follow '0xG_SLOT->+16:8'] --duration-ms 0 --max-events 0 --json
gdb -nx -batch -p PID -x watch.gdb   # set can-use-hw-watchpoints 0; watch g_watched; commands/silent/printf "hit\n"/continue/end; continue
build/helper/xref doctor --json      # hardware_breakpoints: decides the hw variants
perf stat -x, -e mem:0xG_WATCHED/8:w -p PID -D -1 --control fifo:CTL,ACK   # where the debug registers fire
build/helper/xref watch --pid PID 0xG_WATCHED:8 --backend hw --duration-ms 0 --max-events 0 --json   # ditto
build/bench/many_stores
build/helper/xref watch --pid PID 0xSCRATCH:80000 --backend stores --duration-ms 0 --max-events 0 --json
build/bench/watch_workload --moves $MOVES --pace-us $PACE_US
build/helper/xref watch --pid PID --follow '0xG_SLOT->+16:8' --backend stores --duration-ms 0 --max-events 0 --json
\`\`\`

### Rerun

Build, then as root from the repository root:

\`\`\`sh
cmake --build build --target xref bench_target watch_workload many_stores
sudo bash bench/run_watch.sh
\`\`\`

It rewrites only this section, and measures a copy of \`build/helper/xref\`
taken at its start. \`ROUNDS\`, \`CALLS\`, \`GDB_CALLS\`, \`GDB_HW_CALLS\`,
\`ATTACH_ROUNDS\`, \`FOLLOW_ROUNDS\`, \`MOVES\` and \`PACE_US\` change the run's size;
with \`LOCK=FILE[:FILE…]\` each round, attach run and follow run holds \`flock\`
on all of them. This run: $ROUNDS rounds of $CALLS writes ($GDB_CALLS under gdb), $ATTACH_ROUNDS attach
rounds, $FOLLOW_ROUNDS follow runs of $MOVES moves${LOCK_TEXT:-}.
<!-- watch-bench:end -->
EOF
