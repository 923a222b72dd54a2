"""gdb as a person types at it, under a pseudo-terminal: Tab completes the
helper's commands, options and the process's function names on the line
being typed; Ctrl-C at a running process prints the probe's counts, equal to
the calls trace_target recorded itself when the worker sat between requests.
`python3 interactive_test.py tab|interrupt`."""

import os
import re
import shlex
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "support"))
from facility import require, run_named  # noqa: E402
from terminal import Terminal  # noqa: E402
from profile_stop import check_interrupted_capture, helper_perf_events  # noqa: E402
from trace_target_record import probe_block, recorded  # noqa: E402

GDB = os.environ.get("XREF_GDB_PROGRAM", "")
LOADER = os.environ.get("XREF_GDB_LOADER", "")
HELPER = os.environ.get("XREF_BINARY", "")
TARGET = os.environ.get("XREF_TRACE_TARGET", "")
PROMPT = r"\(gdb\) +$"


def check(condition, message, output=None):
    if not condition:
        raise AssertionError(message + ("\n--- what gdb printed ---\n" + output if output is not None else ""))


def gdb_terminal(target):
    """gdb under a pseudo-terminal with xref loaded, on `target` (program and arguments)."""
    require(bool(GDB) and os.access(GDB, os.X_OK), "gdb")
    require(os.geteuid() == 0, "BPF (run as root)")
    env = dict(os.environ)
    env["XREF_HELPER"] = shlex.quote(HELPER) + " serve"
    env["TERM"] = "xterm"
    return Terminal([GDB, "-nx", "-q", "-iex", "set pagination off", "-iex", "set confirm off",
                     "-ex", "source " + LOADER, "--args"] + target, env)


def start_gdb(record):
    # Requests 20 ms apart: the worker sits in its sleep between requests
    # (where the record is complete) nearly all the time.
    terminal = gdb_terminal([TARGET, "--threads", "1", "--requests", "1000000", "--interval-us", "20000",
                             "--record", record])
    try:
        stop_at(terminal, "svc::handle_request")
    except BaseException:
        terminal.kill()
        raise
    return terminal


def end(terminal, record):
    terminal.end_with_target(record)


def type_command(terminal, command, answer):
    return terminal.type_command(PROMPT, command, answer)


def complete(terminal, typed, expected):
    """Types `typed` and a Tab; the line being typed must become `expected`
    (a regular expression); then clears the line (Ctrl-U) and ends it with a
    command that does nothing (an empty line would repeat the last one)."""
    terminal.expect_pending(PROMPT)
    terminal.send(typed + "\t")
    match = terminal.expect_pending(r"\(gdb\) " + expected + "$")
    terminal.send("\x15echo\r")
    return match


def stop_at(terminal, function):
    """Runs the target to its first call of `function` (breakpoint 1, kept)
    and takes the process's PID for the terminal's clean-up."""
    type_command(terminal, "break " + function, r"Breakpoint 1 at ")
    type_command(terminal, "run", r"Breakpoint 1, ")
    terminal.target = int(type_command(terminal, "info inferiors", r"\n\*? +1 +process (\d+) ").group(1))


def quit_gdb(terminal):
    terminal.expect_pending(PROMPT)
    terminal.send("kill\r")
    terminal.expect_pending(PROMPT)
    terminal.send("quit\r")
    terminal.finish()


def tab_case():
    record = "/tmp/xref-gdb-tab-%d" % os.getpid()
    terminal = start_gdb(record)
    try:
        # The helper's commands and options, and the process's functions.
        complete(terminal, "xref prob", r"xref probe ")  # "xref pro": probe and profile
        complete(terminal, "xref probe --cal", r"xref probe --callers ")
        complete(terminal, "xref trace --stop-a", r"xref trace --stop-at-end ")
        complete(terminal, "xref probe svc::comp", r"xref probe svc::compute_price ")
        complete(terminal, "xref trace --start svc::vali", r"xref trace --start svc::validate ")
        # Two candidates: a second Tab lists both (after the last ':', as gdb
        # lists C++ names).
        terminal.expect_pending(PROMPT)
        terminal.send("xref probe svc::risky\t\t")
        terminal.expect(r"\n *(svc::)?risky +(svc::)?risky_inner *\n")
        terminal.send("\x15echo\r")
        quit_gdb(terminal)
    finally:
        end(terminal, record)


def worker_between_requests(terminal):
    """Is the worker thread in its sleep between two requests (so that every
    request it started is in the record)?"""
    terminal.expect_pending(PROMPT)
    terminal.send("thread apply all bt 3\r")
    text = terminal.expect(r"(?s)Thread 2 .*?\n\n").group(0)
    return "nanosleep" in text


def interrupt_case():
    record = "/tmp/xref-gdb-interrupt-%d" % os.getpid()
    if os.path.exists(record):
        os.unlink(record)
    terminal = start_gdb(record)
    try:
        type_command(terminal, "delete 1", r"")
        type_command(terminal, "xref probe svc::validate --duration-ms 0", r"xref: session 1 probing PID \d+")
        exact = 0
        for _ in range(8):
            before = recorded(record, ">", "validate")
            type_command(terminal, "continue", r"Continuing\.")
            terminal.wait_for(lambda: recorded(record, ">", "validate") >= before + 15,
                              "trace_target recorded 15 more calls of validate")
            terminal.send("\x03")
            terminal.expect(r"received signal SIGINT")
            hits = probe_block(terminal)
            if worker_between_requests(terminal):
                calls = recorded(record, ">", "validate")
                check(hits == calls, "at the interrupt the probe counted %d hits, the target recorded %d calls" %
                      (hits, calls), terminal.text())
                exact += 1
                if exact == 2:
                    break
        check(exact == 2, "the worker was never between requests at an interrupt", terminal.text())
        quit_gdb(terminal)
        check(terminal.text().count("xref: probe session 1 at ") >= 2, "not one report per interrupt",
              terminal.text())
    finally:
        end(terminal, record)


WATCH_TARGET = os.environ.get("XREF_WATCH_TARGET", "")


def watch_interrupt_case():
    """`xref watch` completes, and Ctrl-C at the running process prints the
    writes since the last stop: the last one leaves g_total at what gdb
    reads there (every write recorded, none after the stop)."""
    record = "/tmp/xref-gdb-watch-interrupt-%d" % os.getpid()
    go = record + ".go"
    for path in (record, go):
        if os.path.exists(path):
            os.unlink(path)
    open(go, "w").write("go\n")
    terminal = gdb_terminal([WATCH_TARGET, "--threads", "2", "--rounds", "0", "--interval-us", "20000",
                             "--go", go, "--record", record])
    try:
        stop_at(terminal, "configure")
        type_command(terminal, "delete 1", r"")
        complete(terminal, "xref wat", r"xref watch ")
        complete(terminal, "xref watch --stop-w", r"xref watch --stop-when ")
        type_command(terminal, "xref watch g_total", r"xref: session 1 watching PID \d+: 1 range")
        for _ in range(2):
            type_command(terminal, "continue", r"Continuing\.")
            terminal.pause(0.5)
            terminal.send("\x03")
            terminal.expect(r"received signal SIGINT")
            start = terminal.expect(r"xref: watch session 1: \d+ new writes?").start()
            # At most 20 print at the stop; `xref show` prints the rest.
            type_command(terminal, "xref show", r"\(gdb\) xref show\r?\n")
            terminal.wait_for(lambda: re.search(PROMPT, terminal.pending()) is not None, "the prompt after xref show")
            shown = terminal.text()[start:]
            last = [line for line in shown.split("\n") if "  [0]  " in line][-1]
            new = int(last.split("→")[1].split()[0], 16)
            value = int(type_command(terminal, "print g_total", r"\$\d+ = (\d+)").group(1))
            check(new == value, "the last write shown leaves g_total at %#x, gdb reads %#x" % (new, value),
                  terminal.text())
        type_command(terminal, "xref stop", r"xref: session 1 ended \(stopped\)")
        quit_gdb(terminal)
    finally:
        end(terminal, record)
        if os.path.exists(go):
            os.unlink(go)


PROFILE_TARGET = os.environ.get("XREF_PROFILE_TARGET", "")


def profile_interrupt_case():
    """`xref profile` completes; Ctrl-C at the running process ends the capture
    there and prints its hottest functions; nothing of it stays attached."""
    record = "/tmp/xref-gdb-profile-interrupt-%d" % os.getpid()
    if os.path.exists(record):
        os.unlink(record)
    terminal = gdb_terminal([PROFILE_TARGET, "--threads", "1", "--no-main-work", "--record", record])
    try:
        stop_at(terminal, "work_loop")
        type_command(terminal, "delete 1", r"")
        complete(terminal, "xref prof", r"xref profile ")
        complete(terminal, "xref profile --until-s", r"xref profile --until-stop ")
        complete(terminal, "xref profile rep", r"xref profile report ")
        type_command(terminal, "xref profile --freq 499", r"xref: session 1 profiling PID \d+")
        type_command(terminal, "continue", r"Continuing\.")
        terminal.wait_for(lambda: helper_perf_events(HELPER) > 0, "the capture's perf events")
        terminal.pause(1.0)
        terminal.send("\x03")
        terminal.expect(r"received signal SIGINT")
        start = terminal.expect(r"xref: session 1 ended \(until_stop\): \d+ samples?").start()
        shown = terminal.text()
        check(start > 0, "no end line", shown)
        check_interrupted_capture(shown, HELPER, lambda condition, message: check(condition, message, shown))
        type_command(terminal, "xref sessions", r"ended \(until_stop\)")
        quit_gdb(terminal)
    finally:
        end(terminal, record)


if __name__ == "__main__":
    sys.exit(run_named({"tab": tab_case, "interrupt": interrupt_case, "watch_interrupt": watch_interrupt_case,
                       "profile_interrupt": profile_interrupt_case},
                       sys.argv))
