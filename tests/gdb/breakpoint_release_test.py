"""A gdb breakpoint that comes where a running xref session has a uprobe
(docs/gdb.md, "Breakpoints where a session probes"): gdb must stop there,
the session must say which site it stopped observing and when, with the
counts it had (equal to the target's own record), and once everything ends
no byte of the target differs from its file and the process exits normally
(a debugger that saved the uprobe's int3 as the original byte kills it with
SIGTRAP). The target (release_target.c) is built here with gcc and clang
at -O2. `python3 breakpoint_release_test.py NAME-COMPILER`."""

import os
import re
import subprocess
import sys
import tempfile

from gdb_batch import TempRecord, main, require, require_bpf, run_gdb

HERE = os.path.dirname(os.path.realpath(__file__))
COMPILERS = {"gcc": "gcc", "clang": "clang-19"}
CALLS = 12


def check(condition, message, run=None):
    if not condition:
        raise AssertionError(message + ("\n--- gdb output ---\n" + run.output if run is not None else ""))


def build(compiler, directory):
    """release_target built as users build it: -O2, default flags."""
    path = os.path.join(directory, "release_target-" + compiler)
    subprocess.run([COMPILERS[compiler], "-O2", "-g", "-o", path, os.path.join(HERE, "release_target.c")], check=True)
    return path


def recorded_calls(record):
    with open(record) as lines:
        return [int(line.split()[1]) for line in lines if line.startswith("tally ")]


def expect_clean_end(run, calls):
    bytes_line = re.search(r"\nsite bytes (0x[0-9a-f]+): live ([0-9a-f]+) file ([0-9a-f]+) (\w+)\n", run.output)
    check(bytes_line is not None and bytes_line.group(4) == "equal",
          "the bytes at tally differ from the file after the session and the breakpoint ended", run)
    check(re.search(r"\[Inferior 1 \(process \d+\) exited normally\]", run.output) is not None,
          "the process did not exit normally (SIGTRAP from a stray int3?)", run)
    check(calls == list(range(1, CALLS + 1)), "the record does not have every call", run)


def run_case(compiler, commands):
    require_bpf()
    require(subprocess.run(["which", COMPILERS[compiler]], stdout=subprocess.DEVNULL).returncode == 0,
            "the compiler " + COMPILERS[compiler])
    with tempfile.TemporaryDirectory() as directory, TempRecord("release-" + compiler) as record:
        binary = build(compiler, directory)
        run = run_gdb(["python exec(open(%r).read())" % os.path.join(HERE, "..", "support", "site_bytes.py")] + commands,
                      [binary, record, str(CALLS), "2000"])
        check(run.exit_status == 0, "gdb failed", run)
        return run, recorded_calls(record)


def released_line(run, hits):
    match = re.search(r"\nxref: session 1 no longer observes tally at (0x[0-9a-f]+) since \d+ ms \(breakpoint 2 "
                      r"there\): (\d+) hits? counted up to then\n", run.output)
    check(match is not None, "no line saying session 1 released tally for breakpoint 2", run)
    check(int(match.group(2)) == hits, "the released site counted %s hits, the record says %d"
          % (match.group(2), hits), run)
    return int(match.group(1), 16)


# A breakpoint set on tally after the probe went in: gdb stops there.
def probe_then_break(compiler):
    run, calls = run_case(compiler, [
        "break settle", "run", "xref probe tally --duration-ms 0", "ignore 1 2", "continue", "break *tally",
        "continue", "xref show", "xref stop 1", "delete", "site-bytes tally", "continue"])
    # Calls 2, 3 and 4 ran under the probe (it went in at settle(1), the break at settle(4)).
    live = released_line(run, 3)
    stop = run.between("(gdb) break *tally", "(gdb) xref show")
    check(re.search(r"\nBreakpoint 2, (0x[0-9a-f]+ in )?tally ", stop) is not None, "gdb did not stop at tally", run)
    check(("Breakpoint 2 at %#x" % live) in run.output, "breakpoint 2 is not at the released site", run)
    shown = run.between("(gdb) xref show", "(gdb) xref stop 1")
    check(re.search(r"  hits 3 .*\n(.*\n)*?    not observed since \d+ ms \(breakpoint 2\)", shown) is not None,
          "xref show does not mark tally as not observed since breakpoint 2", run)
    expect_clean_end(run, calls)


# A breakpoint on tally that was off when the probe went in, enabled after.
def enable_after_probe(compiler):
    run, calls = run_case(compiler, [
        "break settle", "break *tally", "disable 2", "run", "xref probe tally --duration-ms 0", "continue",
        "enable 2", "continue", "xref stop 1", "delete", "site-bytes tally", "continue"])
    released_line(run, 1)
    stop = run.between("(gdb) enable 2", "(gdb) xref stop 1")
    check(re.search(r"\nBreakpoint 2, (0x[0-9a-f]+ in )?tally ", stop) is not None, "gdb did not stop at tally", run)
    expect_clean_end(run, calls)


# A trace session whose start probe a breakpoint takes over ends, its windows kept.
def trace_then_break(compiler):
    run, calls = run_case(compiler, [
        "break settle", "run", "xref trace --start tally --duration-ms 0", "continue", "break *tally", "continue",
        "delete", "site-bytes tally", "continue"])
    check(re.search(r"\nxref: session 1 ended \(released\): breakpoint 2 is at its probe site 0x[0-9a-f]+; what it "
                    r"recorded is kept\n", run.output) is not None, "no line saying the trace ended for breakpoint 2",
          run)
    stop = run.between("(gdb) break *tally", "(gdb) delete")
    check(re.search(r"\nBreakpoint 2, (0x[0-9a-f]+ in )?tally ", stop) is not None, "gdb did not stop at tally", run)
    check(re.search(r"\nwindow 1 \(session 1\)", run.output) is not None, "the window of call 2 was not kept", run)
    expect_clean_end(run, calls)


TESTS = {}
for _compiler in COMPILERS:
    for _case in (probe_then_break, enable_after_probe, trace_then_break):
        TESTS["%s-%s" % (_case.__name__, _compiler)] = (lambda case, compiler: lambda: case(compiler))(_case, _compiler)

if __name__ == "__main__":
    sys.exit(main(TESTS))
