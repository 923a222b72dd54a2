"""Every stop prints what is new, once, in interactive lldb-19 as a person
uses it: under a pseudo-terminal, the process running after `continue`,
stopped with Ctrl-C (an interrupt: LLDB runs no stop hook for it), at a
breakpoint and by a step (the stop hook prints those). The counts are
compared with the calls trace_target recorded itself, the windows with its
recorded requests; --heartbeat-ms lines print while the process runs.
`python3 interrupt_test.py probe|trace|stop_when|heartbeat|watch|profile`."""

import json
import os
import re
import shlex
import signal
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "support"))
from facility import require, run_named  # noqa: E402
from terminal import Terminal  # noqa: E402
from profile_stop import check_interrupted_capture, helper_perf_events  # noqa: E402
from trace_target_record import probe_block, recorded  # noqa: E402
import watch_target_record as wt  # noqa: E402

LLDB = os.environ.get("XREF_LLDB_PROGRAM", "")
PLUGIN = os.environ.get("XREF_LLDB_PLUGIN", "")
HELPER = os.environ.get("XREF_BINARY", "")
TARGET = os.environ.get("XREF_TRACE_TARGET", "")
PROMPT = r"\(lldb\) +$"


def check(condition, message, output=None):
    if not condition:
        raise AssertionError(message + ("\n--- what lldb printed ---\n" + output if output is not None else ""))


def fresh_record(name):
    """The path of this case's record, no file there yet."""
    record = "/tmp/xref-lldb-interrupt-%s-%d" % (name, os.getpid())
    if os.path.exists(record):
        os.unlink(record)
    return record


def start_lldb(record):
    # Requests 20 ms apart: the worker sits in its sleep between requests
    # (where the record is complete) nearly all the time.
    return lldb_at_main([TARGET, "--threads", "1", "--requests", "1000000", "--interval-us", "20000",
                         "--record", record])


def lldb_at_main(target):
    """lldb-19 with the plugin under a terminal, `target` (program and
    arguments) run and stopped at main."""
    require(bool(LLDB) and os.access(LLDB, os.X_OK), "lldb-19")
    require(os.geteuid() == 0, "BPF (run as root)")
    env = dict(os.environ)
    env["XREF_HELPER"] = shlex.quote(HELPER) + " serve"
    env["TERM"] = "xterm"
    terminal = Terminal([LLDB, "--no-lldbinit", "-o", "plugin load " + PLUGIN, "--"] + target, env)
    try:
        type_command(terminal, "breakpoint set -n main", r"Breakpoint 1: ")
        terminal.target = int(type_command(terminal, "run", r"Process (\d+) launched").group(1))
        terminal.expect(r"stop reason = breakpoint 1\.")
    except BaseException:
        terminal.kill()
        raise
    return terminal


def end(terminal, record):
    terminal.end_with_target(record)


def type_command(terminal, command, answer):
    return terminal.type_command(PROMPT, command, answer)


def run_until(terminal, record, function, more):
    """`continue`, then Ctrl-C once the target recorded `more` new calls of
    `function`; returns at the interrupt's stop report."""
    before = recorded(record, ">", function)
    type_command(terminal, "continue", r"Process \d+ resuming")
    terminal.wait_for(lambda: recorded(record, ">", function) >= before + more,
                      "trace_target recorded %d more calls of %s" % (more, function))
    terminal.send("\x03")
    terminal.expect(r"stop reason = signal SIGSTOP")


def worker_between_requests(terminal):
    """Is the worker thread in its sleep between two requests (so that every
    request it started is in the record)?"""
    line = type_command(terminal, "thread list", r"\n  thread #2: [^\n]*\n").group(0)
    return "nanosleep" in line


def kill_and_quit(terminal):
    """Kills the target from lldb, then quits it; what lldb printed."""
    terminal.expect_pending(PROMPT)
    terminal.send("process kill\r")
    terminal.expect(r"Process \d+ exited")
    terminal.expect_pending(PROMPT)
    terminal.send("quit\r")
    terminal.finish()
    return terminal.text()


def expect_one_report_per_stop(terminal, stops):
    """Ends lldb (after a command, so that the last stop's text is out) and
    counts the probe reports of the whole run."""
    type_command(terminal, "xref sessions", r"\n1 +\w+ +\d+ ")
    output = kill_and_quit(terminal)
    blocks = output.count("xref: probe session 1 at ")
    check(blocks == stops, "%d stops printed %d probe reports (one each expected)" % (stops, blocks), output)


def probe_case():
    record = fresh_record("probe")
    terminal = start_lldb(record)
    try:
        type_command(terminal, "xref probe svc::validate --duration-ms 0", r"xref: session 1 probing PID \d+")
        stops = 0
        exact = 0
        # Interrupts until two of them stopped the worker between requests,
        # where the probe's count must equal the record exactly.
        for _ in range(8):
            run_until(terminal, record, "validate", 15)
            stops += 1
            hits = probe_block(terminal)
            if worker_between_requests(terminal):
                calls = recorded(record, ">", "validate")
                check(hits == calls, "at the interrupt the probe counted %d hits, the target recorded %d calls" %
                      (hits, calls), terminal.text())
                exact += 1
                if exact == 2:
                    break
        check(exact == 2, "the worker was never between requests at an interrupt", terminal.text())
        # A breakpoint stop and a step: the stop hook prints them, the
        # listener must not print them again.
        type_command(terminal, "breakpoint set -n svc::compute_price", r"Breakpoint 2: ")
        terminal.expect_pending(PROMPT)
        terminal.send("continue\r")
        hits = probe_block(terminal)
        terminal.expect(r"stop reason = breakpoint 2\.")
        stops += 1
        # Stopped at compute_price: this request called validate (hit) and
        # is not in the record yet.
        calls = recorded(record, ">", "validate")
        check(hits == calls + 1, "at compute_price the probe counted %d hits, the target recorded %d calls before "
              "this request" % (hits, calls), terminal.text())
        type_command(terminal, "breakpoint delete 2", r"1 breakpoints deleted")
        terminal.expect_pending(PROMPT)
        terminal.send("thread step-over\r")
        probe_block(terminal)
        terminal.expect(r"stop reason = step over")
        stops += 1
        # The last stop is an interrupt again, after the hooks' stops.
        run_until(terminal, record, "validate", 15)
        stops += 1
        probe_block(terminal)
        expect_one_report_per_stop(terminal, stops)
    finally:
        end(terminal, record)


def stop_when_case():
    """The --stop-when stop (xref's SIGRTMAX-1; the stop hook prints it), then
    an interrupt: each prints once."""
    record = fresh_record("stop-when")
    terminal = start_lldb(record)
    try:
        type_command(terminal, "xref probe svc::validate --fetch id=%di:u64 --stop-when 'id == 30' --duration-ms 0",
                     r"xref: session 1 probing PID \d+")
        terminal.expect_pending(PROMPT)
        terminal.send("continue\r")
        terminal.expect(r"xref: probe session 1 at ")
        terminal.expect(r"\nxref: probe session 1 stopped thread \d+: hit 31 of svc::validate, the 1st where "
                        r"--stop-when 'id == 30' held: id=0x1e")
        hits = int(terminal.expect(r"\n  svc::validate [^\n]*  hits (\d+)").group(1))
        terminal.expect(r"stop reason = signal SIGRTMAX-1")
        # Requests 0 to 29 are in the record; request 30 is the stopped one.
        calls = recorded(record, ">", "validate")
        check(hits == 31 and calls == 30, "at the --stop-when stop: %d hits, %d calls recorded" % (hits, calls),
              terminal.text())
        run_until(terminal, record, "validate", 15)
        probe_block(terminal)
        expect_one_report_per_stop(terminal, 2)
    finally:
        end(terminal, record)


def recorded_requests(record, traced):
    """The record's requests, in order: the functions of `traced` each entered."""
    requests = {}
    with open(record) as lines:
        for line in lines:
            fields = line.split()
            if len(fields) >= 4 and fields[2] == ">" and fields[3] in traced:
                requests.setdefault(int(fields[1]), []).append(fields[3])
    return [requests[number] for number in sorted(requests)]


def trace_case():
    record = fresh_record("trace")
    terminal = start_lldb(record)
    try:
        functions = "svc::validate,svc::compute_price,svc::apply_fee,svc::settle"
        type_command(terminal, "xref trace --start svc::handle_request --functions %s --max-windows 2" % functions,
                     r"xref: session 1 tracing PID \d+")
        # Both windows close with the first two requests, long before the
        # Ctrl-C; the interrupt's stop is the first stop after them.
        run_until(terminal, record, "handle_request", 3)
        terminal.expect(r"xref: session 1 ended \(max_windows\): 2 windows \(2 complete\)")
        terminal.expect_pending(PROMPT)
        terminal.send("quit\r")
        terminal.send("y\r")  # "Quitting LLDB will kill one or more processes"
        terminal.finish()
        output = terminal.text()
        after_stop = output[output.find("stop reason = signal SIGSTOP"):]
        names = {"svc::validate": "validate", "svc::compute_price": "compute_price", "svc::apply_fee": "apply_fee",
                 "svc::settle": "settle", "svc::handle_request": "handle_request"}
        requests = recorded_requests(record, set(names.values()))
        for window in (1, 2):
            check(output.count("window %d (session 1)" % window) == 1, "window %d printed more than once" % window,
                  output)
            # entries: "  W:SEQ  [TIME]  <indent>> NAME" (the helper's columns)
            lines = re.findall(r"\n  %d:\d+ [^\n<>]*> ([\w:]+)" % window, after_stop)
            check(lines, "window %d is not printed after the interrupt" % window, output)
            entered = [names.get(name, name) for name in lines]
            check(entered == requests[window - 1], "window %d entered %s; the target's request %d entered %s" %
                  (window, entered, window - 1, requests[window - 1]), output)
    finally:
        end(terminal, record)


HEARTBEAT = r"xref: session 1: heartbeat (\d+) ms  (\d+) windows \([0-9.]+/s\)  (\d+) events  lost (\d+)"


def heartbeat_case():
    """--heartbeat-ms: while the process runs after `continue`, the helper's
    heartbeat lines print as LLDB's asynchronous output, rising, each
    counting no more windows than requests the target had run; after Ctrl-C
    the session's end counts at least the last heartbeat's windows."""
    record = fresh_record("heartbeat")
    terminal = start_lldb(record)
    try:
        type_command(terminal, "xref trace --start svc::handle_request --functions svc::validate --heartbeat-ms 100",
                     r"xref: session 1 tracing PID \d+")
        type_command(terminal, "continue", r"Process \d+ resuming")
        beats = []
        for _ in range(5):
            beat = tuple(int(n) for n in terminal.expect(HEARTBEAT).groups())
            # A request is in the record once it returned: a window that just
            # closed may be one ahead of it.
            calls = recorded(record, ">", "handle_request")
            check(beat[1] <= calls + 1 and beat[2] == 4 * beat[1] and beat[3] == 0,
                  "heartbeat %s: more windows than the %d requests recorded, not 4 events each, or losses" %
                  (beat, calls), terminal.text())
            beats.append(beat)
        for before, after in zip(beats, beats[1:]):
            check(after[0] > before[0] and after[1] >= before[1], "heartbeats do not rise: %s then %s" %
                  (before, after), terminal.text())
        check(beats[-1][1] > beats[0][1], "no window closed between the first and the last heartbeat",
              terminal.text())
        terminal.send("\x03")
        terminal.expect(r"stop reason = signal SIGSTOP")
        type_command(terminal, "xref stop 1", r"xref: session 1 ended \(stopped\): (\d+) windows")
        ended = int(re.findall(r"xref: session 1 ended \(stopped\): (\d+) windows", terminal.text())[-1])
        check(ended >= beats[-1][1], "the session ended with %d windows, the last heartbeat counted %d" %
              (ended, beats[-1][1]), terminal.text())
        terminal.expect_pending(PROMPT)
        terminal.send("quit\r")
        terminal.send("y\r")  # "Quitting LLDB will kill one or more processes"
        terminal.finish()
    finally:
        end(terminal, record)


WATCH_TARGET = os.environ.get("XREF_WATCH_TARGET_GCC", "")


def watch_case():
    """xref watch g_total, then Ctrl-C twice while watch_target writes it:
    each interrupt prints the new writes once (after LLDB's stop report);
    after `xref stop` the watch's writes are the first of the record,
    exactly, and every round recorded before the last interrupt is there."""
    record = fresh_record("watch")
    go = record + "-go"
    terminal = lldb_at_main([WATCH_TARGET, "--threads", "1", "--rounds", "0", "--interval-us", "20000",
                             "--go", go, "--record", record])
    try:
        type_command(terminal, "breakpoint delete 1", r"1 breakpoints deleted")  # main has two locations
        type_command(terminal, "script open(%r, 'w').close()" % go, r"script open\(")
        type_command(terminal, "xref watch g_total --duration-ms 0", r"xref: session 1 ")
        stops = 0
        for _ in range(2):
            before = len(wt.read_record(record))
            type_command(terminal, "continue", r"Process \d+ resuming")
            terminal.wait_for(lambda: len(wt.read_record(record)) >= before + 30, "watch_target recorded 30 writes")
            terminal.send("\x03")
            terminal.expect(r"stop reason = signal SIGSTOP")
            terminal.expect(r"xref: watch session 1: \d+ new writes?")
            stops += 1
        at_last_stop = len(wt.read_record(record))
        type_command(terminal, "xref stop 1", r"xref: session 1 ended \(stopped\)")
        type_command(terminal, "xref show --all --json", r"\n(\{[^\n]*\"live_watch\"[^\n]*)\n")
        document = json.loads(re.findall(r"\n(\{[^\n]*\"live_watch\"[^\n]*)\n", terminal.text())[-1])
        document = document.get("document", document)  # {"session", "document"}: one session's
        type_command(terminal, "process handle SIGTERM -s false -n false -p true", r"SIGTERM +true +false +false")
        # The round it is in ends, recorded, and it exits (LLDB's `process
        # signal` cannot send while the process is stopped).
        os.kill(terminal.target, signal.SIGTERM)
        type_command(terminal, "continue", r"Process \d+ exited with status = 0")
        terminal.expect_pending(PROMPT)
        terminal.send("quit\r")
        terminal.finish()
        output = terminal.text()
        interrupts = output[:output.rfind("xref stop 1")]  # `xref stop` prints the rest
        check(len(re.findall(r"xref: watch session 1: \d+ new writes?", interrupts)) == stops,
              "%d interrupts did not print the new writes once each" % stops, output)
        recorded_writes = [(w.tid, w.old.hex(), w.new.hex(), w.function) for w in wt.read_record(record)
                           if w.object == "g_total"]
        watched = [(w["tid"], w["old_bytes"], w["new_bytes"], w["writer"]["function"])
                   for w in sorted(document["result"]["writes"], key=lambda w: w["seq"])]
        recorded_before = sum(1 for w in wt.read_record(record)[:at_last_stop] if w.object == "g_total")
        check(len(watched) >= recorded_before and watched == recorded_writes[:len(watched)],
              "the watch's %d writes are not the record's first (%d g_total writes recorded before the stop)" %
              (len(watched), recorded_before), output)
    finally:
        end(terminal, record)
        if os.path.exists(go):
            os.unlink(go)


PROFILE_TARGET = os.environ.get("XREF_PROFILE_TARGET", "")


def profile_case():
    """xref profile, then Ctrl-C while profile_target works: the interrupt
    ends the capture and prints its hottest functions once, named by LLDB
    with their file:line; the helper keeps no perf event."""
    record = fresh_record("profile")
    terminal = lldb_at_main([PROFILE_TARGET, "--threads", "1", "--no-main-work", "--record", record])
    try:
        type_command(terminal, "breakpoint delete 1", r"1 breakpoints deleted")  # main has two locations
        type_command(terminal, "xref profile --freq 499", r"xref: session 1 profiling PID \d+")
        type_command(terminal, "continue", r"Process \d+ resuming")
        terminal.wait_for(lambda: helper_perf_events(HELPER) > 0, "the capture's perf events")
        terminal.pause(1.5)
        terminal.send("\x03")
        terminal.expect(r"stop reason = signal SIGSTOP")
        terminal.expect(r"xref: session 1 ended \(until_stop\): \d+ samples?")
        output = terminal.text()
        check_interrupted_capture(output, HELPER, lambda condition, message: check(condition, message, output))
        type_command(terminal, "xref sessions", r"ended \(until_stop\)")
        output = kill_and_quit(terminal)
        check(output.count("ended by until_stop") == 1, "the interrupt's capture printed more than once", output)
    finally:
        end(terminal, record)


TESTS = {"profile": profile_case, "watch": watch_case, "probe": probe_case, "trace": trace_case, "stop_when": stop_when_case, "heartbeat": heartbeat_case}


if __name__ == "__main__":
    sys.exit(run_named(TESTS, sys.argv))
