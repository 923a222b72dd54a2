# shellcheck shell=bash disable=SC2034,SC2153  # sets the tables the reports read; WORK is theirs
# bench/report_lib.sh: the analysis the side-by-side benchmarks share,
# sourced by bench/report.sh (xref trace) and bench/report_probe.sh (xref
# probe): per-round costs and ratios, medians with their interquartile range,
# the verdict on a goal, and the machine the run was on.

# per_round RESULTS COLUMN HITS_PER_CALL [NAME=A/B...]: per round, ns per
# hit = (ns per call - that round's baseline) / hits per call; ratio = that /
# the same round's bare-uprobe ns per hit. Each NAME=A/B adds a line NAME
# with A's ns per hit minus B's and A's over B's, same round. COLUMN is the
# results.tsv column read (3: wall clock, 6: CPU time). Lines: round,
# variant, ns per call, ns per hit, ratio; sorted by round and variant.
per_round() {
  local results=$1 column=$2 hits_per_call=$3
  shift 3
  awk -F'\t' -v hpc="$hits_per_call" -v c="$column" -v pairs="$*" '
    { ns[$1, $2] = $c; rounds[$1] = 1; variants[$2] = 1 }
    END {
      n = split(pairs, pair, " ")
      for (r in rounds) {
        base = ns[r, "baseline"]
        bare = (ns[r, "bare_uprobe"] - base) / hpc
        for (v in variants) {
          hit = v == "baseline" ? 0 : (ns[r, v] - base) / hpc
          printf "%s\t%s\t%s\t%.1f\t%.3f\n", r, v, ns[r, v], hit, hit / bare
        }
        for (i = 1; i <= n; i++) {
          split(pair[i], part, /[=\/]/)
          a = (ns[r, part[2]] - base) / hpc
          b = (ns[r, part[3]] - base) / hpc
          printf "%s\t%s\t%s\t%.1f\t%.3f\n", r, part[1], "-", a - b, a / b
        }
      }
    }' "$results" | sort -k1,1n -k2,2
}

# column_of FILE VARIANT COLUMN: that column of VARIANT's lines.
column_of() { awk -F'\t' -v v="$2" -v c="$3" '$2 == v { print $c }' "$1"; }

# "MIN Q1 MEDIAN Q3 MAX" of the numbers on stdin (linear interpolation).
summary() {
  sort -g | awk '
    function q(p,   pos, lo) { pos = 1 + (NR - 1) * p; lo = int(pos); return v[lo] + (pos - lo) * (v[lo + 1] - v[lo]) }
    { v[NR] = $1 }
    END { v[NR + 1] = v[NR]; print v[1], q(0.25), q(0.5), q(0.75), v[NR] }'
}
median_of() { summary | cut -d' ' -f3; }

# How many of the numbers on stdin are over LIMIT.
count_over() { awk -v limit="$1" '$1 > limit { n++ } END { print n + 0 }'; }

# verdict_text RATIO Q1 Q3 LIMIT: met / missed on the median ratio, and
# whether the middle half of the rounds lies on one side of the goal.
verdict_text() {
  awk -v r="$1" -v q1="$2" -v q3="$3" -v limit="$4" 'BEGIN {
    spread = sprintf("middle half of the rounds %.2f–%.2f×", q1, q3)
    if (r <= limit && q3 <= limit) printf "**met**: %.2f× (%s)", r, spread
    else if (r <= limit) printf "**met on the median**, %.2f×, but not settled: %s", r, spread
    else if (q1 > limit) printf "**missed**: %.2f×, %.0f %% over the goal (%s)", r, (r / limit - 1) * 100, spread
    else printf "**missed on the median**: %.2f×, %.0f %% over the goal, but not settled: %s", r, (r / limit - 1) * 100, spread
  }'
}

# The commit measured: "`abc1234`", plus a note when the tree has changes.
commit_text() {
  local commit dirty=""
  commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
  if git status --porcelain --untracked-files=no 2>/dev/null | grep -q .; then dirty=" plus uncommitted changes"; fi
  echo "\`$commit\`$dirty"
}

# The machine, as markdown list items. TRACEFS, LOAD_BEFORE, LOAD_AFTER.
machine_lines() {
  local cpu_model
  cpu_model=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
  cat <<EOF
- kernel $(uname -r) ($(uname -m)), $(nproc) × $cpu_model
- $(bpftrace --version 2>&1 | head -1), $(gdb --version | head -1), $(bpftool version 2>/dev/null | head -1)
- tracefs \`tracing_on\` = $(cat "$TRACEFS/tracing_on"); clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)
- load average (1, 5, 15 min) before the run: $LOAD_BEFORE; after: $LOAD_AFTER
EOF
}

# --- the tables --------------------------------------------------------------

# analyse WORK HITS_PER_CALL [NAME=A/B...]: WORK/per_round_wall.tsv and
# WORK/per_round_cpu.tsv from WORK/results.tsv, and the medians of every
# variant and NAME in NS (ns per call), HIT (ns per hit), RATIO, Q1 and Q3
# (the per-round ratios), keyed METRIC:VARIANT; SLOWER, the rounds where a
# NAME's ratio is over 1, keyed METRIC:NAME; BARE_MIN and BARE_MAX, the bare
# uprobe's range of ns per hit, keyed METRIC.
declare -A NS HIT RATIO Q1 Q3 SLOWER BARE_MIN BARE_MAX
analyse() {
  local work=$1 hits_per_call=$2 metric rounds variants variant key pair
  shift 2
  local -A column=([wall]=3 [cpu]=6)
  for metric in wall cpu; do
    rounds=$work/per_round_$metric.tsv
    per_round "$work/results.tsv" "${column[$metric]}" "$hits_per_call" "$@" >"$rounds"
    mapfile -t variants < <(cut -f2 "$rounds" | sort -u)
    for variant in "${variants[@]}"; do
      key=$metric:$variant
      NS[$key]=$(column_of "$rounds" "$variant" 3 | median_of)
      HIT[$key]=$(column_of "$rounds" "$variant" 4 | median_of)
      read -r _ "Q1[$key]" "RATIO[$key]" "Q3[$key]" _ < <(column_of "$rounds" "$variant" 5 | summary)
    done
    read -r "BARE_MIN[$metric]" _ _ _ "BARE_MAX[$metric]" < <(column_of "$rounds" bare_uprobe 4 | summary)
    for pair in "$@"; do
      SLOWER[$metric:${pair%%=*}]=$(column_of "$rounds" "${pair%%=*}" 5 | count_over 1)
    done
  done
}

verdict() { verdict_text "${RATIO[$1]}" "${Q1[$1]}" "${Q3[$1]}" "$2"; } # METRIC:VARIANT LIMIT

# row METRIC VARIANT LABEL: one line of a results table (calls per run, ns
# per call, ns per hit, ratio to the bare uprobe, ratio IQR). The baseline,
# and the METRIC:VARIANT keys listed in NS_ONLY, show ns per call only.
NS_ONLY=()
row() {
  local key=$1:$2 calls
  calls=$(awk -F'\t' -v v="$2" '$2 == v { print $4; exit }' "$WORK/results.tsv")
  if [[ $2 == baseline ]]; then
    printf '| %s | %s | %s | — | — | — |\n' "$3" "$calls" "${NS[$key]}"
  elif [[ " ${NS_ONLY[*]} " == *" $key "* ]]; then
    printf '| %s | %s | %.0f | — | — | — |\n' "$3" "$calls" "${NS[$key]}"
  else
    printf '| %s | %s | %.0f | %.0f | %.2f× | %.2f–%.2f× |\n' "$3" "$calls" "${NS[$key]}" "${HIT[$key]}" \
      "${RATIO[$key]}" "${Q1[$key]}" "${Q3[$key]}"
  fi
}

# results_table METRIC VARIANT=LABEL...: the table of medians, the peers
# every benchmark has (no probes, the bare uprobe, bpftrace) first.
results_table() {
  local metric=$1 variant
  shift
  echo "| variant | calls per run | ns per call | ns per hit | ratio to bare uprobe | ratio IQR |"
  echo "|---|---:|---:|---:|---:|---:|"
  row "$metric" baseline "baseline (no probes)"
  row "$metric" bare_uprobe "bare tracefs uprobe"
  row "$metric" bpftrace "bpftrace count()"
  for variant in "$@"; do row "$metric" "${variant%%=*}" "${variant#*=}"; done
}

# The "every round" table (wall and CPU figures side by side), leaving out
# the NAMEs given (analyse's pairs).
every_round_table() { # [NAME...]
  echo "| round | variant | ns per call | ns per hit | ratio | CPU ns per call | CPU ns per hit | CPU ratio |"
  echo "|---:|---|---:|---:|---:|---:|---:|---:|"
  paste "$WORK/per_round_wall.tsv" "$WORK/per_round_cpu.tsv" |
    awk -F'\t' -v skip=" $* " '!index(skip, " " $2 " ") { printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $3, $4, $5, $8, $9, $10 }'
}

# The table of the BPF statistics runs.
bpf_stats_table() { # BPF_STATS_TSV
  echo "| run | variant | BPF run time (ns) | program runs | ns per run |"
  echo "|---:|---|---:|---:|---:|"
  awk -F'\t' '{ printf "| %s | %s | %s | %s | %.0f |\n", $1, $2, $3, $4, ($4 > 0 ? $3 / $4 : 0) }' "$1"
}

# --- the BPF programs' own run time (BPF_NS, keyed VARIANT) ---------------

# bpf_medians BPF_STATS_TSV VARIANT...: each VARIANT's median ns per program
# run -> BPF_NS[VARIANT].
declare -A BPF_NS
bpf_medians() {
  local file=$1 variant
  shift
  for variant in "$@"; do
    BPF_NS[$variant]=$(awk -F'\t' -v v="$variant" '$2 == v && $4 > 0 { print $3 / $4 }' "$file" | median_of)
  done
}

# A share of the bare uprobe's median CPU-time cost per hit, in %.
share_of_hit() { awk -v a="$1" -v b="${HIT[cpu:bare_uprobe]}" 'BEGIN { printf "%.1f", 100 * a / b }'; }

bpf_row() { # VARIANT LABEL
  printf '| %s | %.0f | %s %% |\n' "$2" "${BPF_NS[$1]}" "$(share_of_hit "${BPF_NS[$1]}")"
}
bpf_difference() { # VARIANT: its program time minus bpftrace's, and that as a share of a hit
  local ns
  ns=$(awk -v a="${BPF_NS[$1]}" -v b="${BPF_NS[bpftrace]}" 'BEGIN { printf "%+.0f", a - b }')
  echo "$ns ns per hit ($(share_of_hit "${ns#+}") % of a hit)"
}
