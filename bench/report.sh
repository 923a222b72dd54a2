#!/usr/bin/env bash
# bench/report.sh WORK_DIR: the markdown of docs/performance.md, from what
# bench/run.sh left in WORK_DIR: results.tsv (round, variant, ns per call,
# calls, hits seen, CPU ns per call), bpf_stats.tsv (run, variant, BPF run
# time ns, program runs) and context.sh (the run's parameters and commands).
#
# Two metrics, one analysis: "wall" (CLOCK_MONOTONIC, what the issue asks
# for) and "cpu" (the target thread's CPU time, a cross check that other
# processes on the machine do not inflate).
set -euo pipefail
WORK=$1
# shellcheck source=/dev/null
source "$WORK/context.sh"
RESULTS=$WORK/results.tsv
declare -A COLUMN=([wall]=3 [cpu]=6)

# Per round: ns per hit = (ns per call - that round's baseline) / hits per
# call; ratio = that / the same round's bare-uprobe ns per hit; and xref
# traced against the same round's bpftrace. Lines: round, variant, ns per
# call, ns per hit, ratio.
per_round() { # METRIC
  awk -F'\t' -v hpc="$HITS_PER_CALL" -v c="${COLUMN[$1]}" '
    { ns[$1, $2] = $c; rounds[$1] = 1; variants[$2] = 1 }
    END {
      for (r in rounds) {
        base = ns[r, "baseline"]
        bare = (ns[r, "bare_uprobe"] - base) / hpc
        for (v in variants) {
          hit = v == "baseline" ? 0 : (ns[r, v] - base) / hpc
          printf "%s\t%s\t%s\t%.1f\t%.3f\n", r, v, ns[r, v], hit, hit / bare
        }
        t = (ns[r, "xref_traced"] - base) / hpc
        b = (ns[r, "bpftrace"] - base) / hpc
        printf "%s\t%s\t%s\t%.1f\t%.3f\n", r, "traced_vs_bpftrace", "-", t - b, t / b
      }
    }' "$RESULTS" | sort -k1,1n -k2,2
}
for metric in wall cpu; do per_round "$metric" >"$WORK/per_round_$metric.tsv"; done

column_of() { awk -F'\t' -v v="$2" -v c="$3" '$2 == v { print $c }' "$WORK/per_round_$1.tsv"; } # METRIC VARIANT COLUMN
# "MIN Q1 MEDIAN Q3 MAX" of the numbers on stdin (linear interpolation).
summary() {
  sort -g | awk '
    function q(p,   pos, lo) { pos = 1 + (NR - 1) * p; lo = int(pos); return v[lo] + (pos - lo) * (v[lo + 1] - v[lo]) }
    { v[NR] = $1 }
    END { v[NR + 1] = v[NR]; print v[1], q(0.25), q(0.5), q(0.75), v[NR] }'
}
median_of() { summary | cut -d' ' -f3; }

# Medians, keyed METRIC:VARIANT.
declare -A NS HIT RATIO Q1 Q3 BARE_MIN BARE_MAX SLOWER
for metric in wall cpu; do
  for variant in baseline bare_uprobe bpftrace xref_traced xref_untraced gdb traced_vs_bpftrace; do
    key=$metric:$variant
    NS[$key]=$(column_of "$metric" "$variant" 3 | median_of)
    HIT[$key]=$(column_of "$metric" "$variant" 4 | median_of)
    read -r _ "Q1[$key]" "RATIO[$key]" "Q3[$key]" _ < <(column_of "$metric" "$variant" 5 | summary)
  done
  read -r "BARE_MIN[$metric]" _ _ _ "BARE_MAX[$metric]" < <(column_of "$metric" bare_uprobe 4 | summary)
  SLOWER[$metric]=$(column_of "$metric" traced_vs_bpftrace 5 | awk '$1 > 1 { n++ } END { print n + 0 }')
done

# verdict METRIC:VARIANT LIMIT: met / missed on the median ratio, and
# whether the middle half of the rounds lies on one side of the goal.
verdict() {
  awk -v r="${RATIO[$1]}" -v q1="${Q1[$1]}" -v q3="${Q3[$1]}" -v limit="$2" 'BEGIN {
    spread = sprintf("middle half of the rounds %.2f–%.2f×", q1, q3)
    if (r <= limit && q3 <= limit) printf "**met**: %.2f× (%s)", r, spread
    else if (r <= limit) printf "**met on the median**, %.2f×, but not settled: %s", r, spread
    else if (q1 > limit) printf "**missed**: %.2f×, %.0f %% over the goal (%s)", r, (r / limit - 1) * 100, spread
    else printf "**missed on the median**: %.2f×, %.0f %% over the goal, but not settled: %s", r, (r / limit - 1) * 100, spread
  }'
}

row() { # METRIC VARIANT LABEL
  local key=$1:$2 calls
  calls=$(awk -F'\t' -v v="$2" '$2 == v { print $4; exit }' "$RESULTS")
  if [[ $2 == baseline ]]; then
    printf '| %s | %s | %s | — | — | — |\n' "$3" "$calls" "${NS[$key]}"
  elif [[ $1 == cpu && $2 == gdb ]]; then
    printf '| %s | %s | %.0f | — | — | — |\n' "$3" "$calls" "${NS[$key]}"
  else
    printf '| %s | %s | %.0f | %.0f | %.2f× | %.2f–%.2f× |\n' "$3" "$calls" "${NS[$key]}" "${HIT[$key]}" \
      "${RATIO[$key]}" "${Q1[$key]}" "${Q3[$key]}"
  fi
}

results_table() { # METRIC
  echo "| variant | calls per run | ns per call | ns per hit | ratio to bare uprobe | ratio IQR |"
  echo "|---|---:|---:|---:|---:|---:|"
  row "$1" baseline "baseline (no probes)"
  row "$1" bare_uprobe "bare tracefs uprobe"
  row "$1" bpftrace "bpftrace count()"
  row "$1" xref_traced "xref traced (inside a window)"
  row "$1" xref_untraced "xref untraced (no open window)"
  row "$1" gdb "gdb dprintf"
}

bpf_row() { # VARIANT LABEL
  local per_run
  per_run=$(awk -F'\t' -v v="$1" '$2 == v && $4 > 0 { print $3 / $4 }' "$WORK/bpf_stats.tsv" | median_of)
  printf '| %s | %.0f | %.1f %% |\n' "$2" "$per_run" \
    "$(awk -v a="$per_run" -v b="${HIT[cpu:bare_uprobe]}" 'BEGIN { print 100 * a / b }')"
}

CPU_MODEL=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
DIRTY=""
if git status --porcelain --untracked-files=no 2>/dev/null | grep -q .; then DIRTY=" plus uncommitted changes"; fi

cat <<EOF
# Performance: what one probe hit costs under \`xref trace\`

Generated by \`bench/run.sh\` on $STARTED, commit \`$COMMIT\`$DIRTY.
Do not edit by hand: rerun the benchmark (see the end).

## What is measured

\`build/bench/bench_target --calls N\` calls \`hot(i)\` N times from \`outer(n)\`
and times that loop with \`CLOCK_MONOTONIC\`. It waits for a go byte on stdin
before the loop, and the go byte is sent only once every probe site holds
\`int3\` in the target's memory (read through \`/proc/PID/mem\`), so each tracer
is fully attached before timing starts. With \`--untraced\` the same loop runs
from \`untraced_outer(n)\`, so a trace started on \`outer\` never opens a window.

Every tracer probes the same sites: \`hot\`'s entry (\`$HOT_VA\`) and its \`ret\`
(\`${RET_VAS[*]}\`), which is what \`xref trace --functions hot\` places:
**$HITS_PER_CALL probe hits per call**.

| variant | what runs |
|---|---|
| baseline | no probes |
| bare uprobe | tracefs uprobe events on the $HITS_PER_CALL sites, enabled, nothing else attached (each hit writes an ftrace record) |
| bpftrace | \`bpftrace -p PID\` counting the $HITS_PER_CALL sites into one \`count()\` map |
| xref traced | \`xref trace --start outer --functions hot --max-windows 1\`: the whole loop is one window, every hit is recorded |
| xref untraced | the same command on \`--untraced\`: no window opens, every hit takes xref's untraced-thread fast path |
| gdb | \`gdb -batch\` with a \`dprintf\` on each of the $HITS_PER_CALL sites; $GDB_CALLS calls, since a gdb hit costs far more |

One round runs every variant once, each in a fresh target, in an order
rotated from round to round; $ROUNDS rounds. Per round, **ns per hit** = (ns
per call − that round's baseline ns per call) / $HITS_PER_CALL, and the
**ratio** is that over the same round's bare-uprobe ns per hit. The table
gives medians over the rounds and the interquartile range of the per-round
ratio. A run counts only when it is checked: the bare uprobe's hits in
\`uprobe_profile\`, bpftrace's count, gdb's printed lines and xref's recorded
events all equal calls × $HITS_PER_CALL, and xref reports \`lost=0\`. (The xref
window also records \`outer\`'s entry and return: 2 hits per run, not
subtracted.)

## Machine

- kernel $(uname -r) ($(uname -m)), $(nproc) × $CPU_MODEL
- $(bpftrace --version 2>&1 | head -1), $(gdb --version | head -1), $(bpftool version 2>/dev/null | head -1)
- tracefs \`tracing_on\` = $(cat "$TRACEFS/tracing_on"); clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)
- load average (1, 5, 15 min) before the run: $LOAD_BEFORE; after: $LOAD_AFTER

## Results: wall clock (medians of $ROUNDS rounds)

The measurement the goals are set in: \`CLOCK_MONOTONIC\` around the loop.

EOF
results_table wall
cat <<EOF

Run-to-run noise: the bare uprobe alone cost $(printf '%.0f' "${BARE_MIN[wall]}") to $(printf '%.0f' "${BARE_MAX[wall]}") ns per
hit across the rounds. Each ratio is therefore taken within a round, and
the verdicts below say whether the middle half of the rounds lies on one
side of the goal.

## Results: the target thread's CPU time (same runs)

\`CLOCK_THREAD_CPUTIME_ID\` around the same loop: user and kernel time of the
target thread, which includes the trap and the uprobe handlers (they run on
that thread) but not time the thread spent waiting for a CPU. It is the
cross check for a busy machine. It leaves out work done in other processes:
xref's and bpftrace's user-space readers, and all of gdb's work (so gdb has
no per-hit figure here). Bare uprobe range: $(printf '%.0f' "${BARE_MIN[cpu]}") to $(printf '%.0f' "${BARE_MAX[cpu]}") ns per hit.

EOF
results_table cpu
cat <<EOF

## Goals

| goal | wall clock (the measurement asked for) | target CPU time (cross check) |
|---|---|---|
| traced hit ≤ 1.10× the bare uprobe | $(verdict wall:xref_traced 1.10) | $(verdict cpu:xref_traced 1.10) |
| untraced hit ≤ 1.05× the bare uprobe | $(verdict wall:xref_untraced 1.05) | $(verdict cpu:xref_untraced 1.05) |
| traced never slower than bpftrace (xref traced ÷ bpftrace per hit, per round, ≤ 1.00×) | $(verdict wall:traced_vs_bpftrace 1.00); slower in ${SLOWER[wall]} of $ROUNDS rounds | $(verdict cpu:traced_vs_bpftrace 1.00); slower in ${SLOWER[cpu]} of $ROUNDS rounds |

## Where the time goes: the BPF programs' own run time

With \`kernel.bpf_stats_enabled=1\` the kernel times every program run. These
come from $STATS_RUNS separate runs per variant (the statistics add two clock
reads per run, so they are kept out of the timed rounds above; the xref
traced run uses \`--max-windows 2\`, never reached, and SIGINT, so that xref is
still loaded when the counters are read). The rest of a hit — the \`int3\`
trap, the uprobe lookup, single-stepping the displaced instruction — is the
same for every uprobe-based variant. The share is of the bare uprobe's
median CPU-time cost per hit.

| program | ns per program run (median) | share of a bare-uprobe hit |
|---|---:|---:|
EOF
bpf_row bpftrace "bpftrace \`@c = count()\`"
bpf_row xref_traced "xref \`trace_probe\`, traced (inside a window)"
bpf_row xref_untraced "xref \`trace_probe\`, untraced (no open window)"
cat <<EOF

## Every round

Wall-clock and CPU-time figures per run; ratios are to the same round's
bare uprobe.

| round | variant | ns per call | ns per hit | ratio | CPU ns per call | CPU ns per hit | CPU ratio |
|---:|---|---:|---:|---:|---:|---:|---:|
EOF
paste "$WORK/per_round_wall.tsv" "$WORK/per_round_cpu.tsv" |
  awk -F'\t' '$2 != "traced_vs_bpftrace" { printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $8, $9, $10 }'
cat <<EOF

BPF statistics runs:

| run | variant | BPF run time (ns) | program runs | ns per run |
|---:|---|---:|---:|---:|
EOF
awk -F'\t' '{ printf "| %s | %s | %s | %s | %.0f |\n", $1, $2, $3, $4, ($4 > 0 ? $3 / $4 : 0) }' "$WORK/bpf_stats.tsv"
cat <<EOF

## The exact commands

PID is the bench_target process; offsets are file offsets of
\`build/bench/bench_target\` (from \`nm\`, \`objdump\` and \`readelf\`); LIVE(VA) is
that static VA's address in the process (from \`/proc/PID/maps\`).

\`\`\`sh
build/bench/bench_target --calls $CALLS               # baseline, bare uprobe, bpftrace, xref traced
build/bench/bench_target --calls $CALLS --untraced    # xref untraced
build/bench/bench_target --calls $GDB_CALLS               # gdb

# bare uprobe
EOF
for i in "${!PROBE_OFFSETS[@]}"; do
  name=hot
  ((i == 0)) || name=hot_ret$((i - 1))
  echo "echo 'p:$GROUP/$name build/bench/bench_target:${PROBE_OFFSETS[$i]}' >> $TRACEFS/uprobe_events"
done
echo "echo 1 > $TRACEFS/events/$GROUP/enable"
echo
echo "# bpftrace"
echo "$BPFTRACE_COMMAND"
echo
echo "# xref traced and untraced"
echo "$XREF_COMMAND"
echo
echo "# gdb"
printf 'gdb -nx -batch -p PID'
for va in "$HOT_VA" "${RET_VAS[@]}"; do printf " -ex 'dprintf *LIVE(%s),\"hit\\\\n\"'" "$va"; done
printf " -ex continue\n"
cat <<EOF
\`\`\`

bpftrace names the ret by its symbol, \`${RET_SYMBOLS[*]}\`, a one-byte function
symbol bench_target puts on it: Debian's bpftrace 0.17 is built without
probe-offset checking and refuses \`hot+21\` or an address inside \`hot\`, even
with \`--unsafe\`, and silently drops non-function symbols.

## Rerun

Build, then as root from the repository root:

\`\`\`sh
cmake -S . -B build && make -C build -j2
sudo bash bench/run.sh
\`\`\`

It mounts tracefs when absent, removes its probes and processes when it ends
or is interrupted, restores \`kernel.bpf_stats_enabled\`, and rewrites this
file. \`ROUNDS\`, \`CALLS\`, \`GDB_CALLS\` and \`STATS_RUNS\` in the environment
change the run's size.
EOF
