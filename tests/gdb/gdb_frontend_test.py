"""The GDB front end in real gdb (batch mode) with the real helper
(`xref serve`) tracing sample_service and probing trace_target with BPF;
windows and counts are compared with what the targets record themselves
(--record) and with objdump's listing. One test per run:
`python3 gdb_frontend_test.py NAME` (ctest runs each; tests/gdb/CMakeLists.txt)."""

import json
import os
import re
import sys

from gdb_batch import (RECORDED_FUNCTIONS, SAMPLE_SERVICE, TRACE_TARGET, TempRecord, expect_balanced, function_instructions, main,
                       read_sample_record, read_trace_record, require_bpf, require_gdb, run_gdb, service,
                       shown_windows, trace_target)

VALIDATE = "svc::validate(unsigned long, unsigned long)"
HANDLE_REQUEST = "svc::handle_request(svc::Request*)"


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


# (a) One `xref` command: its help, the helper's list of commands and
# their options, and Tab completion from the helper's own definitions.
def load_and_help():
    require_gdb()
    run = run_gdb(["help xref", "xref help", "xref trace --help", "xref probe --help", "xref break --help"])
    check(run.exit_status == 0, "gdb failed", run)
    check(run.has("`xref help` lists every command"), "help xref does not point at xref help", run)
    listing = run.between("(gdb) xref help", "(gdb) xref trace --help")
    for name in ("trace", "probe", "show", "sessions", "stop", "break", "maps", "resolve", "memscan", "doctor"):
        check(re.search(r"\n  xref %s +\S" % name, listing) is not None, "xref help lacks " + name, run)
    check(run.has("Usage: xref trace [OPTIONS]") and run.has("--stop-at-end"), "xref trace --help", run)
    check(run.has("Usage: xref probe [OPTIONS] addresses...") or run.has("Usage: xref probe"), "xref probe --help", run)
    check(run.has("W:SEQ"), "xref break --help", run)
    run = run_gdb(["complete xref tr", "complete xref trace --st", "complete xref show --a", "complete xref pro",
                   "complete xref probe --cal", "complete xref probe --until", "complete xref he"])
    check(run.has("xref trace\n"), "no completion of the command", run)
    check(run.has("xref probe\n"), "no completion of the probe command", run)
    check(run.has("xref helper\n"), "no completion of gdb's own xref helper", run)
    for flag in ("xref trace --start\n", "xref trace --start-filter\n", "xref trace --stop-at-end\n",
                 "xref show --all\n", "xref probe --callers\n", "xref probe --until-hits\n"):
        check(run.has(flag), "no completion " + flag.strip(), run)


# Function names complete from the process's own symbols.
def complete_functions():
    require_bpf()
    with TempRecord("complete") as record:
        run = run_gdb(["break handle_request", "run", "complete xref probe route_", "complete xref trace --start vali",
                       "kill"], service(record))
        check(run.has("xref probe route_even\nxref probe route_odd\n"), "probe addresses do not complete", run)
        check(run.has("xref trace --start validate\n"), "--start does not complete", run)


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
        check(re.search(r"xref: session 1 tracing PID \d+: \d+ probes in \d+ functions \(", run.output) is not None, "no session", run)
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


KILL_HELPER = ("python import os, signal, time, xref.frontend; helper = xref.frontend.get().helper_; "
               "os.kill(helper.pid, signal.SIGKILL); [time.sleep(0.02) for _ in iter(helper.alive, False)]")


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
print("API entries", " ".join(event["symbol"] for event in windows[0].events if event["kind"] == "entry"))
print("API tid", windows[0].tid)
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
        seen = [name for name in re.search(r"\nAPI entries (.*)\n", run.output).group(1).split()
                if name in RECORDED_FUNCTIONS]
        tid = int(re.search(r"\nAPI tid (\d+)\n", run.output).group(1))
        calls = read_sample_record(record).get((tid, 0))
        check(calls is not None, "no record of request 0 on the window's thread", run)
        check(seen[1:] == recorded_sequence(calls)[1:], "window %s != record %s" % (seen, calls), run)
        check(re.search(r"API error: xref: .*--bogus-flag", run.output) is not None, "no XrefError", run)
        check(run.has("API drain 1"), "xref.drain does not count the window kept", run)


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


def validate_call_site():
    """handle_request's call of validate, from objdump: the caller every probe of validate names."""
    instructions = function_instructions(TRACE_TARGET, HANDLE_REQUEST)
    calls = [address for address, text in instructions if text.startswith("call") and "<%s>" % VALIDATE in text]
    check(len(calls) == 1, "objdump shows %d calls of validate in handle_request" % len(calls))
    return calls[0] - instructions[0][0]


def validate_entries(record):
    """(thread, request) of every entry of validate trace_target recorded, in order."""
    return [(tid, request) for tid, request, kind, function in read_trace_record(record)
            if kind == ">" and function == "validate"]


# (i) A probe session counts while gdb stops and continues: at each stop the
# counts since the previous one, then the totals, against the target's record.
def probe_counts_at_stops():
    require_bpf()
    requests = 20
    caller = r"svc::handle_request(?:\(svc::Request\*\))?\+%#x at trace_target\.cpp:\d+" % validate_call_site()
    with TempRecord("probe-counts") as record:
        run = run_gdb(["break main", "break svc::compute_price", "ignore 2 9", "run",
                       "xref probe svc::validate --callers --duration-ms 0", "continue", "continue", "delete",
                       "continue", "xref show", "xref show --all --json", "xref sessions"],
                      trace_target(record, requests))
        check(run.exit_status == 0, "gdb failed", run)
        check(re.search(r"\nxref: session 1 probing PID \d+: 1 address at 1 site \((uprobe_multi|perf_uprobe)\); counts print "
                        r"at each stop \(xref show\)\n", run.output) is not None, "no start line", run)
        entries = validate_entries(record)
        check(len(entries) == requests, "the record has %d entries of validate, not %d" % (len(entries), requests), run)
        worker = entries[0][0]

        # The 10th call of compute_price comes right after the 10th of validate.
        first = run.between("(gdb) continue", "(gdb) continue")
        check(re.search(r'hit Breakpoint 2, svc::compute_price', first) is not None, "no stop at compute_price", run)
        check(re.search(r"\nxref: probe session 1 at \d+\.\d\d s \(\+\d+\.\d\d s\): 10 new hits, 0 lost\n", first)
              is not None, "no header of 10 new hits at the first stop", run)
        check(re.search(r"\n  svc::validate at trace_target\.cpp:\d+"
                        r"  hits 10 \(\+10\)  threads 1, new %d\n" % worker, first) is not None,
              "not hits 10 (+10) on the worker's new thread at the first stop", run)
        check(re.search(r"\n    callers \(exact\):\n      \+10  %s  \(10 in all\)  new\n" % caller, first) is not None,
              "handle_request's call of validate is not a new caller of 10 hits", run)
        # Nothing fetched: a sample would only repeat the caller line.
        check("sample hit" not in first, "samples with nothing fetched are printed", run)

        second = run.between("(gdb) continue\n", "(gdb) delete").split("(gdb) continue", 2)[-1]
        check(re.search(r"\nxref: probe session 1 at \d+\.\d\d s \(\+\d+\.\d\d s\): 1 new hit, 0 lost\n", second)
              is not None, "no header of 1 new hit at the second stop", run)
        check(re.search(r"  hits 11 \(\+1\)  threads 1\n    callers \(exact\):\n      \+1  %s  \(11 in all\)\n"
                        % caller, second) is not None, "not hits 11 (+1) at the second stop", run)

        # The process ran on to its end; the probe counted every call.
        ending = run.after("(gdb) delete")
        check(re.search(r"\[Inferior 1 \(process \d+\) exited normally\]", ending) is not None,
              "the process did not exit normally", run)
        check(re.search(r"\nxref: session 1 ended \(target_exited\): %d hits, %d passed, \d+ samples, lost 0; process "
                        r"\d+ exited during the probe\n" % (requests, requests), ending) is not None,
              "no end line with the record's %d calls" % requests, run)
        shown = run.between("(gdb) xref show", "(gdb) xref show --all --json")
        check(re.search(r"\nxref: probe session 1 \(ended target_exited\), \d+ ms, backend \w+\n  svc::validate "
                        r"at trace_target\.cpp:\d+  hits %d  passed %d  "
                        r"threads 1  rate [0-9.]+/s\n    callers \(exact\):\n      %d  %s\n"
                        % (requests, requests, requests, caller), shown) is not None,
              "xref show does not give the record's %d calls" % requests, run)
        document = next(json.loads(line) for line in run.after("(gdb) xref show --all --json").split("\n")
                        if line.startswith("{"))
        check(document["session"] == 1 and document["document"]["operation"] == "live_probe", "show --json", run)
        address = document["document"]["addresses"][0]
        check(address["hits"] == requests and address["threads"] == [{"tid": worker, "hits": requests}],
              "the document's counts differ from the record", run)
        check(re.search(r"\n1 +ended \(target_exited\) +\d+ +\w+ +- +%d  probe svc::validate --callers "
                        r"--duration-ms 0\n" % requests, run.after("(gdb) xref sessions")) is not None,
              "xref sessions does not list the probe", run)


# (j) bp:N: the probe goes on breakpoint 1's location, which is off while it
# runs and back on when --until-hits ends it.
def probe_breakpoint():
    require_bpf()
    with TempRecord("probe-bp") as record:
        run = run_gdb(["break svc::validate", "run", "xref probe bp:1 --fetch id=%di:u64 --until-hits 5 --duration-ms 0",
                       "info breakpoints 1", "break svc::compute_price", "ignore 2 7", "continue",
                       "info breakpoints 1", "xref show", "delete", "continue"], trace_target(record, 12))
        check(run.exit_status == 0, "gdb failed", run)
        check(run.has("xref: breakpoint 1 disabled while the probe is armed: a uprobe at the same address would swallow "
                      "it; re-enabled when the probe ends"), "breakpoint 1 not disabled", run)
        armed = run.between("(gdb) info breakpoints 1", "(gdb) break svc::compute_price")
        check(re.search(r"\n1 +breakpoint +keep +n ", armed) is not None, "breakpoint 1 is not disabled", run)
        stop = run.between("(gdb) continue", "(gdb) xref show")
        check("hit Breakpoint 2, svc::compute_price" in stop, "no stop at compute_price", run)
        check(re.search(r"\nxref: session 1 ended \(until_hits\): 5 hits, 5 passed, 5 samples, lost 0\n", stop)
              is not None, "the session did not end at 5 hits", run)
        check("xref: breakpoint 1 re-enabled: session 1 ended" in stop, "breakpoint 1 not re-enabled", run)
        after = stop[stop.rfind("(gdb) info breakpoints 1"):]
        check(re.search(r"\n1 +breakpoint +keep +y ", after) is not None, "breakpoint 1 is still disabled", run)
        # The first five calls of validate, the one gdb stopped at included.
        worker = validate_entries(record)[0][0]
        shown = run.between("(gdb) xref show", "(gdb) delete")
        # validate(id, amount) of request n has id n: hits 1 to 5 are requests 0 to 4.
        listed = r"\n  bp:1  svc::validate at trace_target\.cpp:\d+  hits 5  passed 5  "
        listed += r"threads 1  rate [0-9.]+/s\n"
        listed += "".join(r"    sample hit %d  thread %d  id=%#x\n" % (hit, worker, hit - 1) for hit in range(1, 6))
        check(re.search(listed, shown) is not None,
              "xref show does not give hits 1 to 5 of the worker", run)
        check(re.search(r"\[Inferior 1 \(process \d+\) exited normally\]", run.output) is not None,
              "the process did not exit normally", run)


# (l) --stop-when: BPF evaluates the condition at every hit and stops the
# thread once, at the right hit (request n has id n and amount
# 100 + 37 * (n % 11)); gdb shows it as xref's stop, and the process goes on
# normally afterwards.
def probe_stop_when():
    require_bpf()
    with TempRecord("probe-stop-when") as record:
        run = run_gdb(["break main", "run",
                       "xref probe svc::validate --fetch id=%di:u64,amount=%si:u64 --stop-when 'amount > 300' "
                       "--skip 2 --duration-ms 0", "continue", "info frame", "print id", "print amount", "continue",
                       "xref show"], trace_target(record, 20))
        check(run.exit_status == 0, "gdb failed", run)
        check(run.has("xref: the first hit where --stop-when holds stops its thread with signal 63 (SIGRTMAX-1): "
                      "catchpoint 2 stops "
                      "there and keeps it from the process"), "no line about the stop signal", run)
        stop = run.between("(gdb) continue", "(gdb) info frame")
        check(re.search(r' hit Catchpoint 2 \(signal SIG63\), ', stop) is not None, "gdb did not stop on SIG63", run)
        # amount > 300 from request 6 on; --skip 2: the third such hit, request 8.
        check(re.search(r"\nxref: probe session 1 stopped thread \d+: hit 9 of svc::validate, the 3rd where "
                        r"--stop-when 'amount > 300' held: id=0x8 amount=0x18c\n", stop) is not None,
              "no stop line for hit 9 (request 8)", run)
        check(re.search(r"\nxref: \(a signal from the probe: the thread stopped just after the probed instruction at "
                        r"svc::validate\b", stop) is not None, "no line saying where the thread stopped", run)
        check(re.search(r"\$1 = 8\n", run.between("(gdb) print id", "(gdb) print amount")) is not None,
              "the stopped frame's id is not 8", run)
        check(re.search(r"\$2 = 396\n", run.between("(gdb) print amount", "(gdb) continue")) is not None,
              "the stopped frame's amount is not 396", run)
        # One stop; `xref show` then prints the whole result, the stop in it.
        check(run.between("(gdb) continue", "(gdb) xref show").count("stopped thread") == 1, "not one stop", run)
        check(re.search(r"\[Inferior 1 \(process \d+\) exited normally\]", run.output) is not None,
              "the process did not exit normally", run)
        entries = validate_entries(record)
        check(len(entries) == 20, "the record has %d entries of validate, not 20" % len(entries), run)
        check(re.search(r"\n  svc::validate .*  hits 20  passed 20  ", run.after("(gdb) xref show")) is not None,
              "xref show does not count the 20 calls", run)


HELPER_SESSIONS = ('python import xref.frontend; print("helper sessions:", xref.frontend.get().helper_.request('
                   '"sessions", {}, 15).result["sessions"])')


# (k) Refused before anything is attached, in one line each: a probe on an
# enabled breakpoint's location, an address inside an instruction.
def probe_refusals():
    require_bpf()
    instructions = function_instructions(TRACE_TARGET, VALIDATE)
    entry, (second, _), (third, _) = instructions[0][0], instructions[1], instructions[2]
    check(third - second > 1, "validate's second instruction is one byte long")
    with TempRecord("probe-refusals") as record:
        run = run_gdb(["break svc::compute_price", "run", "break *((char *) &svc::validate + %d)" % (second - entry),
                       "xref probe trace_target:%#x" % second, "xref probe trace_target:%#x" % (second + 1),
                       "xref sessions", HELPER_SESSIONS,
                       "continue", "delete", "continue"], trace_target(record, 4))
        check(run.exit_status == 0, "gdb failed", run)
        collision = run.between("(gdb) xref probe trace_target:%#x\n" % second,
                                "(gdb) xref probe trace_target:%#x\n" % (second + 1))
        lines = [line for line in collision.split("\n")[1:] if line]
        check(len(lines) == 1, "not one line for the collision", run)
        check(re.search(r"^xref: the trace_target:%#x \(svc::validate\(unsigned long, unsigned long\)\) probe at 0x[0-9a-f]+ is "
                        r"breakpoint 2\.1's location: the uprobe would swallow the breakpoint; .*"
                        r"--allow-breakpoint-collision$" % second, lines[0]) is not None,
              "the collision line does not name the probe and breakpoint 2", run)
        inside = run.between("(gdb) xref probe trace_target:%#x\n" % (second + 1), "(gdb) xref sessions")
        lines = [line for line in inside.split("\n")[1:] if line]
        check(len(lines) == 1 and lines[0].startswith("xref: ") and ("%#x" % (second + 1)) in lines[0],
              "not one line naming the address inside an instruction", run)
        check(run.has("(gdb) xref sessions\nxref: no sessions"), "a session was left", run)
        check(run.has("\nhelper sessions: []\n"), "the helper still runs a session", run)
        # Nothing swallowed breakpoint 2: gdb stops there at the next call.
        check(re.search(r"hit Breakpoint 2, 0x[0-9a-f]+ in svc::validate", run.after("(gdb) continue")) is not None,
              "gdb did not stop at breakpoint 2", run)
        check(re.search(r"\[Inferior 1 \(process \d+\) exited normally\]", run.output) is not None,
              "the process did not exit normally", run)


# (b'') Stopped at a breakpoint on a function whose first instruction is a
# tail jump (tail_first's get_command is `jmp generic_lookup`, as redis's
# getCommand is): --here works there. The breakpoint is off while the
# session runs (the probe on that jump sees the thread leave), the window
# equals the record, the breakpoint stops the next request again, and the
# process exits normally (no int3 left behind).
def here_at_tail_jump(compiler):
    require_bpf()
    binary = os.environ["XREF_TAIL_FIRST_" + compiler.upper()]
    first = function_instructions(binary, "get_command")
    check(first and first[0][1].startswith("jmp"), "get_command does not start with a jump: %s" % first[:1])
    with TempRecord("tail-first-" + compiler) as record:
        run = run_gdb(["break get_command", "run", "xref trace --here --stop-at-end", "continue", "continue",
                       "delete", "continue"], [binary, record, "3"])
        check(run.exit_status == 0, "gdb failed", run)
        check(re.search(r"xref: session 1 tracing PID \d+: \d+ probes in \d+ functions \(", run.output) is not None, "no session", run)
        check(run.has("xref: breakpoint 1 disabled while the trace is armed"), "breakpoint 1 not kept off", run)
        stop = run.between("(gdb) continue", "(gdb) continue\n")
        windows = shown_windows(stop)
        check(len(windows) == 1, "expected one window at the stop, got %d" % len(windows), run)
        check("  complete  " in windows[0].header, "the window is not complete", run)
        seen = [event.name for event in windows[0].events if event.mark == ">"]
        with open(record) as lines:
            expected = [line.split()[1] for line in lines if line.split()[0] == "0"]
        check(seen == expected, "window %s != record of request 0 %s" % (seen, expected), run)
        again = run.between("(gdb) continue\n", "(gdb) delete")[len(stop):]
        check(re.search(r"Breakpoint 1, (0x[0-9a-f]+ in )?get_command", again) is not None,
              "breakpoint 1 did not stop the next request", run)
        check(re.search(r"\[Inferior 1 \(process \d+\) exited normally\]", run.output) is not None,
              "the process did not exit normally", run)


# (l) --heartbeat-ms: while the process runs after `continue`, the helper's
# heartbeat lines print as they come (the shell's text, "xref: session 1: "
# first), their counts rising and never above the requests the target ran.
HEARTBEAT = re.compile(r"\nxref: session 1: heartbeat (\d+) ms  (\d+) windows \([0-9.]+/s\)  (\d+) events  lost (\d+)\n")


def trace_heartbeat():
    require_bpf()
    requests = 40
    with TempRecord("heartbeat") as record:
        run = run_gdb(["break main", "run",
                       "xref trace --start svc::handle_request --functions svc::validate --heartbeat-ms 100",
                       "continue", "xref sessions"],
                      trace_target(record, requests, "--interval-us", "20000"))
        check(run.exit_status == 0, "gdb failed", run)
        ran = run.between("(gdb) continue", "(gdb) xref sessions")
        check(re.search(r"\[Inferior 1 \(process \d+\) exited normally\]", ran) is not None,
              "the process did not run to its end", run)
        # Printed while the process ran: before gdb saw it exit.
        beats = [tuple(int(n) for n in found.groups())
                 for found in HEARTBEAT.finditer(ran[:ran.find("[Inferior 1 (process")])]
        check(len(beats) >= 3, "%d heartbeat lines while the process ran 40 requests 20 ms apart" % len(beats), run)
        for before, after in zip(beats, beats[1:]):
            check(after[0] > before[0] and after[1] >= before[1] and after[2] >= before[2],
                  "heartbeats do not rise: %s then %s" % (before, after), run)
        check(beats[-1][1] > beats[0][1], "no window closed between the first and last heartbeat", run)
        entered = [request for tid, request, kind, function in read_trace_record(record)
                   if kind == ">" and function == "handle_request"]
        check(len(entered) == requests, "the record has %d requests, not %d" % (len(entered), requests), run)
        # A window is a request (handle_request and its validate): 2 events each.
        for elapsed, windows, events, lost in beats:
            check(windows <= requests and events == 4 * windows and lost == 0,
                  "heartbeat at %d ms: %d windows, %d events, lost %d for at most %d requests of 4 events" %
                  (elapsed, windows, events, lost, requests), run)
        check(re.search(r"\nxref: session 1 ended \(target_exited\): %d windows" % requests, run.output) is not None,
              "the session did not end with the record's %d windows" % requests, run)


def here_at_tail_jump_gcc():
    here_at_tail_jump("gcc")


def here_at_tail_jump_clang():
    here_at_tail_jump("clang")


TESTS = {function.__name__: function for function in (
    load_and_help, complete_functions, missing_helper, here_window, here_stop_at_end, start_at_breakpoint, collision_refused,
    break_at_event, killed_helper, python_api, non_stop_here, exit_mid_trace, probe_counts_at_stops,
    probe_breakpoint, probe_refusals, probe_stop_when, here_at_tail_jump_gcc, here_at_tail_jump_clang,
    trace_heartbeat)}

if __name__ == "__main__":
    sys.exit(main(TESTS))
