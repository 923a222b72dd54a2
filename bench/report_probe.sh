#!/usr/bin/env bash
# shellcheck disable=SC2153  # ROUNDS, CALLS, HITS_PER_CALL, ...: from context.sh
# bench/report_probe.sh WORK_DIR: the "xref probe" section of
# docs/performance.md (between its probe-bench markers), from what
# bench/run_probe.sh left in WORK_DIR: results.tsv and bpf_stats.tsv (as for
# bench/report.sh), attach.tsv (bench/probe_attach.py's runs) and
# context.sh (the run's parameters and commands).
set -euo pipefail
WORK=$1
# shellcheck source=/dev/null
source "$WORK/context.sh"
# shellcheck source=bench/report_lib.sh
source bench/report_lib.sh

# Per round: ns per hit, ratio to the bare uprobe, and xref probe against
# the same round's bpftrace.
analyse "$WORK" "$HITS_PER_CALL" probe_vs_bpftrace=xref_probe/bpftrace
bpf_medians "$WORK/bpf_stats.tsv" bpftrace xref_probe

probe_table() { # METRIC
  results_table "$1" "xref_probe=xref probe --count"
  printf '| **xref probe ÷ bpftrace** (per round) | | | %+.0f | **%.2f×** | %.2f–%.2f× |\n' \
    "${HIT[$1:probe_vs_bpftrace]}" "${RATIO[$1:probe_vs_bpftrace]}" "${Q1[$1:probe_vs_bpftrace]}" \
    "${Q3[$1:probe_vs_bpftrace]}"
}

# What the programs' own run time says of the goal, which the rounds cannot
# settle: bpftrace's median hit (CPU time) plus the difference between the
# two programs, over that hit.
precise_ratio_text() {
  awk -v hit="${HIT[cpu:bpftrace]}" -v x="${BPF_NS[xref_probe]}" -v b="${BPF_NS[bpftrace]}" 'BEGIN {
    r = (hit + x - b) / hit
    printf "The timed rounds spread far wider than the two programs differ. The programs'\'' own run time (next section) measures that difference: xref'\''s program takes %+.0f ns per hit against bpftrace'\''s, so, counting the programs only (the trap and the uprobe lookup are the same; the way the kernel runs the program differs, a uprobe_multi link for xref, a perf event for bpftrace), an xref probe hit costs **%.3f×** a bpftrace hit of the median %.0f ns (CPU time): ", x - b, r, hit
    if (r <= 1) printf "within the goal."
    else printf "over the goal of 1.0× by %.1f %%, less than any timed round here can show.", (r - 1) * 100
  }'
}

# --- the attach runs -----------------------------------------------------------

ATTACH=$WORK/attach.tsv
ATTACH_FIELDS=(tool run announced armed int3 workload stop whole backend)
attach_column() { # TOOL FIELD: that figure of the tool's runs
  local i
  for i in "${!ATTACH_FIELDS[@]}"; do [[ ${ATTACH_FIELDS[$i]} == "$2" ]] && break; done
  awk -F'\t' -v t="$1" -v c=$((i + 1)) '$1 == t && $c != "-" { print $c }' "$ATTACH"
}
attach_runs() { awk -F'\t' -v t="$1" '$1 == t { n++ } END { print n + 0 }' "$ATTACH"; } # TOOL
# "MEDIAN ms (Q1–Q3)" of a tool's figure, or — when it has none.
attach_cell() { # TOOL FIELD
  local figures
  figures=$(attach_column "$1" "$2")
  [[ -n $figures ]] || { echo "—"; return; }
  summary <<<"$figures" | awk '{
    if ($3 >= 10000) printf "%.1f s (%.1f–%.1f)", $3 / 1000, $2 / 1000, $4 / 1000
    else printf "%.1f ms (%.1f–%.1f)", $3, $2, $4
  }'
}
attach_median() { attach_column "$1" "$2" | median_of; } # TOOL FIELD
attach_quartiles() { attach_column "$1" "$2" | summary | cut -d' ' -f2,4; } # TOOL FIELD: "Q1 Q3"

attach_row() { # TOOL LABEL
  [[ $(attach_runs "$1") -gt 0 ]] || return 0
  printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$2" "$(attach_runs "$1")" "$(attach_cell "$1" armed)" \
    "$(attach_cell "$1" int3)" "$(attach_cell "$1" stop)" "$(attach_cell "$1" whole)" "$(attach_cell "$1" workload)" \
    "$(awk -F'\t' -v t="$1" '$1 == t { print $9; exit }' "$ATTACH")"
}

# The goal: 1,000 addresses armed in under 100 ms, on the median and the
# middle half of the runs.
attach_verdict() {
  local q1 q3
  read -r q1 q3 < <(attach_quartiles xref armed)
  awk -v m="$(attach_median xref armed)" -v q1="$q1" -v q3="$q3" 'BEGIN {
    spread = sprintf("middle half of the runs %.1f–%.1f ms", q1, q3)
    if (m < 100 && q3 < 100) printf "**met**: %.1f ms (%s)", m, spread
    else if (m < 100) printf "**met on the median**, %.1f ms, but not settled: %s", m, spread
    else if (q1 >= 100) printf "**missed**: %.1f ms, %.0f %% over the goal (%s)", m, m - 100, spread
    else printf "**missed on the median**: %.1f ms, %.0f %% over the goal, but not settled: %s", m, m - 100, spread
  }'
}

attach_fixed_text() {
  awk -v all="$(attach_median xref armed)" -v one="$(attach_median xref_1 armed)" 'BEGIN {
    printf "Of xref'\''s %.1f ms to armed for 1,000 addresses, %.1f ms are there for one address as well: its start-up (exec, reading the target, loading the BPF program, which the kernel verifies, and creating the link); the other 999 addresses add %.1f ms (resolving the names, checking each instruction, filling the site map, registering the uprobes).", all, one, all - one
  }'
}

attach_peer_text() {
  if [[ $(attach_runs bpftrace) -eq 0 ]]; then
    echo "bpftrace was left out of this run (BPFTRACE_ATTACH_ROUNDS=0)."
    return
  fi
  awk -v x="$(attach_median xref int3)" -v b="$(attach_median bpftrace int3)" \
    -v a="$(attach_median bpftrace announced)" -v bs="$(attach_median bpftrace stop)" \
    -v xs="$(attach_median xref stop)" -v bw="$(attach_median bpftrace whole)" -v xw="$(attach_median xref whole)" 'BEGIN {
    printf "bpftrace had int3 on all 1,000 entries after %.0f ms, %.0f× xref'\''s %.1f ms; it announced \"Attaching 1000 probes...\" after %.0f ms (its program compiled), so %.0f ms of that went into loading and attaching. ", b, b / x, x, a, b - a
    printf "Stopping took bpftrace %.1f s against xref'\''s %.0f ms: it detaches one perf uprobe per address, and each detach waits for an RCU tasks-trace grace period (the attach-bench section above measures the same), where xref closes one uprobe_multi link. Whole command: %.1f s against %.0f ms (%.0f×).", bs / 1000, xs, bw / 1000, xw, bw / xw
  }'
}

cat <<EOF
<!-- probe-bench:begin -->
## \`xref probe\`: what a counted hit costs, and attaching 1,000 addresses

Generated by \`bench/run_probe.sh\` on $STARTED, commit $(commit_text).
Do not edit by hand: rerun the benchmark (see the end of this section).
The method is bench/run.sh's (the first section), on one probe site.

### What is measured: the cost of a hit

\`build/bench/bench_target --calls N\` calls \`hot(i)\` N times and times the
loop; the go byte that starts it is sent once the probe site holds \`int3\`
in the target's memory. **One probe site, the same instruction for every
peer:** \`hot\`'s first instruction, static VA \`$HOT_VA\` (file offset
\`$HOT_OFFSET\`), a 10-byte \`movabs\`, so **$HITS_PER_CALL probe hit per call**.
\`xref probe\` puts a function's entry probe on the 5-byte nop after
\`endbr64\` when there is one (about 2 µs instead of an int3 trap, see
"Tracing modes" below); \`hot\` has no \`endbr64\`, so xref probes its first
byte like the others, and every xref run checks that its \`probe_va\` is
\`$HOT_VA\`. bpftrace probes the symbol \`hot\`, the same address.

| variant | what runs |
|---|---|
| baseline | no probes |
| bare uprobe | one tracefs uprobe event at \`hot\`, enabled, nothing else attached (each hit writes an ftrace record) |
| bpftrace | \`bpftrace -p PID\` with \`uprobe:…:hot { @c = count(); }\`, stopped with SIGINT after the loop |
| xref probe | \`xref probe --pid PID hot --count --duration-ms 0 --json\`, stopped with SIGINT after the loop (default limits: the first 8 hits are also sampled through the ring buffer) |

One round runs every variant once, each in a fresh target, in an order
rotated from round to round; $ROUNDS rounds of $CALLS calls. Per round, **ns per
hit** = (ns per call − that round's baseline ns per call) / $HITS_PER_CALL, and the
**ratio** is that over the same round's bare-uprobe ns per hit; **xref
probe ÷ bpftrace** is xref's ns per hit over bpftrace's, same round. The
tables give medians over the rounds; a ratio is the median of the per-round
ratios, with their interquartile range. A run counts only when it is
checked: the bare uprobe's hits in \`uprobe_profile\`, bpftrace's \`@c\`, and
xref's \`summary.hits\` and \`addresses[].hits\` all equal the calls, xref
stopped as \`interrupted\` with nothing \`not_counted\`; a run that fails its
check stops the script with the reason, and nothing is written.

### Machine

$(machine_lines)

### Per hit: wall clock (medians of $ROUNDS rounds)

\`CLOCK_MONOTONIC\` around the loop, the measurement the goal is set in.

EOF
probe_table wall
cat <<EOF

Run-to-run noise: the bare uprobe alone cost $(printf '%.0f' "${BARE_MIN[wall]}") to $(printf '%.0f' "${BARE_MAX[wall]}") ns per
hit across the rounds, which is why each ratio is taken within a round.

### Per hit: the target thread's CPU time (same runs)

\`CLOCK_THREAD_CPUTIME_ID\` around the same loop: the trap and the uprobe
handlers run on that thread; time it waited for a CPU does not count. The
cross check for a busy machine.

EOF
probe_table cpu
cat <<EOF

### Goals

| goal | wall clock (the measurement asked for) | target CPU time (cross check) |
|---|---|---|
| xref probe hit ≤ 1.0× bpftrace \`count()\` (per round) | $(verdict wall:probe_vs_bpftrace 1.00); slower in ${SLOWER[wall:probe_vs_bpftrace]} of $ROUNDS rounds | $(verdict cpu:probe_vs_bpftrace 1.00); slower in ${SLOWER[cpu:probe_vs_bpftrace]} of $ROUNDS rounds |
| 1,000 addresses attached in < 100 ms (exec until \`xref: probing\`) | $(attach_verdict) | — |

$(precise_ratio_text)

### Where the time goes: the BPF programs' own run time

With \`kernel.bpf_stats_enabled=1\`, $STATS_RUNS separate runs per variant (not
the timed rounds: the statistics add two clock reads per program run). The
share is of the bare uprobe's median CPU-time cost per hit.

| program | ns per program run (median) | share of a bare-uprobe hit |
|---|---:|---:|
EOF
bpf_row bpftrace "bpftrace \`@c = count()\`"
bpf_row xref_probe "xref \`probe_hit\`, \`--count\`"
cat <<EOF

Against bpftrace's program, xref's costs $(bpf_difference xref_probe). xref's
program counts more per hit than \`count()\` does: the per-CPU hit and
passed counts, the hit's number at its address, and the hit's thread in a
hash map (\`threads[]\`), and it checks whether the hit is one of the first
8 to sample. That difference is measured precisely; the timed rounds' spread
is wider than it.

### Attach time: 1,000 addresses

\`build/bench/many_functions\` has 1,000 small functions \`fn_000\` …
\`fn_999\` (\`bench/many_functions.c\`, built \`-O2\`, no \`endbr64\`), and calls
each once per byte it reads. \`bench/probe_attach.py\` starts a fresh target,
then the tool with probes on all 1,000 entries, by name:
\`xref probe --pid PID fn_000 … fn_999 --count --duration-ms 0 --json\`, and
\`bpftrace -p PID\` with a program file naming the same 1,000 \`uprobe\`s,
\`{ @[probe] = count(); }\`. Times from the tool's exec:

- **armed**: xref prints \`xref: probing PID …\` (every probe attached, counting on).
  bpftrace prints nothing then (its \`Attaching 1000 probes...\` comes before it attaches);
- **int3 in place**: all 1,000 entries hold \`int3\` in the target's memory (polled through
  \`/proc/PID/mem\`), the same signal for both;
- then one go byte: the target calls each function once (**workload**, including this
  script's reading of the target's reply); then SIGINT, and **stop** is SIGINT until the tool
  exited (detach, sum, print); **whole command** is exec to exit, workload included.

A run counts when xref reports 1,000 addresses with 1 hit each, each probed
at its symbol's address (\`probe_va\` = \`static_va\` = \`nm\`'s), and bpftrace's
\`@[probe]\` has the 1,000 keys with 1 each. Median (interquartile range):

| tool | runs | armed | int3 in place | stop (SIGINT → exit) | whole command | workload (in whole) | backend |
|---|---:|---:|---:|---:|---:|---:|---|
EOF
attach_row xref "xref probe, 1,000 addresses"
attach_row xref_1 "xref probe, 1 address (\`fn_000\`)"
attach_row bpftrace "bpftrace 0.17, 1,000 addresses"
cat <<EOF

$(attach_fixed_text)

$(attach_peer_text)

### Every round

Per-hit runs (ratios to the same round's bare uprobe):

EOF
every_round_table probe_vs_bpftrace
cat <<EOF

BPF statistics runs:

EOF
bpf_stats_table "$WORK/bpf_stats.tsv"
cat <<EOF

Attach runs (ms from exec; "—": the tool has no such figure):

| tool | run | bpftrace's "Attaching" line | armed | int3 in place | workload | stop | whole command |
|---|---:|---:|---:|---:|---:|---:|---:|
EOF
awk -F'\t' '{ for (i = 3; i <= 8; i++) if ($i == "-") $i = "—"; printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8 }' OFS='\t' "$ATTACH"
cat <<EOF

### The exact commands

\`\`\`sh
build/bench/bench_target --calls $CALLS
echo 'p:$GROUP/hot build/bench/bench_target:$HOT_OFFSET' >> $TRACEFS/uprobe_events   # bare uprobe
echo 1 > $TRACEFS/events/$GROUP/enable
$BPFTRACE_COMMAND
$XREF_COMMAND
build/bench/many_functions
build/helper/xref probe --pid PID fn_000 fn_001 … fn_999 --count --duration-ms 0 --json
bpftrace -p PID many.bt    # uprobe:build/bench/many_functions:fn_000, … fn_999 { @[probe] = count(); }
\`\`\`

### Rerun

Build, then as root from the repository root:

\`\`\`sh
cmake --build build --target xref bench_target many_functions
sudo bash bench/run_probe.sh
\`\`\`

It rewrites only this section, and measures a copy of \`build/helper/xref\`
taken at its start, so a rebuild during the run cannot mix two builds.
\`ROUNDS\`, \`CALLS\`, \`STATS_RUNS\`, \`ATTACH_ROUNDS\` and
\`BPFTRACE_ATTACH_ROUNDS\` change the run's size; with \`LOCK=FILE[:FILE…]\`
each round and each attach run holds \`flock\` on all of them, so tests and
builds that take the same locks run between rounds, never during one. This
run: $ROUNDS rounds, $STATS_RUNS statistics runs, $ATTACH_ROUNDS attach rounds ($BPFTRACE_ATTACH_ROUNDS with bpftrace)${LOCK_TEXT:-}.
<!-- probe-bench:end -->
EOF
