#!/usr/bin/env python3
"""A conditional stop at hit 10,000: gdb's `break hot if $rdi == 9999`
against `xref probe hot --fetch i=%di:u64 --stop-when 'i == 9999'` in the
same gdb, on build/bench/bench_target. Writes the `stop-when` section of
docs/performance.md.

  bench/stop_when.py [--rounds 5] [--calls 20000] [--doc docs/performance.md]

Each run: gdb starts bench_target, stops at `outer` (before the loop of
hot(i) calls), sets the condition one way or the other, and times the
`continue` until the stop from inside gdb (Python's time.monotonic around
the command). A run counts only when the process stopped in hot with
%rdi == 9999, i.e. at hit 10,000, and stopped once. Both variants run in
each round, in alternating order; the table gives the medians and the
median of the per-round ratios.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
TARGET = os.path.join(ROOT, "build", "bench", "bench_target")
LOADER = os.path.join(ROOT, "gdb-python", "xref.py")
DOC_SECTION = os.path.join(ROOT, "bench", "doc_section.py")
STOP_AT = 9999  # hot(i) is called with i = 0, 1, ...: hit 10,000

VARIANTS = {
    "gdb": ["break hot if $rdi == %d" % STOP_AT],
    "xref": ["source " + LOADER,
             "xref probe hot --fetch i=%%di:u64 --stop-when 'i == %d'" % STOP_AT],
}


def run(variant, calls, go_file):
    # `run ARGS` replaces the arguments: the redirection goes with them.
    commands = ["set pagination off", "set confirm off", "break outer",
                "set args --calls %d < %s" % (calls, go_file), "run", "delete 1"]
    commands += ["python import time; xref_bench_t0 = time.monotonic()"]
    commands += VARIANTS[variant]
    commands += ["python xref_bench_t1 = time.monotonic()", "continue",
                 "python print('setup_s %.6f elapsed_s %.6f' % (xref_bench_t1 - xref_bench_t0, "
                 "time.monotonic() - xref_bench_t1))",
                 "print/d $rdi", "info symbol $pc", "kill"]
    argv = ["gdb", "-nx", "-batch"]
    for command in commands:
        argv += ["-ex", command]
    argv += [TARGET]
    output = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600).stdout
    elapsed = re.search(r"setup_s ([0-9.]+) elapsed_s ([0-9.]+)", output)
    rdi = re.search(r"\$1 = (\d+)", output)
    where = re.search(r"\n(hot|hot_ret) (\+ \d+ )?in section", output)
    stops = len(re.findall(r"stopped thread \d+: hit", output)) if variant == "xref" else 1
    ok = elapsed is not None and rdi is not None and int(rdi.group(1)) == STOP_AT and where is not None and stops == 1
    return ((float(elapsed.group(1)), float(elapsed.group(2))) if ok else None), output


def median(runs, part):
    """The median of one part of the (setup, to the stop) times, or of their sum (part None)."""
    return statistics.median(sum(run) if part is None else run[part] for run in runs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--doc", default=os.path.join(ROOT, "docs", "performance.md"))
    args = parser.parse_args()
    if not os.access(TARGET, os.X_OK):
        sys.exit("stop_when.py: build/bench/bench_target is missing: bash scripts/build.sh first")
    times = {name: [] for name in VARIANTS}  # (setup, to the stop) per counted run
    ratios = []
    refused = []
    with tempfile.NamedTemporaryFile("w", suffix=".go") as go:
        go.write("g")
        go.flush()
        for round_index in range(args.rounds):
            order = list(VARIANTS) if round_index % 2 == 0 else list(reversed(VARIANTS))
            this_round = {}
            for name in order:
                elapsed, output = run(name, args.calls, go.name)
                if elapsed is None:
                    refused.append(name)
                    print("stop_when.py: round %d: %s did not stop once at hit %d; not counted:\n%s"
                          % (round_index + 1, name, STOP_AT + 1, output[-1500:]), file=sys.stderr)
                    continue
                this_round[name] = sum(elapsed)
                times[name].append(elapsed)
                print("round %d  %-4s  setup %.3f s  to the stop %.3f s" % (round_index + 1, name, *elapsed))
            if len(this_round) == 2:
                ratios.append(this_round["gdb"] / this_round["xref"])
    if not ratios:
        sys.exit("stop_when.py: no round where both variants stopped at hit %d" % (STOP_AT + 1))
    quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain"], stdout=subprocess.PIPE, text=True).stdout
    gdb_version = subprocess.run(["gdb", "--version"], stdout=subprocess.PIPE, text=True).stdout.split("\n")[0]
    section = f"""<!-- stop-when:begin -->
## A conditional stop at hit 10,000: `--stop-when` against gdb's `break ... if`

Generated by `bench/stop_when.py` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, commit `{commit}`{' plus uncommitted changes' if dirty.strip() else ''}; {gdb_version}.

`build/bench/bench_target --calls {args.calls}` calls `hot(i)` for i = 0, 1, ...
In gdb, stopped at `outer` (before the loop), one of:

| variant | what stops the process at hit 10,000 |
|---|---|
| gdb | `break hot if $rdi == {STOP_AT}`: gdb stops the process at every hit and evaluates the condition itself |
| xref | `xref probe hot --fetch i=%di:u64 --stop-when 'i == {STOP_AT}'`: BPF evaluates it at every hit; only hit 10,000 stops its thread |

Times are measured inside gdb: the setup (the command that sets the
condition: for xref, starting the helper and attaching the probe) and
gdb's `continue` until the stop; the total is their sum. A run counts only
when the process stopped in `hot` with `%rdi` = {STOP_AT}, once. {args.rounds} rounds,
both variants each round in alternating order; medians, and the median of
the per-round ratios of the totals with its interquartile range.

| variant | setup | continue to the stop | total | runs counted |
|---|---|---|---|---|
| gdb | {median(times['gdb'], 0):.3f} s | {median(times['gdb'], 1):.3f} s | {median(times['gdb'], None):.3f} s | {len(times['gdb'])} of {args.rounds} |
| xref `--stop-when` | {median(times['xref'], 0):.3f} s | {median(times['xref'], 1):.3f} s | {median(times['xref'], None):.3f} s | {len(times['xref'])} of {args.rounds} |

**gdb / xref: {statistics.median(ratios):.1f}x** (IQR {quartiles[0]:.1f}x to {quartiles[2]:.1f}x) less total time with
`--stop-when`; the issue's goal is at least 25x. Per hit until the stop, gdb's
conditional breakpoint costs about {median(times['gdb'], 1) / (STOP_AT + 1) * 1e6:.0f} us here, xref's probe about
{median(times['xref'], 1) / (STOP_AT + 1) * 1e6:.1f} us (the one stop and its drain included).

Rerun: `python3 bench/stop_when.py` (root; after `bash scripts/build.sh`).
<!-- stop-when:end -->
"""
    subprocess.run([sys.executable, DOC_SECTION, "put", args.doc, "stop-when"], input=section, text=True, check=True)
    print(section)
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
