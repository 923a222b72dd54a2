"""The GDB front end in real gdb (batch mode) with the real helper
(`xref serve`) tracing sample_service with BPF; windows are compared with
the requests the service records itself (--record). One test per run:
`python3 gdb_frontend_test.py NAME` (ctest runs each; tests/gdb/CMakeLists.txt)."""

import re
import sys

from gdb_batch import (SAMPLE_SERVICE, TempRecord, expect_balanced, main, read_sample_record, require_bpf,
                       require_gdb, run_gdb, service, shown_windows)


def check(condition, message, run=None):
    if not condition:
        raise AssertionError(message + ("\n--- gdb output ---\n" + run.output if run is not None else ""))


def recorded_sequence(calls):
    return [function for function, _ in calls]


def expect_here_window(run, stop_text, record):
    """The one window printed at the stop is the rest of request 0, as recorded."""
    windows = shown_windows(stop_text)
    check(len(windows) == 1, "expected one window at the stop, got %d" % len(windows), run)
    window = windows[0]
    check("  complete  " in window.header, "the window is not complete", run)
    calls = read_sample_record(record).get((window.tid, 0))
    check(calls is not None, "no record of request 0 on the window's thread", run)
    expected = recorded_sequence(calls)[1:]  # handle_request itself: the window opened inside it
    seen = window.entered()
    if seen and seen[0] == "handle_request":
        seen = seen[1:]
    check(seen == expected, "window %s != record %s" % (seen, expected), run)
    expect_balanced(window)
    return window


# (a)
def load_and_help():
    require_gdb()
    run = run_gdb(["help xref", "help xref trace", "help xref break"], helper=False)
    check(run.exit_status == 0, "gdb failed", run)
    for name in ("trace", "sessions", "show", "stop", "doctor", "maps", "resolve", "break", "helper"):
        check(re.search(r"\nxref %s -- " % name, run.output) is not None, "help xref lacks " + name, run)
    check(run.has("xref trace --here [--stop-at-end] [OPTIONS]"), "help xref trace lacks the syntax", run)
    check(run.has("xref break W:SEQ [--session N]"), "help xref break lacks the syntax", run)
    run = run_gdb(["complete xref tr", "complete xref trace --st", "complete xref show --a"], helper=False)
    check(run.has("xref trace\n"), "no completion of the subcommand", run)
    for flag in ("xref trace --start\n", "xref trace --start-filter\n", "xref trace --stop-at-end\n",
                 "xref show --all\n"):
        check(run.has(flag), "no completion " + flag.strip(), run)


def missing_helper():
    require_gdb()
    run = run_gdb(["xref helper /nonexistent/xref serve", "xref doctor", "xref helper"], helper=False)
    check(run.count("cannot start the helper") == 1, "not one clear error", run)
    check(run.has("xref: cannot start the helper '/nonexistent/xref serve': No such file or directory; set it with "
                  "`xref helper PATH` (or XREF_HELPER)"), "the error does not name the command and `xref helper`", run)


# (b) Stopped in handle_request, trace the rest of this call; the window
# prints at the next stop (the next request's breakpoint hit).
def here_window():
    require_bpf()
    with TempRecord("here") as record:
        run = run_gdb(["break handle_request", "run", "xref trace --here", "continue"], service(record))
        check(run.exit_status == 0, "gdb failed", run)
        check(re.search(r"xref: session 1 tracing PID \d+: \d+ probes \(", run.output) is not None, "no session", run)
        check(re.search(r"xref: window 1 is open on thread \d+ until the selected frame \(CFA 0x[0-9a-f]+\) returns",
                        run.output) is not None, "no here window", run)
        window = expect_here_window(run, run.after("(gdb) continue"), record)
        check(window.events[0].name == "handle_request" and "[bp 1]" in window.events[0].rest,
              "the entry of handle_request is not marked [bp 1]", run)


# (b') --stop-at-end: the process stops at the return address when the window closes.
def here_stop_at_end():
    require_bpf()
    with TempRecord("stop-at-end") as record:
        run = run_gdb(["break handle_request", "run", "disable 1", "xref trace --here --stop-at-end", "continue",
                       "bt 1", "delete", "continue"], service(record))
        check(run.exit_status == 0, "gdb failed", run)
        stop = run.between("(gdb) continue", "(gdb) bt 1")
        where = re.search(r"xref: breakpoint 2 \(temporary, thread \d+\) at the return address 0x([0-9a-f]+) "
                          r"\(worker_main\+0x[0-9a-f]+ at sample_service.c:\d+\)", run.output)
        check(where is not None, "--stop-at-end did not say where it stops", run)
        check(re.search(r"hit Temporary breakpoint 2, 0x0*%s in " % where.group(1), stop) is not None,
              "no stop at the return address", run)
        expect_here_window(run, stop, record)


def fee_arguments(window, calls):
    fetched = [event.rest[event.rest.find("price="):] for event in window.events
               if event.mark == ">" and event.name == "apply_fee"]
    recorded = ["price=%#x bps=%#x" % (arguments[0], arguments[1]) for function, arguments in calls
                if function == "apply_fee"]
    return fetched, recorded


# (c) --start bp:1 with a start filter: breakpoint 1 is disabled while the
# trace is armed and re-enabled when it ends; the window is request 3's.
def start_at_breakpoint():
    require_bpf()
    with TempRecord("start-bp") as record:
        run = run_gdb(["break handle_request", "run",
                       "xref trace --start bp:1 --fetch id=+0(%di):u64 --start-filter 'id == 3' "
                       "--functions validate,price_order,apply_fee,route_even,route_odd,settle --max-windows 1 "
                       "--fetch-at apply_fee price=%di:u64,bps=%si:u64",
                       "info breakpoints 1", "break nop_entry if $rdi == 6", "continue", "info breakpoints 1"],
                      service(record))
        check(run.exit_status == 0, "gdb failed", run)
        check(run.has("xref: breakpoint 1 disabled while the trace is armed: a uprobe at the same address would "
                      "swallow it; re-enabled when the trace ends"), "breakpoint 1 not disabled", run)
        armed = run.between("(gdb) info breakpoints 1", "(gdb) break nop_entry")
        check(re.search(r"\n1 +breakpoint +keep +n ", armed) is not None, "breakpoint 1 is not disabled", run)
        stop = run.after("(gdb) continue")
        windows = shown_windows(stop)
        check(len(windows) == 1, "expected one window", run)
        check("id=0x3" in windows[0].header, "not request 3's window", run)
        calls = read_sample_record(record).get((windows[0].tid, 3))
        check(calls is not None, "no record of request 3", run)
        check(windows[0].entered() == recorded_sequence(calls), "window != record", run)
        expect_balanced(windows[0])
        fetched, recorded = fee_arguments(windows[0], calls)
        check(fetched == recorded, "apply_fee arguments %s != record %s" % (fetched, recorded), run)
        check("xref: session 1 ended (max_windows)" in stop, "no end line", run)
        check("xref: breakpoint 1 re-enabled: session 1 ended" in stop, "breakpoint 1 not re-enabled", run)
        after = stop[stop.rfind("(gdb) info breakpoints 1"):]
        check(re.search(r"\n1 +breakpoint +keep +y ", after) is not None, "breakpoint 1 is still disabled", run)


# (d) A probe on an enabled breakpoint location is refused, naming both.
def collision_refused():
    require_bpf()
    with TempRecord("collision") as record:
        run = run_gdb(["break handle_request", "break validate", "run",
                       "xref trace --start handle_request --functions validate,settle", "xref sessions"],
                      service(record))
        refusal = run.between("(gdb) xref trace", "(gdb) xref sessions")
        lines = [line for line in refusal.split("\n") if line.startswith("xref: ")]
        check(len(lines) == 1, "not one refusal line", run)
        check(re.search(r"breakpoint (1|2)", lines[0]) is not None, "the refusal names no breakpoint", run)
        check("--allow-breakpoint-collision" in lines[0], "the refusal gives no way out", run)
        check(not run.has("xref: session 1 tracing"), "a session started", run)


# (e) xref break W:SEQ, then continue: gdb stops at that call site.
def break_at_event():
    require_bpf()
    with TempRecord("break") as record:
        run = run_gdb(["break nop_entry if $rdi == 1 || $rdi == 5", "run",
                       "xref trace --start handle_request --functions validate,price_order --max-windows 1",
                       "continue", "xref break 1:1", "delete 1", "continue", "print/x $pc"], service(record))
        check(run.exit_status == 0, "gdb failed", run)
        windows = shown_windows(run.after("(gdb) continue"))
        check(windows and len(windows[0].events) >= 2, "no window", run)
        check(windows[0].events[1].reference == "1:1" and windows[0].events[1].name == "validate",
              "event 1:1 is not validate's entry", run)
        match = re.search(r"Breakpoint 2: (0x[0-9a-f]+) handle_request\+0x[0-9a-f]+ at sample_service.c:\d+ "
                          r"\(the call site of validate, event 1:1\)", run.output)
        check(match is not None, "xref break did not say where", run)
        stop = run.after("(gdb) delete 1")
        check(re.search(r"hit Breakpoint 2, 0x0*%s in handle_request" % match.group(1)[2:], stop) is not None,
              "gdb did not stop at the call site", run)
        check(re.search(r"\$1 = %s\n" % match.group(1), stop) is not None, "pc is not the call site", run)


KILL_HELPER = ("python import os, signal, xref; helper = xref.state.get().helper_; "
               "os.kill(helper.pid, signal.SIGKILL); [helper.wait_for(lambda: False, 1) for _ in iter(helper.alive, False)]")


# (f) The helper killed with SIGKILL mid-session: one clear error at the
# next stop, the breakpoint the session disabled comes back, and the process
# is still debuggable and runs to completion.
def killed_helper():
    require_bpf()
    with TempRecord("killed") as record:
        run = run_gdb(["break handle_request", "break nop_entry if $rdi == 3", "run",
                       "xref trace --start bp:1 --functions validate,settle", KILL_HELPER, "continue", "bt 2",
                       "info breakpoints 1", "xref maps", "delete", "continue"], service(record, "8"))
        check(run.exit_status == 0, "gdb failed", run)
        check(run.count("was killed by signal 9 (SIGKILL)") == 1, "not one line about the helper's death", run)
        check(re.search(r"xref: the helper '[^']*xref serve' \(pid \d+\) was killed by signal 9 \(SIGKILL\); its probes "
                        r"are gone and session 1 ended", run.output) is not None, "the death line", run)
        check(run.has("xref: breakpoint 1 re-enabled: session 1 ended"), "breakpoint 1 not re-enabled", run)
        stop = run.after("(gdb) continue")
        check("hit Breakpoint 2, " in stop, "gdb did not stop at breakpoint 2", run)
        check("\n#1 " in stop, "bt failed", run)
        check(run.has("modules:"), "a new helper did not answer xref maps", run)
        check(re.search(r"\[Inferior 1 \(process \d+\) exited normally\]", run.output) is not None,
              "the process did not run to its end", run)
        requests = sum(1 for calls in read_sample_record(record).values() if calls)
        check(requests == 8, "the service ran %d requests, not 8" % requests, run)


# (g) The Python API from a gdb script.
API_SCRIPT = r'''
import gdb
import xref
gdb.execute("break handle_request")
gdb.execute("run")
session = xref.trace("--here")
print("API session", session)
gdb.execute("continue")
windows = xref.windows(session)
print("API windows", len(windows), windows[0].complete, windows[0].status)
for line in windows[0].text():
    print("API " + line)
try:
    xref.trace("--bogus-flag")
except xref.XrefError as error:
    print("API error:", error)
print("API drain", xref.drain())
'''


def python_api():
    require_bpf()
    with TempRecord("api") as record, TempRecord("api-script") as script:
        with open(script, "w") as file:
            file.write(API_SCRIPT)
        run = run_gdb(["python exec(open(%r).read())" % script], service(record))
        check(run.has("API session 1\n"), "xref.trace did not return the session id", run)
        check(run.has("API windows 1 True complete"), "xref.windows did not return the window", run)
        text = "\n".join(line[4:] for line in run.output.split("\n") if line.startswith("API "))
        expect_here_window(run, text, record)
        check(re.search(r"API error: xref: .*--bogus-flag", run.output) is not None, "no XrefError", run)
        check(run.has("API drain 0"), "xref.drain", run)


# (h) non-stop mode: only the thread at the breakpoint is stopped (and gdb
# does not select it by itself).
def non_stop_here():
    require_bpf()
    with TempRecord("non-stop") as record:
        run = run_gdb(["set non-stop on", "break handle_request", "run", "thread 2", "xref trace --here",
                       "continue"],
                      service(record))
        check(run.exit_status == 0, "gdb failed", run)
        expect_here_window(run, run.after("(gdb) continue"), record)


# The process exits while a window is open: it prints, incomplete.
def exit_mid_trace():
    require_bpf()
    with TempRecord("exit") as record:
        run = run_gdb(["break handle_request", "run", "xref trace --here", "call (void) _exit(0)", "xref sessions"],
                      service(record))
        windows = shown_windows(run.output)
        check(len(windows) == 1, "the open window was not printed", run)
        check("incomplete (the process exited)" in windows[0].header, "the window is not marked incomplete", run)
        check(run.has("xref: session 1 ended (target_exited)"), "no end line", run)


TESTS = {function.__name__: function for function in (
    load_and_help, missing_helper, here_window, here_stop_at_end, start_at_breakpoint, collision_refused,
    break_at_event, killed_helper, python_api, non_stop_here, exit_mid_trace)}

if __name__ == "__main__":
    sys.exit(main(TESTS))
