"""Runs real gdb in batch mode with gdb-python/xref.py sourced, and reads
what it printed: the windows (`xref show` text) and gdb's own reports.
The paths come from ctest's environment (tests/gdb/CMakeLists.txt)."""

import os
import re
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "support"))
from facility import SKIP, Skip, require, run_named  # noqa: E402,F401


GDB = os.environ.get("XREF_GDB_PROGRAM", "")
LOADER = os.environ.get("XREF_GDB_LOADER", "")
HELPER = os.environ.get("XREF_BINARY", "")
SAMPLE_SERVICE = os.environ.get("XREF_SAMPLE_SERVICE", "")
TRACE_TARGET = os.environ.get("XREF_TRACE_TARGET", "")
RECORDED_FUNCTIONS = {"handle_request", "validate", "price_order", "apply_fee", "route_even", "route_odd", "settle"}


def gdb_available():
    return bool(GDB) and os.access(GDB, os.X_OK)


def require_gdb():
    require(gdb_available(), "gdb (Debian package gdb)")


def require_bpf():
    require_gdb()
    require(os.geteuid() == 0, "BPF (run as root)")


class GdbRun:
    def __init__(self, status, output):
        self.exit_status = status
        self.output = output  # stdout and stderr, interleaved as printed

    def has(self, text):
        return text in self.output

    def count(self, text):
        return self.output.count(text)

    def after(self, marker):
        """The output from the first occurrence of `marker` ("" when absent)."""
        at = self.output.find(marker)
        return "" if at < 0 else self.output[at:]

    def between(self, first, second):
        text = self.after(first)
        end = text.find(second, len(first))
        return text if end < 0 else text[:end]


def echo_command(command):
    """Each command is echoed as "(gdb) COMMAND" before it runs, as a terminal shows it."""
    return "echo (gdb) " + command.replace("\\", "\\\\") + "\\n"


def run_gdb(commands, target=(), environment=None, helper=True, script=None):
    """`gdb -nx -batch` with xref.py sourced, then `commands`, on `target`
    (program and arguments). XREF_HELPER points at the built helper unless
    `helper` is False."""
    env = dict(os.environ)
    env.pop("XREF_HELPER", None)
    if helper:
        env["XREF_HELPER"] = shlex.quote(HELPER) + " serve"
    env.update(environment or {})
    argv = [GDB, "-nx", "-batch", "-ex", "source " + LOADER]
    for command in commands:
        argv += ["-ex", echo_command(command), "-ex", command]
    if script is not None:
        argv += ["-x", script]
    if target:
        argv += ["--args"] + list(target)
    process = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    return GdbRun(process.returncode, process.stdout.decode("utf-8", "replace"))


def service(record, requests="12"):
    return [SAMPLE_SERVICE, "--threads", "1", "--requests", requests, "--interval-us", "2000", "--record", record]


class ShownEvent:
    def __init__(self, reference, depth, mark, name, rest):
        self.reference, self.depth, self.mark, self.name, self.rest = reference, depth, mark, name, rest


class ShownWindow:
    def __init__(self, header):
        self.header = header
        self.id = int(header.split()[1])
        self.session = int(re.search(r"\(session (\d+)\)", header).group(1))
        self.tid = int(re.search(r"  thread (\d+)", header).group(1))
        self.events = []

    def entered(self):
        """The entries of the window, limited to the functions the service records."""
        return [event.name for event in self.events if event.mark == ">" and event.name in RECORDED_FUNCTIONS]


_EVENT = re.compile(r"^  (\d+:\d+) +(.*)$")
_DURATION = re.compile(r"^ *([0-9.]+ (?:ns|us|ms|s)) ")


def shown_windows(output):
    windows = []
    pending = []

    def finish():
        if not windows:
            return
        width = max((len(match.group(1)) for match in pending), default=0)
        # The duration column (right-aligned, blank where a call did not end in the window).
        bodies = [match.group(0)[2 + width + 2:] for match in pending]
        durations = [_DURATION.match(body) for body in bodies]
        column = max((len(found.group(0)) - 1 for found in durations if found), default=0)
        for match, body in zip(pending, bodies):
            if column:
                body = body[column + 2:]
            stripped = body.lstrip(" ")
            depth = (len(body) - len(stripped)) // 2
            mark, text = stripped[0], stripped[2:]
            name, _, rest = text.partition("  ")
            if " [" in name:
                name, bracket = name.split(" [", 1)
                rest = "[" + bracket + " " + rest
            windows[-1].events.append(ShownEvent(match.group(1), depth, mark, name, rest))
        pending.clear()

    in_window = False
    for line in output.split("\n"):
        if line.startswith("window ") and " (session " in line:
            finish()
            windows.append(ShownWindow(line))
            in_window = True
        elif in_window and _EVENT.match(line):
            pending.append(_EVENT.match(line))
        else:
            in_window = False
    finish()
    return windows


def read_sample_record(path):
    """sample_service --record: {(tid, request): [(function, [arguments])]}."""
    requests = {}
    try:
        with open(path) as record:
            for line in record:
                fields = line.split()
                if len(fields) < 3:
                    continue
                requests.setdefault((int(fields[0]), int(fields[1])), []).append(
                    (fields[2], [int(value, 16) for value in fields[3:]]))
    except FileNotFoundError:
        pass
    return requests


def trace_target(record, requests, *extra):
    """trace_target with one worker thread running `requests` requests, recording them."""
    return [TRACE_TARGET, "--threads", "1", "--requests", str(requests), "--record", record] + list(extra)


def read_trace_record(path):
    """trace_target --record: [(tid, request, kind, function)], in the order written."""
    events = []
    try:
        with open(path) as record:
            for line in record:
                fields = line.split()
                if len(fields) >= 4:
                    events.append((int(fields[0]), int(fields[1]), fields[2], fields[3]))
    except FileNotFoundError:
        pass
    return events


def function_instructions(binary, function):
    """[(static VA, instruction text)] of `function` (as `objdump -d -C` names it) in `binary`: the ground truth
    of where its instructions start."""
    listing = subprocess.run(["objdump", "-d", "-C", "--no-show-raw-insn", binary], stdout=subprocess.PIPE,
                             check=True).stdout.decode("utf-8", "replace")
    instructions = []
    inside = False
    for line in listing.split("\n"):
        if re.match(r"^[0-9a-f]+ <", line):
            inside = line.endswith("<%s>:" % function)
            continue
        match = re.match(r"^ +([0-9a-f]+):\t(.*)$", line)
        if inside and match:
            instructions.append((int(match.group(1), 16), match.group(2)))
    return instructions


def expect_balanced(window):
    """Every entry has its return, at the same depth, in nesting order."""
    open_calls = []
    for event in window.events:
        if event.mark == ">" and "[tail]" not in event.rest:
            assert event.depth == len(open_calls), event.reference
            open_calls.append(event.name)
        elif event.mark == "<":
            assert open_calls and open_calls[-1] == event.name, event.reference
            open_calls.pop()
            assert event.depth == len(open_calls), event.reference


class TempRecord:
    def __init__(self, name):
        self.path = "/tmp/xref-gdb-%s-%d" % (name, os.getpid())

    def __enter__(self):
        if os.path.exists(self.path):
            os.unlink(self.path)
        return self.path

    def __exit__(self, *exception):
        if os.path.exists(self.path):
            os.unlink(self.path)


def main(tests):
    """`python3 gdb_frontend_test.py NAME`: runs one test; 0 passed, 1 failed, 77 skipped."""
    return run_named(tests, sys.argv)
