"""An LLDB breakpoint that comes where a running xref session has a uprobe
(docs/lldb.md, "Breakpoints where a session probes"): LLDB must stop there,
the session must say which site it stopped observing and when, with the
counts it had (equal to the target's own record), and once everything ends
no byte of the target differs from its file and the process exits normally
(LLDB writes its int3 as soon as a breakpoint is made, saving the uprobe's
int3 as the original byte; put back later, it kills the process with
SIGTRAP). The target (tests/gdb/release_target.c) is built here with gcc
and clang at -O2. `python3 breakpoint_release_test.py NAME-COMPILER`."""

import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "support"))
from facility import require, run_named  # noqa: E402
from lldb_batch import between, lldb_available, run_lldb  # noqa: E402

HERE = os.path.dirname(os.path.realpath(__file__))
SOURCE = os.path.join(HERE, "..", "gdb", "release_target.c")
COMPILERS = {"gcc": "gcc", "clang": "clang-19"}
CALLS = 12


def check(condition, message, output=None):
    if not condition:
        raise AssertionError(message + ("\n--- lldb output ---\n" + output if output is not None else ""))


def run_case(compiler, commands):
    require(lldb_available(), "lldb-19")
    require(os.geteuid() == 0, "BPF (run as root)")
    with tempfile.TemporaryDirectory() as directory:
        binary = os.path.join(directory, "release_target-" + compiler)
        subprocess.run([COMPILERS[compiler], "-O2", "-g", "-o", binary, SOURCE], check=True)
        record = os.path.join(directory, "record")
        site_bytes = "script exec(open(%r).read())" % os.path.join(HERE, "..", "support", "site_bytes.py")
        status, output = run_lldb([site_bytes] + commands, [binary, record, str(CALLS), "2000"])
        check(status == 0, "lldb failed (%d)" % status, output)
        with open(record) as lines:
            calls = [int(line.split()[1]) for line in lines if line.startswith("tally ")]
        return output, calls


def expect_clean_end(output, calls):
    bytes_line = re.search(r"\nsite bytes (0x[0-9a-f]+): live ([0-9a-f]+) file ([0-9a-f]+) (\w+)\n", output)
    check(bytes_line is not None and bytes_line.group(4) == "equal",
          "the bytes at tally differ from the file after the session and the breakpoint ended", output)
    check(re.search(r"Process \d+ exited with status = 0 ", output) is not None,
          "the process did not exit normally (SIGTRAP from a stray int3?)", output)
    check(calls == list(range(1, CALLS + 1)), "the record does not have every call", output)


def released_line(output, hits):
    match = re.search(r"\nxref: session 1 no longer observes tally at (0x[0-9a-f]+) since \d+ ms \(breakpoint 2 "
                      r"there\): (\d+) hits? counted up to then\n", output)
    check(match is not None, "no line saying session 1 released tally for breakpoint 2", output)
    check(int(match.group(2)) == hits, "the released site counted %s hits, the record says %d"
          % (match.group(2), hits), output)


def stopped_at_tally(text):
    return re.search(r"stop reason = breakpoint 2\.1\s*\n\s*frame #0: 0x[0-9a-f]+ [^`]*`tally", text) is not None


# A breakpoint set on tally after the probe went in: LLDB stops there.
def probe_then_break(compiler):
    output, calls = run_case(compiler, [
        "breakpoint set -n settle", "run", "xref probe tally --duration-ms 0", "breakpoint modify -i 2 1",
        "continue", "breakpoint set -a tally", "continue", "xref show --all", "xref stop 1", "breakpoint delete 1 2",
        "script site_bytes('tally')", "continue"])
    # Calls 2, 3 and 4 ran under the probe (it went in at settle(1), the break came at settle(4)).
    released_line(output, 3)
    check(stopped_at_tally(between(output, "breakpoint set -a tally", "xref show")), "LLDB did not stop at tally",
          output)
    # --all: the whole result (a bare `xref show` prints what changed since the last stop)
    shown = between(output, "(lldb) xref show --all", "(lldb) xref stop 1")
    check(re.search(r"  hits 3 .*\n(.*\n)*?    not observed since \d+ ms \(breakpoint 2\)", shown) is not None,
          "xref show --all does not mark tally as not observed since breakpoint 2", output)
    expect_clean_end(output, calls)


# A breakpoint on tally that was off when the probe went in, enabled after.
def enable_after_probe(compiler):
    output, calls = run_case(compiler, [
        # Set once the process runs: an address breakpoint made before is not moved with the PIE's load.
        "breakpoint set -n settle", "run", "breakpoint set -a tally", "breakpoint disable 2",
        "xref probe tally --duration-ms 0", "continue", "breakpoint enable 2", "continue", "xref stop 1",
        "breakpoint delete 1 2", "script site_bytes('tally')", "continue"])
    released_line(output, 1)
    check(stopped_at_tally(between(output, "breakpoint enable 2", "xref stop 1")), "LLDB did not stop at tally",
          output)
    expect_clean_end(output, calls)


# A trace session whose start probe a breakpoint takes over ends, its windows kept.
def trace_then_break(compiler):
    output, calls = run_case(compiler, [
        "breakpoint set -n settle", "run", "xref trace --start tally --duration-ms 0", "continue",
        "breakpoint set -a tally", "continue", "breakpoint delete 1 2", "script site_bytes('tally')", "continue"])
    check(re.search(r"\nxref: session 1 ended \(released\): breakpoint 2 is at its probe site 0x[0-9a-f]+; what it "
                    r"recorded is kept\n", output) is not None, "no line saying the trace ended for breakpoint 2",
          output)
    check(stopped_at_tally(between(output, "breakpoint set -a tally", "breakpoint delete")),
          "LLDB did not stop at tally", output)
    expect_clean_end(output, calls)


TESTS = {}
for _compiler in COMPILERS:
    for _case in (probe_then_break, enable_after_probe, trace_then_break):
        TESTS["%s-%s" % (_case.__name__, _compiler)] = (lambda case, compiler: lambda: case(compiler))(_case, _compiler)


if __name__ == "__main__":
    sys.exit(run_named(TESTS, sys.argv))
