"""`xref profile` in real lldb-19 with the real helper, on profile_target
(gcc and clang -O2 builds), against the CPU time the target measured itself
(tests/targets/profile_target.c): a breakpoint where the worker thread starts
its work and a one-shot one where that work returns (the interval its record
covers), `xref profile --until-stop` at the first; at the second stop the
hottest functions, named as LLDB names them with their file:line, agree with
the record. A breakpoint set while the capture runs stops the process;
`xref profile report` (with the options only report has) reads the capture.

    python3 profile_test.py CASE-COMPILER    (CASE: until_stop break report)
"""

import os
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))

from facility import run_named  # noqa: E402
from lldb_batch import between, check, require_lldb_and_target, run_lldb  # noqa: E402
import profile_stop  # noqa: E402

TARGETS = {"gcc": os.environ.get("XREF_PROFILE_TARGET_GCC", ""),
           "clang": os.environ.get("XREF_PROFILE_TARGET_CLANG", "")}
# A one-shot breakpoint where work_loop returns to worker_main.
# (clang's entry breakpoint sits in thread_cpu_ns, inlined: the frame of worker_main is the caller's.)
AT_RETURN = ("script lldb.debugger.HandleCommand('breakpoint set -o true -a %#x' % "
             "[f for f in lldb.thread.frames if f.GetFunctionName() == 'worker_main'][0].GetPC())")


def require_all(compiler):
    require_lldb_and_target(TARGETS[compiler], "profile_target build for %s" % compiler)


def target(compiler, directory):
    return [TARGETS[compiler], "--threads", "1", "--no-main-work", "--stop", os.path.join(directory, "stop"),
            "--record", os.path.join(directory, "record")]


def stop_after(directory, seconds):
    """An lldb command that makes the target stop `seconds` from now, while lldb lets it run."""
    return ("script import subprocess; subprocess.Popen(['sh', '-c', 'sleep %d; touch %s'], "
            "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)" % (seconds, os.path.join(directory, "stop")))


def until_stop(compiler):
    require_all(compiler)
    with tempfile.TemporaryDirectory(prefix="xref-lldb-profile-") as directory:
        status, output = run_lldb(["breakpoint set -n work_loop", "run", AT_RETURN, "breakpoint delete 1",
                                   "xref profile --until-stop --freq 997", stop_after(directory, 5), "continue",
                                   "xref sessions", "continue"], target(compiler, directory))
        check(status == 0, "lldb failed", output)
        check("xref: session 1 profiling PID " in output, "no start line", output)
        at_stop = between(output, "(lldb) continue", "(lldb) xref sessions")
        check("xref: session 1 ended (until_stop)" in at_stop, "the stop did not end the capture", output)
        rows = profile_stop.top_table(at_stop)
        check(rows, "no table of hottest functions at the stop", output)
        record = profile_stop.read_record(os.path.join(directory, "record"))
        shares = profile_stop.compare(rows, record, 1, lambda ok, message: check(ok, message, output))
        print("recorded %s; reported %s" % (
            ", ".join("%s %.2f%%" % item for item in shares.items()),
            ", ".join("%s %.2f%%" % (row.function, row.total_share) for row in rows if row.function in shares)))


def break_while_sampling(compiler):
    require_all(compiler)
    with tempfile.TemporaryDirectory(prefix="xref-lldb-profile-") as directory:
        # leaf_c runs once per cycle of 2 to 8 ms of CPU: 200 hits ignored are about half a second of work.
        status, output = run_lldb(["breakpoint set -n work_loop", "run", "breakpoint delete 1",
                                   "xref profile --freq 499", "breakpoint set -n leaf_c -i 200", "continue",
                                   "xref sessions", "process kill"],
                                  target(compiler, directory))
        at_stop = between(output, "(lldb) continue", "(lldb) xref sessions")
        check("stop reason = breakpoint 2" in at_stop and "leaf_c" in at_stop,
              "the breakpoint set while sampling was not hit", output)
        check("xref: session 1 ended (until_stop)" in at_stop, "the breakpoint's stop did not end the capture", output)
        check(profile_stop.top_table(at_stop), "no table of hottest functions at the breakpoint", output)


def report(compiler):
    require_all(compiler)
    with tempfile.TemporaryDirectory(prefix="xref-lldb-profile-") as directory:
        status, output = run_lldb(["breakpoint set -n work_loop", "run", "breakpoint delete 1",
                                   "xref profile --freq 499", "breakpoint set -n leaf_r -i 300", "continue",
                                   "xref profile report --top 5", "xref profile report --by line --top 3",
                                   "process kill"], target(compiler, directory))
        first = between(output, "(lldb) xref profile report --top 5", "(lldb) xref profile report --by line")
        rows = profile_stop.top_table(first)
        check(len(rows) == 5 and {"leaf_a", "leaf_b", "leaf_c"} <= {row.function for row in rows},
              "report of the session's capture: not the leaves", output)
        lines = between(output, "(lldb) xref profile report --by line", "(lldb) process kill")
        check("profile_target.c:" in lines, "the line report names no source line", output)


CASES = {"until_stop": until_stop, "break": break_while_sampling, "report": report}

if __name__ == "__main__":
    tests = {}
    for name, case in CASES.items():
        for compiler in TARGETS:
            tests["%s-%s" % (name, compiler)] = (lambda case, compiler: lambda: case(compiler))(case, compiler)
    sys.exit(run_named(tests, sys.argv))
