"""--stop-when's signal beside a program's own, in real gdb (batch mode) with
the real helper: signal_target (built by gcc and clang, -O2) sends itself
SIGRTMAX-1 (gdb's SIG63, the signal --stop-when stops a thread with) 30 times
with sigqueue, kill and tgkill, and records on its last line how many its
handler received as sent (si_code, sender, sigqueue's payload). While a
probe session stops it once, every one of its own signals must reach it,
gdb must report only xref's as the probe's stop, and `handle SIG63` must be
what it was before the session. One test per run:
`python3 gdb_signal_test.py NAME` (tests/gdb/CMakeLists.txt)."""

import os
import re
import sys

from gdb_batch import main, require_bpf, run_gdb

SIGNAL_TARGET_DIR = os.environ.get("XREF_SIGNAL_TARGET_DIR", "")
PROBE = "xref probe signal_work --fetch i=%di:u64 --stop-when 'i == {stop}' --duration-ms 0"
ALL_RECEIVED = "signal_target: handled {count} of {count} signals as sent (0 wrong, 0 missing)"


def check(condition, message, run=None):
    if not condition:
        raise AssertionError(message + ("\n--- gdb output ---\n" + run.output if run is not None else ""))


def signal_target(compiler):
    return os.path.join(SIGNAL_TARGET_DIR, "signal_target-" + compiler)


def handling(run, marker):
    """`info signals SIG63`'s row printed after `marker`."""
    match = re.search(r"\nSIG63\s+(Yes|No)\s+(Yes|No)\s+(Yes|No)\s", run.after(marker))
    check(match is not None, "no `info signals SIG63` row after " + marker, run)
    return match.groups()


def expect_probe_stop(run, stop, catchpoint_stops):
    """xref's signal stopped the thread once, at call `stop`; gdb stopped
    at the catchpoint `catchpoint_stops` times in all."""
    check(run.count("stopped thread") == 1, "not one probe stop", run)
    check(re.search(r"\nxref: probe session 1 stopped thread \d+: hit %d of signal_work, the 1st where --stop-when "
                    r"'i == %d' held: i=%#x\n" % (stop + 1, stop, stop), run.output) is not None,
          "no probe stop line for call %d" % stop, run)
    check(len(re.findall(r"(?:\n| hit )Catchpoint 2 \(signal SIG63\), ", run.output)) == catchpoint_stops,
          "gdb did not stop at catchpoint 2 as expected", run)
    check(re.search(r"\$1 = %d\n" % stop, run.between("(gdb) print $rdi", "(gdb) ")) is not None,
          "the stopped thread is not in call %d" % stop, run)


# The user lets the program have SIG63 and sees it printed (`handle SIG63
# nostop print pass`): its own pass and print while the session runs, only
# xref's stops. The session ends by `xref stop` (gcc) or the process's exit
# (clang); either way the catchpoint goes and `handle` is untouched.
def own_signals(compiler, end_by_stop):
    require_bpf()
    stop = 12
    commands = ["handle SIG63 nostop print pass", "info signals SIG63", "break main", "run", "delete 1",
                PROBE.format(stop=stop), "continue", "print $rdi"]
    if end_by_stop:
        commands += ["xref stop 1", "info signals SIG63", "info breakpoints", "continue"]
    else:
        commands += ["continue", "info signals SIG63", "info breakpoints"]
    run = run_gdb(commands, [signal_target(compiler), "--signals", "30"])
    check(run.exit_status == 0, "gdb failed", run)
    check(run.has("\n" + ALL_RECEIVED.format(count=30) + "\n"), "the program did not receive its 30 signals", run)
    check(re.search(r"\[Inferior 1 \(process \d+\) exited normally\]", run.output) is not None,
          "the program did not exit 0", run)
    check(run.has("xref: the first hit where --stop-when holds stops its thread with signal 63 (SIGRTMAX-1): "
                  "catchpoint 2 stops there "
                  "and keeps it from the process; the program's own SIG63 go as `handle SIG63` says"),
          "no line about the catchpoint", run)
    expect_probe_stop(run, stop, 1)
    # Its own, as `handle` says: printed, passed, no stop.
    during = run.count(" received signal SIG63 (the program's own: ")
    check(during == (stop if end_by_stop else 30), "%d of the program's signals printed while the session ran" % during,
          run)
    check(run.count("not passed") == 0, "a signal of the program was not passed", run)
    if end_by_stop:
        check(run.count("\nProgram received signal SIG63, Real-time event 63.\n") == 30 - stop,
              "gdb did not print the program's signals after the session as it does without xref", run)
    check(run.has("xref: catchpoint 2 (SIG63) deleted: no --stop-when session left"), "the catchpoint stayed", run)
    after = "(gdb) xref stop 1" if end_by_stop else "exited normally"
    check(handling(run, "(gdb) info signals SIG63") == ("No", "Yes", "Yes"), "handle SIG63 changed before", run)
    check(handling(run, after) == ("No", "Yes", "Yes"), "handle SIG63 is not what it was before the session", run)
    check(run.has("(gdb) info breakpoints\nNo breakpoints or watchpoints."), "a breakpoint was left", run)


def own_signals_gcc():
    own_signals("gcc", True)


def own_signals_clang():
    own_signals("clang", False)


# gdb's defaults (`handle SIG63 stop print pass`): the program's own still
# stop, each said to be the program's, passed at `continue`; xref's is the
# probe's stop and never reaches the program.
def own_signals_stopping():
    require_bpf()
    run = run_gdb(["break main", "run", "delete 1", "info signals SIG63", PROBE.format(stop=2), "continue",
                   "continue", "continue", "print $rdi", "continue", "xref stop 1", "info signals SIG63", "continue",
                   "continue"], [signal_target("gcc"), "--signals", "4"])
    check(run.exit_status == 0, "gdb failed", run)
    check(run.has("\n" + ALL_RECEIVED.format(count=4) + "\n"), "the program did not receive its 4 signals", run)
    expect_probe_stop(run, 2, 4)
    own = re.findall(r"\nxref: this SIG63 is the program's own \((SI_QUEUE|SI_USER|SI_TKILL) from pid \d+\), not "
                     r"xref's: `continue` passes it\n", run.output)
    check(own == ["SI_QUEUE", "SI_USER", "SI_TKILL"], "the program's stops were not told apart: %s" % own, run)
    check(run.count("\nProgram received signal SIG63, Real-time event 63.\n") == 1,
          "gdb did not stop at the program's signal after the session", run)
    check(re.search(r"\[Inferior 1 \(process \d+\) exited normally\]", run.output) is not None,
          "the program did not exit 0", run)
    check(handling(run, "(gdb) info signals SIG63") == ("Yes", "Yes", "Yes"), "gdb's default changed before", run)
    check(handling(run, "(gdb) xref stop 1") == ("Yes", "Yes", "Yes"), "handle SIG63 is not gdb's default after", run)


# A --stop-when session that does not start leaves nothing behind.
def own_signals_start_failed():
    require_bpf()
    run = run_gdb(["break main", "run", "delete 1", "xref probe no_such_function --fetch i=%di:u64 --stop-when 'i == 1'",
                   "info breakpoints", "info signals SIG63", "continue"], [signal_target("gcc"), "--signals", "4"])
    check(run.exit_status == 0, "gdb failed", run)
    check(run.has("xref: catchpoint 2 (SIG63) deleted: no --stop-when session left"), "the catchpoint stayed", run)
    check(run.has("(gdb) info breakpoints\nNo breakpoints or watchpoints."), "a breakpoint was left", run)
    check(handling(run, "(gdb) info signals SIG63") == ("Yes", "Yes", "Yes"), "handle SIG63 changed", run)
    check(run.count("\nProgram received signal SIG63, Real-time event 63.\n") == 1, "gdb's own stop changed", run)


TESTS = {function.__name__: function for function in (own_signals_gcc, own_signals_clang, own_signals_stopping,
                                                      own_signals_start_failed)}

if __name__ == "__main__":
    sys.exit(main(TESTS))
