#!/usr/bin/env bash
# shellcheck disable=SC2153  # ROUNDS, RUN_SECONDS, ...: from context.sh
# bench/report_profile.sh WORK_DIR: the "xref profile" section of
# docs/performance.md (between its profile-bench markers), from what
# bench/run_profile.sh left in WORK_DIR: results.tsv (the rounds: round,
# variant, units/s, units per CPU-s, capture CPU s, report CPU s, second
# report CPU s, samples, whole samples, bytes, report wall s, second report
# wall s, lost, load), captures.tsv and reports.tsv (the report-time
# captures), bpf_stats.tsv (the statistics runs) and context.sh.
set -euo pipefail
WORK=$1
# shellcheck source=/dev/null
source "$WORK/context.sh"
# shellcheck source=bench/report_lib.sh
source bench/report_lib.sh
RESULTS=$WORK/results.tsv

declare -A LABEL=(
  [xref_dwarf]="\`xref profile --callers dwarf\`"
  [xref_fp]="\`xref profile --callers fp\`"
  [perf_fp]="\`perf record -g\`"
  [perf_dwarf]="\`perf record --call-graph dwarf\`"
)
TOOLS=(xref_dwarf xref_fp perf_fp perf_dwarf)

# --- part 1: slowdown -----------------------------------------------------------

# Per round and variant, the slowdown in % of the target's throughput against
# the mean of the same round's two unprofiled runs; COLUMN 3: units per wall
# second, 4: units per CPU second. "noise" is baseline2 against baseline.
slowdowns() { # COLUMN
  awk -F'\t' -v c="$1" -v floor="$STALL_FLOOR" '
    $4 >= floor { v[$1, $2] = $c; rounds[$1] = 1; variants[$2] = 1 }
    END {
      for (r in rounds) {
        n = ((r, "baseline") in v) + ((r, "baseline2") in v)
        if (n == 0) continue
        base = (v[r, "baseline"] + v[r, "baseline2"]) / n
        for (x in variants) if (x !~ /^baseline/ && (r, x) in v) printf "%s\t%s\t%.3f\n", x, r, 100 * (1 - v[r, x] / base)
        if (n == 2) printf "noise\t%s\t%.3f\n", r, 100 * (1 - v[r, "baseline2"] / v[r, "baseline"])
      }
    }' "$RESULTS"
}
# A stalled run: units per CPU second under half the unprofiled runs'
# median (the CPU itself ran slow; see stalled_text). Left out of the
# slowdowns, its round's figures taken against the other runs.
BASE_CPU=$(awk -F'\t' '$2 ~ /^baseline/ { print $4 }' "$RESULTS" | median_of)
STALL_FLOOR=$(awk -v b="$BASE_CPU" 'BEGIN { print b / 2 }')
slowdowns 3 >"$WORK/slowdown_wall.tsv"
slowdowns 4 >"$WORK/slowdown_cpu.tsv"
of_variant() { awk -F'\t' -v v="$2" -v c="${3:-3}" '$1 == v { print $c }' "$1"; } # FILE VARIANT [COLUMN]
median_col() { awk -F'\t' -v v="$1" -v c="$2" '$2 == v { print $c }' "$RESULTS" | median_of; } # VARIANT COLUMN

# "median % (Q1 – Q3; min – max)"
slowdown_cell() { # FILE VARIANT
  of_variant "$1" "$2" | summary | awk '{ printf "**%+.1f %%** (%+.1f – %+.1f; %+.1f – %+.1f)", $3, $2, $4, $1, $5 }'
}
slowdown_table() {
  echo "| profiler | Hz | units/s (median) | slowdown: units per wall second | units per CPU-s (median) | slowdown: units per CPU second |"
  echo "|---|---:|---:|---:|---:|---:|"
  printf '| none (baseline, baseline2) | — | %.0f | %s (baseline2 against baseline: the noise) | %.0f | %s |\n' \
    "$( (median_col baseline 3; median_col baseline2 3) | awk '{ s += $1 } END { print s / NR }')" \
    "$(slowdown_cell "$WORK/slowdown_wall.tsv" noise)" \
    "$( (median_col baseline 4; median_col baseline2 4) | awk '{ s += $1 } END { print s / NR }')" \
    "$(slowdown_cell "$WORK/slowdown_cpu.tsv" noise)"
  local hz tool
  for hz in $FREQS; do
    for tool in "${TOOLS[@]}"; do
      printf '| %s | %s | %.0f | %s | %.0f | %s |\n' "${LABEL[$tool]}" "$hz" "$(median_col "${tool}_$hz" 3)" \
        "$(slowdown_cell "$WORK/slowdown_wall.tsv" "${tool}_$hz")" "$(median_col "${tool}_$hz" 4)" \
        "$(slowdown_cell "$WORK/slowdown_cpu.tsv" "${tool}_$hz")"
    done
  done
}

# A goal of "at most LIMIT %" on a slowdown: the median, and where the
# middle half of the rounds lies; the noise's own spread beside it.
slowdown_verdict() { # FILE VARIANT LIMIT
  read -r _ q1 med q3 _ < <(of_variant "$1" "$2" | summary)
  read -r nlo _ _ _ nhi < <(of_variant "$1" noise | summary)
  awk -v m="$med" -v q1="$q1" -v q3="$q3" -v l="$3" -v nlo="$nlo" -v nhi="$nhi" 'BEGIN {
    spread = sprintf("middle half of the rounds %+.1f – %+.1f %%; two unprofiled runs differed by %+.1f – %+.1f %%", q1, q3, nlo, nhi)
    noise = -nlo > nhi ? -nlo : nhi
    if (noise > l && m <= noise) printf "**not resolved on this run**: %+.1f %%, inside the noise (%s)", m, spread
    else if (m <= l && q3 <= l) printf "**met**: %+.1f %% (%s)", m, spread
    else if (m <= l) printf "**met on the median**, %+.1f %%, but not settled: %s", m, spread
    else if (q1 > l) printf "**missed**: %+.1f %% (%s)", m, spread
    else printf "**missed on the median**: %+.1f %%, not settled: %s", m, spread
  }'
}

# --- part 2: tool CPU --------------------------------------------------------------

# Per round, xref's capture + its two reports over perf dwarf's record + its
# report (or + perf script), same Hz.
cpu_ratios() { # HZ SECOND_PERF_COLUMN(6: perf report, 7: perf script)
  awk -F'\t' -v x="xref_dwarf_$1" -v p="perf_dwarf_$1" -v pc="$2" '
    $2 == x { xs[$1] = $5 + $6 + $7 } $2 == p { ps[$1] = $5 + $pc }
    END { for (r in xs) if (r in ps && ps[r] > 0) printf "%.4f\n", xs[r] / ps[r] }' "$RESULTS"
}
cpu_table() {
  echo "| profiler | Hz | samples | capture CPU | report CPU | second report CPU | capture + report(s) |"
  echo "|---|---:|---:|---:|---:|---:|---:|"
  local hz tool v
  for hz in $FREQS; do
    for tool in "${TOOLS[@]}"; do
      v=${tool}_$hz
      if [[ $tool == xref_* ]]; then
        # shellcheck disable=SC2016  # markdown backquotes
        printf '| %s | %s | %.0f | %.3f s | %.3f s (`--by function`) | %.3f s (`--by caller`) | **%.3f s** |\n' "${LABEL[$tool]}" \
          "$hz" "$(median_col "$v" 8)" "$(median_col "$v" 5)" "$(median_col "$v" 6)" "$(median_col "$v" 7)" \
          "$(awk -F'\t' -v v="$v" '$2 == v { print $5 + $6 + $7 }' "$RESULTS" | median_of)"
      else
        # shellcheck disable=SC2016  # markdown backquotes
        printf '| %s | %s | %.0f | %.3f s | %.3f s (`perf report --stdio`) | %.3f s (`perf script`) | **%.3f s** (record + report), %.3f s (record + script) |\n' \
          "${LABEL[$tool]}" "$hz" "$(median_col "$v" 8)" "$(median_col "$v" 5)" "$(median_col "$v" 6)" \
          "$(median_col "$v" 7)" "$(awk -F'\t' -v v="$v" '$2 == v { print $5 + $6 }' "$RESULTS" | median_of)" \
          "$(awk -F'\t' -v v="$v" '$2 == v { print $5 + $7 }' "$RESULTS" | median_of)"
      fi
    done
  done
}
ratio_verdict() { # HZ COLUMN LIMIT
  cpu_ratios "$1" "$2" | summary | awk -v l="$3" '{
    spread = sprintf("rounds %.2f – %.2f", $1, $5)
    if ($3 <= l && $5 <= l) printf "**met**: %.2f× (%s)", $3, spread
    else if ($3 <= l) printf "**met on the median**, %.2f× (%s)", $3, spread
    else printf "**missed**: %.2f×, %.1f× the goal (%s)", $3, $3 / l, spread
  }'
}

# A line through one profiler's medians at the two frequencies, (samples,
# CPU) at FIRST_HZ and at LAST_HZ (medians: robust to a stalled run):
# "FIXED_S PER_SAMPLE_S RUNS". COLUMNS: the results.tsv columns summed
# into its CPU.
cost_model() { # TOOL COLUMNS
  local lo_hz=${FREQS%% *} hi_hz=${FREQS##* } x1 y1 x2 y2 runs
  cpu_sum() { awk -F'\t' -v v="$1" -v cols="$2" 'BEGIN { n = split(cols, c, " ") }
    $2 == v { y = 0; for (i = 1; i <= n; i++) y += $(c[i]); print y }' "$RESULTS" | median_of; }
  x1=$(median_col "$1_$lo_hz" 8) y1=$(cpu_sum "$1_$lo_hz" "$2")
  x2=$(median_col "$1_$hi_hz" 8) y2=$(cpu_sum "$1_$hi_hz" "$2")
  runs=$(awk -F'\t' -v t="$1_" 'index($2, t) == 1' "$RESULTS" | wc -l)
  awk -v x1="$x1" -v y1="$y1" -v x2="$x2" -v y2="$y2" -v k="$runs" 'BEGIN {
    b = x2 > x1 ? (y2 - y1) / (x2 - x1) : 0
    printf "%.6f %.9f %d\n", y1 - b * x1, b, k }'
}
read -r XREF_FIXED XREF_PER XREF_RUNS < <(cost_model xref_dwarf "5 6 7")
read -r PERF_FIXED PERF_PER PERF_RUNS < <(cost_model perf_dwarf "5 6")
cost_text() {
  awk -v xf="$XREF_FIXED" -v xp="$XREF_PER" -v pf="$PERF_FIXED" -v pp="$PERF_PER" -v xr="$XREF_RUNS" -v pr="$PERF_RUNS" 'BEGIN {
    printf "**Where the tools'\'' CPU goes.** A line through the medians (samples, CPU) at the two frequencies: "
    printf "xref (capture + both reports, %d runs) ≈ **%.0f ms + %.1f µs per sample**; perf --call-graph dwarf (record + report, %d runs) ≈ **%.0f ms + %.1f µs per sample**. ", xr, xf * 1000, xp * 1e6, pr, pf * 1000, pp * 1e6
    printf "xref'\''s fixed part is the helper'\''s start (the executable'\''s and libc'\''s CFI read with libdw and compiled into unwind rows before the first sample, the BPF program loaded, an event opened per thread) and the capture written at the end; "
    printf "perf record'\''s fixed part is its own start and end (the processes'\'' maps, the build-id cache), perf report'\''s the reading of symbols and DWARF. "
    if (xf > pf / 10) printf "The fixed part alone is over 1/10 of perf'\''s (%.0f ms against %.0f ms), so short captures miss the goal whatever the samples cost. ", xf * 1000, pf * 1000
    if (pp <= 0) {
      printf "perf'\''s part per sample is lost in its run-to-run spread on this run, so no size at which xref reaches 1/10 can be read from these lines."
    } else if (pp > 10 * xp) {
      n = (10 * xf - pf) / (pp - 10 * xp)
      if (n <= 0) printf "On these lines xref is under 1/10 of perf at every capture size."
      else printf "On these lines xref comes to 1/10 of perf from about **%.0f samples** per capture on (%.0f s of one busy thread at 999 Hz, %.0f s at 99 Hz).", n, n / 999, n / 99
    } else {
      printf "Per sample xref costs more than a tenth of perf here, so on these lines no capture size reaches the 1/10 goal."
    }
  }'
}

# --- part 3: stacks complete ---------------------------------------------------------

whole_of() { awk -F'\t' -v v="$1" '$2 == v { n += $8; w += $9 } END { printf "%d %d %.2f\n", n, w, n ? 100 * w / n : 0 }' "$RESULTS"; }
# Samples over the samples the target's CPU time asks for (its threads' CPU
# seconds, units / units per CPU-s with the run's RUN_SECONDS, × Hz), in %.
coverage_of() { # VARIANT
  awk -F'\t' -v v="$1" -v s="$RUN_SECONDS" '$2 == v { hz = v; sub(/.*_/, "", hz); n += $8; e += $3 * s / $4 * hz }
    END { printf "%.1f", e ? 100 * n / e : 0 }' "$RESULTS"
}
# xref's samples in stacks that are not whole, by how they ended, summed
# over the rounds (results.tsv column 15; "—" where the run did not record it).
ends_of() { # VARIANT
  awk -F'\t' -v v="$1" '$2 == v && $15 != "" && $15 != "-" {
      n = split($15, part, ",")
      for (i = 1; i <= n; i++) { split(part[i], kv, ":"); e[kv[1]] += kv[2] }
    }
    $2 == v && $15 != "" { seen = 1 }
    END {
      if (!seen) { printf "—"; exit }
      out = ""; for (k in e) out = out (out == "" ? "" : ", ") k " " e[k]
      printf "%s", out == "" ? "none" : out
    }' "$RESULTS"
}
whole_table() {
  echo "| profiler | Hz | samples (all rounds) | samples ÷ (target CPU × Hz) | complete to _start / clone3 | share | xref: the others ended |"
  echo "|---|---:|---:|---:|---:|---:|---|"
  local hz tool n w share
  for hz in $FREQS; do
    for tool in "${TOOLS[@]}"; do
      read -r n w share < <(whole_of "${tool}_$hz")
      printf '| %s | %s | %s | %s %% | %s | %s %% | %s |\n' "${LABEL[$tool]}" "$hz" "$n" "$(coverage_of "${tool}_$hz")" "$w" \
        "$share" "$([[ $tool == xref_* ]] && ends_of "${tool}_$hz" || echo "—")"
    done
  done
}
whole_verdict() { # HZ
  read -r _ _ xs < <(whole_of "xref_dwarf_$1")
  read -r _ _ ps < <(whole_of "perf_dwarf_$1")
  awk -v x="$xs" -v p="$ps" 'BEGIN {
    r = p > 0 ? 100 * x / p : 0
    printf "%s: xref %.2f %% against perf %.2f %%: %.1f %% of perf'\''s", (r >= 99 ? "**met**" : "**missed**"), x, p, r
  }'
}

# --- part 4: report time and file size ------------------------------------------

REPORTS=$WORK/reports.tsv
report_row() { # TOOL REPORT
  awk -F'\t' -v t="$1" -v r="$2" '$1 == t && $2 == r { print $4 }' "$REPORTS" | summary |
    awk '{ printf "%.3f s (%.3f – %.3f)", $3, $1, $5 }'
  printf ' | '
  awk -F'\t' -v t="$1" -v r="$2" '$1 == t && $2 == r { print $5 }' "$REPORTS" | median_of | awk '{ printf "%.3f s", $1 }'
}
report_verdict() {
  awk -F'\t' '$1 == "xref" { print $4 }' "$REPORTS" | summary | awk '{
    if ($5 <= 1) printf "**met**: slowest of both reports %.3f s (median %.3f s)", $5, $3
    else if ($3 <= 1) printf "**met on the median** (%.3f s), slowest run %.3f s", $3, $5
    else printf "**missed**: median %.3f s", $3 }'
}
capture_field() { awk -F'\t' -v v="$1" -v c="$2" '$1 == v { print $c }' "$WORK/captures.tsv"; }
size_row() { # VARIANT
  local samples bytes xbytes
  samples=$(capture_field "$1" 2) bytes=$(capture_field "$1" 3) xbytes=$(capture_field xref_dwarf_999 3)
  awk -v s="$samples" -v b="$bytes" -v x="$xbytes" 'BEGIN {
    printf "%d | %.2f MB | %.0f | %.2f×", s, b / 1e6, s ? b / s : 0, x ? b / x : 0 }'
}

# --- part 5: BPF statistics ----------------------------------------------------------

STATS=$WORK/bpf_stats.tsv
bpf_table() {
  echo "| Hz | runs | program | samples (xprof) | program runs | frames walked per sample | ns per sample (median, range) | ns per frame (median, range) |"
  echo "|---:|---:|---|---:|---:|---:|---:|---:|"
  local hz
  for hz in $FREQS; do
    awk -F'\t' -v hz="$hz" '$2 == hz { n++; prog = $3; s += $6; c += $5; f += $7 } END {
      printf "| %s | %d | `%s` | %d | %d | %.1f | ", hz, n, prog, s, c, s ? f / s : 0 }' "$STATS"
    awk -F'\t' -v hz="$hz" '$2 == hz && $5 > 0 { print $4 / $5 }' "$STATS" | summary |
      awk '{ printf "**%.0f** (%.0f – %.0f) | ", $3, $1, $5 }'
    awk -F'\t' -v hz="$hz" '$2 == hz && $7 > 0 { print $4 / $7 }' "$STATS" | summary |
      awk '{ printf "**%.1f** (%.1f – %.1f) |\n", $3, $1, $5 }'
  done
}
# The program's share of one thread's CPU at HZ: ns per sample × HZ.
bpf_share() { # HZ
  awk -F'\t' -v hz="$1" '$2 == hz && $5 > 0 { print $4 / $5 }' "$STATS" | median_of |
    awk -v hz="$1" '{ printf "%.2f %%", $1 * hz / 1e7 }'
}
runs_vs_samples() {
  awk -F'\t' '{ d = $5 - $6 - $8; if (d < 0) d = -d; if (d > max) max = d; n++ } END { print n, max + 0 }' "$STATS"
}
read -r STATS_N STATS_DIFF < <(runs_vs_samples)

# --- the section -----------------------------------------------------------------------

FIRST_HZ=${FREQS%% *}
LAST_HZ=${FREQS##* }
cat <<EOF
<!-- profile-bench:begin -->
## \`xref profile\`: what sampling costs the process, the tools' CPU, whole stacks, report time, the unwinder per frame

Generated by \`bench/run_profile.sh\` on $STARTED, commit ${COMMIT_TEXT:-$(commit_text)}.
Do not edit by hand: rerun the benchmark (see the end of this section).

### What is measured

The target is \`build/bench/profile_workload --threads $THREADS --seconds $RUN_SECONDS\`
(\`bench/profile_workload.c\`, gcc -O2, PIE, no frame-pointer flags, so its
code and Debian's libc have no frame pointers). Its $THREADS threads (the main
thread and $((THREADS - 1)) started with pthread_create) wait for a go byte, then run
work units for $RUN_SECONDS s of wall time: \`run_units -> do_unit ->\` \`sort_phase ->
qsort\` (libc's recursive merge sort) \`-> compare_keys\`, \`hash_phase ->
hash_tree\` (recursive, 6 deep) \`-> mix_block\`, \`format_phase -> snprintf\`.
It counts its own throughput: **units per wall second** (all threads' units
over the time from the go byte to the last thread's end) and **units per
CPU second** (over the threads' own \`CLOCK_THREAD_CPUTIME_ID\`, which
includes the sampling interrupts and the BPF program run in them: this
kernel has no \`CONFIG_IRQ_TIME_ACCOUNTING\`, so interrupt time is charged to
the thread it interrupted).

Every run is a fresh target. The profiler is attached before the go byte
(xref: its \`xref: profiling PID\` line on stderr; perf: started with \`-D -1\`
and enabled through its control FIFO, the \`ack\` read back) and ends on its
own when the target exits. One round runs, in an order rotated from round
to round: two unprofiled runs (\`baseline\`, \`baseline2\`) and, at each of
$FREQS Hz, the four profilers below. A slowdown is 1 − the run's throughput ÷
the mean of the same round's two unprofiled runs; \`baseline2\` against
\`baseline\` is the same figure for two runs with no profiler: the noise
floor of this machine at the time.

| profiler | command |
|---|---|
| ${LABEL[xref_dwarf]} | \`xref profile --pid PID --freq HZ --callers dwarf --duration-ms 0 --out capture.xprof --json\` (cpu-clock: no hardware PMU here) |
| ${LABEL[xref_fp]} | the same with \`--callers fp\` |
| ${LABEL[perf_fp]} | \`perf record -q -e cpu-clock -F HZ -g -p PID -o perf.data -D -1 --control fifo:CTL,ACK\` |
| ${LABEL[perf_dwarf]} | the same with \`--call-graph dwarf\` (8 KB of user stack copied per sample, unwound by perf report/script) |

### Machine

$(machine_lines)
- $PERF_VERSION
- the run shared the machine's 2 CPUs with other work (builds and tests of other branches; the load
  averages above): the target's $THREADS threads want both CPUs, so units per wall second fall with
  every other process that runs, which is why the per-CPU-second figure is given beside it

### 1. The target's slowdown ($ROUNDS rounds of $RUN_SECONDS s; median (Q1 – Q3; min – max) of the per-round slowdowns)

$(slowdown_table)

The wall-clock slowdown includes the CPU the profiler's own process takes
from the target (perf writes every sample, with 8 KB of stack each in dwarf
mode; xref wakes every 250 ms to look for new threads and mappings and
reads its BPF maps once, at the end) and every other process on the
machine; the
per-CPU-second slowdown is what the sampling costs inside the target's
threads: the timer interrupt, the BPF program or perf's stack copy, and the
caches they disturb.

### 2. CPU of the tools (user + sys of the processes, bench/rusage_run.py; medians of $ROUNDS runs)

$(cpu_table)

\`capture CPU\` is the whole \`xref profile\` or \`perf record\` process, from
its start (xref reads the executable's and libc's CFI into unwind tables
there) to its exit after the target's; it does not include the work done in
the target's interrupts (part 1 and part 5 measure that). The reports are
run on the capture right after (xref: \`xref profile report FILE --by
function\` and \`--by caller\`; perf: \`perf report -i perf.data --stdio\`, whose
default output is both, self and children with call graphs, and \`perf script
-i perf.data --no-inline -F comm,tid,ip,sym,dso\`).

### 3. Stacks complete (same runs, all rounds summed)

$(whole_table)

xref: the samples whose walk reached the outermost frame (\`stack_ends.complete\`
in the capture: the CFI's end at \`_start\`, or at a thread's \`clone3\`; for
\`fp\`, a saved rbp of 0). perf: the samples whose outermost frame in \`perf
script\` is \`_start\`, \`clone3\` or \`clone\` (tests/e2e/profile_harness.h's
complete_percent). The samples column is checked against the target's own
account: its threads' CPU seconds (units ÷ units per CPU second) × Hz is
the number of samples a profiler that sees every period should take.

### 4. Report time and file size: one $REPORT_SECONDS s capture at 999 Hz

| report | runs | wall, median (min – max) | CPU, median |
|---|---:|---:|---:|
| \`xref profile report --by function\` | $REPORT_REPEATS | $(report_row xref "--by function") |
| \`xref profile report --by caller\` | $REPORT_REPEATS | $(report_row xref "--by caller") |
| \`perf report --stdio\` (--call-graph dwarf capture) | $REPORT_REPEATS | $(report_row perf_dwarf_999 "perf report --stdio") |
| \`perf report --stdio\` (-g capture) | $REPORT_REPEATS | $(report_row perf_fp_999 "perf report --stdio") |

| capture ($REPORT_SECONDS s at 999 Hz, $THREADS threads) | samples | file size | bytes per sample | size ÷ xref's |
|---|---:|---:|---:|---:|
| \`capture.xprof\` (xref, dwarf) | $(size_row xref_dwarf_999) |
| \`perf.data\` (perf --call-graph dwarf) | $(size_row perf_dwarf_999) |
| \`perf.data\` (perf -g) | $(size_row perf_fp_999) |

An .xprof holds each distinct stack once with per-thread counts, and the
names of the functions it touches; perf.data holds every sample (in dwarf
mode with its 8 KB stack copy), and is read again by every report.

### 5. The BPF unwinder's own cost (kernel.bpf_stats_enabled)

$STATS_RUNS runs per frequency of \`xref profile --callers dwarf\` on a $RUN_SECONDS s
target, with \`/proc/sys/kernel/bpf_stats_enabled\` set to 1 for the run (and
set back to $BPF_STATS_BEFORE after it). Once the target's threads had done
their work (they wait for EOF: no more samples) and while xref still held
the program, \`bpftool prog show id ID --json\` of the \`perf_event\` program
among xref's descriptors gave \`run_time_ns\` and \`run_cnt\`; then xref was
stopped with SIGINT and its capture's \`samples\` and \`frames_walked\` (the
program's \`XREF_PROFILE_STAT_FRAMES\` counter, shared/profile_abi.h) read.
ns per sample = run_time_ns ÷ run_cnt; ns per frame = run_time_ns ÷
frames_walked. (The statistics add two clock reads to each program run.)

$(bpf_table)

Program runs against samples: in $STATS_N runs, run_cnt differed from the
capture's samples plus other-process samples by at most $STATS_DIFF.

### Goals

| goal | measured |
|---|---|
| slowdown ≤ 1 % at $FIRST_HZ Hz, ${LABEL[xref_dwarf]} (units per wall second) | $(slowdown_verdict "$WORK/slowdown_wall.tsv" "xref_dwarf_$FIRST_HZ" 1) |
| the same, units per CPU second | $(slowdown_verdict "$WORK/slowdown_cpu.tsv" "xref_dwarf_$FIRST_HZ" 1) |
| capture + report CPU of xref ≤ 1/10 of perf --call-graph dwarf's, $FIRST_HZ Hz (xref: capture + \`--by function\` + \`--by caller\`; perf: record + report) | $(ratio_verdict "$FIRST_HZ" 6 0.1) |
| the same at $LAST_HZ Hz | $(ratio_verdict "$LAST_HZ" 6 0.1) |
| the same against perf record + perf script, $FIRST_HZ Hz / $LAST_HZ Hz | $(ratio_verdict "$FIRST_HZ" 7 0.1) / $(ratio_verdict "$LAST_HZ" 7 0.1) |
| stacks complete ≥ 99 % of perf --call-graph dwarf's share, $FIRST_HZ Hz | $(whole_verdict "$FIRST_HZ") |
| the same at $LAST_HZ Hz | $(whole_verdict "$LAST_HZ") |
| \`report --by function\` and \`--by caller\` of a $REPORT_SECONDS s capture at 999 Hz ≤ 1 s | $(report_verdict) |

EOF
# Runs whose units per CPU second fell under half the unprofiled runs'
# median: the CPU itself ran slow (a VM's vCPU held by its host still runs
# the thread's CPU clock). "round variant units/CPU-s" lines.
STALLED=$(awk -F'\t' -v b="$BASE_CPU" '$4 < b / 2 { printf "round %s %s (%.0f units per CPU-s); ", $1, $2, $4 }' "$RESULTS")
stalled_text() {
  [[ -n $STALLED ]] || return 0
  printf '%s' "Some runs ran at a fraction of the CPU's speed: ${STALLED%; }, against a median of $(printf '%.0f' "$BASE_CPU") in the unprofiled runs. Their threads' CPU clocks ran while they did little work, which on this VM is the host taking the vCPU away (that time counts as the thread's CPU time here); such a run says nothing about the profiler, and is left out of the slowdowns (its round's other runs are taken against the unprofiled run that did not stall); it stays in the other tables and in every round's table."
}
# The per-CPU-second slowdown at the high rate, per sample, carried to the
# low rate: a load-independent estimate for the low rate's goal.
extrapolation_text() {
  local hi lo_sd
  hi=$(of_variant "$WORK/slowdown_cpu.tsv" "xref_dwarf_$LAST_HZ" | median_of)
  lo_sd=$(of_variant "$WORK/slowdown_cpu.tsv" "xref_dwarf_$FIRST_HZ" | median_of)
  awk -v hi="$hi" -v lo="$lo_sd" -v hz="$LAST_HZ" -v lhz="$FIRST_HZ" -v bpf="$(bpf_ns "$LAST_HZ")" 'BEGIN {
    per = hi / 100 / hz * 1e9
    printf "At %d Hz, where the slowdown is ten times larger and easier to tell from the noise, `xref profile --callers dwarf` cost the target %+.1f %% of its units per CPU second: %.0f µs of the thread'\''s CPU per sample, of which the BPF program is %.0f µs (part 5); the rest is the sampling interrupt itself, costly in a VM, and what it does to the caches. ", hz, hi, per / 1000, bpf / 1000
    printf "The same cost per sample at %d Hz is **%.2f %%** of a thread'\''s CPU, the estimate for the %d Hz goal that the noise does not blur (measured directly: %+.1f %%).", lhz, per * lhz / 1e7, lhz, lo
  }'
}
bpf_ns() { awk -F'\t' -v hz="$1" '$2 == hz && $5 > 0 { print $4 / $5 }' "$STATS" | median_of; }
max_abs() { awk '{ v = $1 < 0 ? -$1 : $1; if (v > m) m = v } END { printf "%.1f", m }'; }
NOISE_MAX=$(of_variant "$WORK/slowdown_wall.tsv" noise | max_abs)
NOISE_CPU_MAX=$(of_variant "$WORK/slowdown_cpu.tsv" noise | max_abs)
cat <<EOF
**What bounds the slowdown figures.** Two unprofiled runs of the same
round differed by up to $NOISE_MAX % in units per wall second and $NOISE_CPU_MAX % in
units per CPU second on this run (the "none" row): a slowdown smaller than
that cannot be told from zero here, in either direction, and a negative
slowdown is that noise. The wall-clock figure moves with every other
process on the 2 CPUs (the load averages above); the per-CPU-second figure
does not count time the target waited, but still moves with cache and
frequency effects of whatever else ran. A bound that does not depend on
the load comes from part 5: the unwinder's own run time per sample times
the rate is its share of a sampled thread's CPU, **$(bpf_share "$FIRST_HZ") at $FIRST_HZ Hz** and
**$(bpf_share "$LAST_HZ") at $LAST_HZ Hz** (plus the timer interrupt itself, which perf pays
as well). $(extrapolation_text) $(stalled_text)

$(cost_text)

EOF
FAILURES_TSV=$WORK/failures.tsv
if [[ -s $FAILURES_TSV ]]; then
  XREF_RUNS_ALL=$(($(awk -F'\t' '$2 ~ /^xref_/' "$RESULTS" | wc -l) + 1 + $(wc -l <"$STATS") + $(wc -l <"$FAILURES_TSV")))
  cat <<EOF
### Runs xref did not profile as asked

$(wc -l <"$FAILURES_TSV") of the $XREF_RUNS_ALL \`xref profile\` runs of this benchmark did not
profile the target as asked (they are in no table above; the script repeats
such a run, up to 3 times):

| variant | attempt | what was wrong | xref's threads line |
|---|---:|---|---|
$(awk -F'\t' '{ printf "| %s | %s | %s | %s |\n", $1, $2, $3, $4 }' "$FAILURES_TSV")

The table says what xref printed. Before the script emptied xref's stderr
file itself (it was emptied by the background child's redirection), a
failure could be the script's: it could read the last run's \`xref:
profiling PID\` line, send the go byte before xref had attached (fewer
samples, or xref started after the target's end: \`no process with PID\`), or
kill the live target in the statistics part (\`process exited during the
operation\`). With \`KEEP_WORK=1\` their outputs are kept under \`failed/\` in
the work directory.

EOF
fi
cat <<EOF
### Every round

| round | variant | units/s | units per CPU-s | capture CPU s | report CPU s | second report CPU s | samples | complete | bytes | lost | load (1 min) |
|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
$(sort -k1,1n -k2,2 "$RESULTS" | awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $13, $14 }')

Statistics runs:

| run | Hz | program | run_time_ns | run_cnt | samples | frames walked | other process | lost |
|---:|---:|---|---:|---:|---:|---:|---:|---:|
$(awk -F'\t' '{ printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9 }' "$STATS")

### Rerun

Build, then as root from the repository root:

\`\`\`sh
cmake --build build --target xref bench_target profile_workload
sudo bash bench/run_profile.sh
\`\`\`

It rewrites only this section, and measures a copy of \`build/helper/xref\`
taken at its start. \`ROUNDS\`, \`RUN_SECONDS\`, \`THREADS\`, \`FREQS\`,
\`REPORT_SECONDS\`, \`REPORT_REPEATS\` and \`STATS_RUNS\` change the run's size;
with \`LOCK=FILE[:FILE…]\` each round holds \`flock\` on all of them;
\`KEEP_WORK=1\` keeps the raw results (\`bash bench/report_profile.sh DIR\`
prints the section again). This run: $ROUNDS rounds of $RUN_SECONDS s at $FREQS Hz,
$STATS_RUNS statistics runs per frequency${LOCK_TEXT:-}.
<!-- profile-bench:end -->
EOF
