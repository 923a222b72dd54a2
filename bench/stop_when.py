#!/usr/bin/env python3
"""A conditional stop at hit 10,000: gdb's `break FN if $rdi == 9999`
against `xref probe FN --fetch i=%di:u64 --stop-when 'i == 9999'` in the
same gdb, on build/bench/bench_target's hot (an int3 uprobe) and hot_nop (a
nop the kernel patches). Writes the `stop-when` section of
docs/performance.md.

  bench/stop_when.py [--rounds 5] [--calls 20000] [--doc docs/performance.md]

Each run: gdb starts bench_target, stops before the loop of calls, sets
the condition one way or the other, and times the
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

# The probed function, the function that loops over it, bench_target's
# flags: `hot` begins with a 10-byte movabs (a uprobe there traps with
# int3); `hot_nop` with endbr64 and a 5-byte nop, where xref puts its probe
# and kernels from 6.18 patch in a call instead of a trap.
CASES = {"hot": ("outer", []), "hot_nop": ("outer_nop", ["--nop-entry"])}
VARIANTS = ("gdb", "xref")


def condition_commands(variant, function):
    if variant == "gdb":
        return ["break %s if $rdi == %d" % (function, STOP_AT)]
    return ["xref probe %s --fetch i=%%di:u64 --stop-when 'i == %d'" % (function, STOP_AT)]


def run(variant, function, calls, go_file):
    loop, flags = CASES[function]
    # `run ARGS` replaces the arguments: the redirection goes with them.
    commands = ["set pagination off", "set confirm off", "break " + loop,
                "set args --calls %d %s < %s" % (calls, " ".join(flags), go_file), "run", "delete 1"]
    if variant == "xref":
        # The helper starts with the first xref command of a gdb session,
        # once: not part of any one probe's setup.
        commands += ["source " + LOADER, "xref maps"]
    commands += ["python import time; xref_bench_t0 = time.monotonic()"]
    commands += condition_commands(variant, function)
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
    where = re.search(r"\n%s (\+ \d+ )?in section" % function, output)
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
    times = {(function, name): [] for function in CASES for name in VARIANTS}  # (setup, to the stop) per counted run
    ratios = {function: [] for function in CASES}
    refused = []
    with tempfile.NamedTemporaryFile("w", suffix=".go") as go:
        go.write("g")
        go.flush()
        for round_index in range(args.rounds):
            for function in CASES:
                order = list(VARIANTS) if round_index % 2 == 0 else list(reversed(VARIANTS))
                this_round = {}
                for name in order:
                    elapsed, output = run(name, function, args.calls, go.name)
                    if elapsed is None:
                        refused.append(name)
                        print("stop_when.py: round %d: %s on %s did not stop once at hit %d; not counted:\n%s"
                              % (round_index + 1, name, function, STOP_AT + 1, output[-1500:]), file=sys.stderr)
                        continue
                    this_round[name] = sum(elapsed)
                    times[(function, name)].append(elapsed)
                    print("round %d  %-7s  %-4s  setup %.3f s  to the stop %.3f s"
                          % (round_index + 1, function, name, *elapsed))
                if len(this_round) == 2:
                    ratios[function].append(this_round["gdb"] / this_round["xref"])
    if not all(ratios.values()):
        sys.exit("stop_when.py: a function with no round where both variants stopped at hit %d" % (STOP_AT + 1))

    def iqr(values):
        quartiles = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
        return "%.1fx to %.1fx" % (quartiles[0], quartiles[2])

    rows = []
    for function in CASES:
        for name in VARIANTS:
            runs = times[(function, name)]
            label = "gdb `break ... if`" if name == "gdb" else "xref `--stop-when`"
            rows.append(f"| `{function}` | {label} | {median(runs, 0):.3f} s | {median(runs, 1):.3f} s | "
                        f"{median(runs, None):.3f} s | {median(runs, 1) / (STOP_AT + 1) * 1e6:.1f} us | "
                        f"{len(runs)} of {args.rounds} |")
    ratio_rows = [f"| `{function}` | **{statistics.median(ratios[function]):.1f}x** | {iqr(ratios[function])} |"
                  for function in CASES]
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain"], stdout=subprocess.PIPE, text=True).stdout
    gdb_version = subprocess.run(["gdb", "--version"], stdout=subprocess.PIPE, text=True).stdout.split("\n")[0]
    section = f"""<!-- stop-when:begin -->
## A conditional stop at hit 10,000: `--stop-when` against gdb's `break ... if`

Generated by `bench/stop_when.py` on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, commit `{commit}`{' plus uncommitted changes' if dirty.strip() else ''}; {gdb_version}.

`build/bench/bench_target --calls {args.calls}` calls a function with i = 0, 1, ...
In gdb, stopped before the loop, the process is set to stop at hit 10,000
(`i == {STOP_AT}`) one of two ways:

| variant | what stops the process at hit 10,000 |
|---|---|
| gdb | `break FN if $rdi == {STOP_AT}`: gdb stops the process at every hit and evaluates the condition itself |
| xref | `xref probe FN --fetch i=%di:u64 --stop-when 'i == {STOP_AT}'`: BPF evaluates it at every hit; only hit 10,000 stops its thread |

on two functions: `hot`, which begins with a 10-byte `movabs` (a uprobe
there traps with `int3`), and `hot_nop`, which begins with `endbr64` and a
5-byte nop, as code built with `-fcf-protection` does (xref probes the nop,
which this kernel, 6.18, patches into a call instead of a trap).

Times are measured inside gdb: the setup (the command that sets the
condition; for xref, planning and attaching the probe, with the helper
already started by an earlier xref command, as it is after the first one
of a gdb session) and gdb's `continue` until the stop; the total is their
sum. A run counts only when the process stopped in the function with
`%rdi` = {STOP_AT}, once. {args.rounds} rounds, both variants each round in alternating
order; medians, and the median of the per-round ratios of the totals with
its interquartile range.

| function | variant | setup | continue to the stop | total | per hit | runs counted |
|---|---|---|---|---|---|---|
{chr(10).join(rows)}

| function | gdb / xref, total time | IQR |
|---|---|---|
{chr(10).join(ratio_rows)}

The issue's goal is at least 25x less total time. Until the stop xref is
{statistics.median(median(times[(f, 'gdb')], 1) / median(times[(f, 'xref')], 1) for f in CASES):.0f}x faster (the continue columns); its setup is a fixed cost
(planning the probe, loading and verifying its BPF program, attaching it),
while the conditional breakpoint's cost grows with every hit before the
stop.

Rerun: `python3 bench/stop_when.py` (root; after `bash scripts/build.sh`).
<!-- stop-when:end -->
"""
    subprocess.run([sys.executable, DOC_SECTION, "put", args.doc, "stop-when"], input=section, text=True, check=True)
    print(section)
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
