"""`xref profile` in real gdb (batch mode) with the real helper, on
profile_target built by gcc and clang at -O2 (tests/targets/profile_target.c),
against the CPU time the target measured itself: a breakpoint where the worker
thread starts its work and a temporary one where that work returns (the
interval its record covers), `xref profile --until-stop` at the first, and at
the second stop the hottest functions, named as gdb names them with their
file:line, agree with the record; a breakpoint set while the capture runs
stops the process (the sampler touches no code); `xref profile report` reads
the session's capture, and a named --out file. One test per run:
`python3 gdb_profile_test.py NAME` (tests/gdb/CMakeLists.txt)."""

import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))

from gdb_batch import main, require_bpf, run_gdb  # noqa: E402
import profile_stop  # noqa: E402

TARGETS = os.environ.get("XREF_PROFILE_TARGET_DIR", "")
BUILDS = {"gcc": "profile_target", "clang": "profile_target_clang", "nopie": "profile_target_nopie"}

# The worker's work_loop returns to worker_main here: a temporary breakpoint.
AT_RETURN = ("python f = gdb.selected_frame().older(); "
             "gdb.execute('tbreak *%#x' % f.pc()); print('work_loop returns to %#x' % f.pc())")


def check(condition, message, run=None):
    if not condition:
        raise AssertionError(message + ("\n--- gdb output ---\n" + run.output if run is not None else ""))


class Target:
    """profile_target: one worker thread (the main thread only waits), stopped by a file, recording."""

    def __init__(self, build):
        self.dir = tempfile.mkdtemp(prefix="xref-gdb-profile-")
        self.stop = os.path.join(self.dir, "stop")
        self.record = os.path.join(self.dir, "record")
        self.argv = [os.path.join(TARGETS, BUILDS[build]), "--threads", "1", "--no-main-work",
                     "--stop", self.stop, "--record", self.record]

    def stop_after(self, seconds):
        """A gdb command that makes the target stop `seconds` from now, while gdb lets it run."""
        return "shell (sleep %s; touch %s) >/dev/null 2>&1 &" % (seconds, self.stop)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        shutil.rmtree(self.dir, ignore_errors=True)


def until_stop(build):
    require_bpf()
    with Target(build) as target:
        run = run_gdb(["break work_loop", "run", AT_RETURN, "delete 1",
                       "xref profile --until-stop --freq 997", target.stop_after(5), "continue",
                       "xref sessions", "continue"], target.argv)
        check(run.exit_status == 0, "gdb failed", run)
        check(run.has("xref: session 1 profiling PID "), "no start line", run)
        at_stop = run.between("(gdb) continue", "(gdb) xref sessions")
        check("Temporary breakpoint 2" in at_stop, "work_loop did not return to the temporary breakpoint", run)
        check("xref: session 1 ended (until_stop)" in at_stop, "the stop did not end the capture", run)
        check("ended by until_stop" in at_stop, "the summary does not say the stop ended it", run)
        rows = profile_stop.top_table(at_stop)
        check(rows, "no table of hottest functions at the stop", run)
        record = profile_stop.read_record(target.record)
        shares = profile_stop.compare(rows, record, 1, lambda ok, message: check(ok, message, run))
        print("recorded %s; reported %s" % (
            ", ".join("%s %.2f%%" % item for item in shares.items()),
            ", ".join("%s %.2f%%" % (row.function, row.total_share) for row in rows if row.function in shares)))


def break_while_sampling():
    """A breakpoint set after the capture started (its events on every thread,
    its BPF program attached) stops the process there; the stop ends the capture."""
    require_bpf()
    with Target("gcc") as target:
        # leaf_c runs once per cycle of 2 to 8 ms of CPU: 200 hits ignored are about half a second of work.
        run = run_gdb(["break work_loop", "run", "delete 1", "xref profile --freq 499", "break leaf_c",
                       "ignore 2 200", "continue", "bt 1", "xref sessions", "kill"], target.argv)
        check(run.exit_status == 0, "gdb failed", run)
        at_stop = run.between("(gdb) continue", "(gdb) bt 1")
        check("Breakpoint 2, " in at_stop and "leaf_c" in at_stop, "the breakpoint set while sampling was not hit", run)
        check("xref: session 1 ended (until_stop)" in at_stop, "the breakpoint's stop did not end the capture", run)
        check(profile_stop.top_table(at_stop), "no table of hottest functions at the breakpoint", run)
        check(run.has("#0  leaf_c"), "the thread is not in leaf_c", run)


def report():
    """`xref profile report` without a file reads the session's capture (its path
    shown at the stop, removed when the helper exits); with --out the capture is that file, and report reads it
    too; diff without files compares the last two, annotate reads the last."""
    require_bpf()
    with Target("gcc") as target:
        named = os.path.join(target.dir, "named.xprof")
        # leaf_r runs once per cycle of 2 to 8 ms of CPU: 300 hits ignored are about a second of work.
        run = run_gdb(["break work_loop", "run", "delete 1", "xref profile --freq 499", "break leaf_r",
                       "ignore 2 300", "continue", "xref profile report --top 5",
                       "xref profile report --by line --top 3", "xref profile --freq 499 --out " + named,
                       "ignore 2 300", "continue", "xref profile report " + named + " --top 5", "xref profile diff",
                       "xref profile annotate leaf_a --min-samples 5", "kill"], target.argv)
        check(run.exit_status == 0, "gdb failed", run)
        shown = run.between("(gdb) continue", "(gdb) xref profile report --top 5")
        written = [line for line in shown.split("\n") if "written to " in line]
        check(written, "the stop does not show where the capture is", run)
        path = written[0].split("written to ")[1].strip()
        # The helper's own file: gone with the helper (gdb exited), unlike --out.
        check(re.match(r"^/tmp/xref-serve-\d+-\w+/profile-1\.xprof$", path) and not os.path.exists(path),
              "the helper's capture %s is not its own file, or outlived it" % path, run)
        first = run.between("(gdb) xref profile report --top 5", "(gdb) xref profile report --by line")
        rows = profile_stop.top_table(first)
        check(len(rows) == 5 and {"leaf_a", "leaf_b", "leaf_c"} <= {row.function for row in rows},
              "report of the session's capture: not the leaves", run)
        lines = run.between("(gdb) xref profile report --by line", "(gdb) xref profile --freq 499 --out")
        check("profile_target.c:" in lines, "the line report names no source line", run)
        second = run.between("(gdb) xref profile report " + named, "(gdb) xref profile diff")
        check(os.path.isfile(named), "--out %s was not written" % named, run)
        check({"leaf_a", "leaf_b"} <= {row.function for row in profile_stop.top_table(second)},
              "the report of --out names no leaf", run)
        diff = run.between("(gdb) xref profile diff", "(gdb) xref profile annotate")
        check(os.path.basename(path) in diff and "named.xprof" in diff, "diff did not compare the last two captures",
              run)
        annotate = run.between("(gdb) xref profile annotate", "(gdb) kill")
        hottest = re.search(r"^>.* profile_target\.c:(\d+)$", annotate, re.M)
        check("# leaf_a in " in annotate and hottest and int(hottest.group(1)) in profile_stop.leaf_lines("leaf_a"),
              "annotate did not mark leaf_a's hottest instruction in its loop", run)


def no_capture_yet():
    """report before any capture: one line, what to do."""
    require_bpf()
    run = run_gdb(["xref profile report"])
    check(run.has("xref: no capture of this helper yet for `xref profile report` without a file; "
                  "`xref profile` first"), "no clear refusal", run)


TESTS = {"until_stop_gcc": lambda: until_stop("gcc"), "until_stop_clang": lambda: until_stop("clang"),
         "until_stop_nopie": lambda: until_stop("nopie"),
         "break_while_sampling": break_while_sampling, "report": report, "no_capture_yet": no_capture_yet}

if __name__ == "__main__":
    sys.exit(main(TESTS))
