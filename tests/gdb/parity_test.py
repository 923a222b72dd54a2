"""One scenario in the shell, in GDB and in LLDB: the helper writes every
line in all three, so the texts must read alike, equal but for what
differs by nature (durations, thread ids, the session number a debugger
shows, each debugger's spelling of a C++ name's parameter list: the
debuggers' names are shown as they spell them, the shell's are the helper's
short labels, and the trace checks that too). The window
must also be the request the target recorded. `python3 parity_test.py trace|probe`."""

import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

from gdb_batch import TRACE_TARGET, read_trace_record, require_bpf, run_gdb
from facility import require, run_named  # noqa: E402 (gdb_batch put tests/support on the path)

LLDB = os.environ.get("XREF_LLDB_PROGRAM", "")
PLUGIN = os.environ.get("XREF_LLDB_PLUGIN", "")
HELPER = os.environ.get("XREF_BINARY", "")

TRACE_WORDS = ["--start", "svc::handle_request", "--fetch", "id=+0(%di):u64", "--start-filter", "id == 3",
               "--functions", "svc::validate,svc::compute_price", "--max-windows", "1"]
PROBE_WORDS = ["svc::validate", "--callers", "--fetch", "id=%di:u64", "--until-hits", "6"]


def check(condition, message, output=""):
    if not condition:
        raise AssertionError(message + ("\n--- output ---\n" + output if output else ""))


def target_argv(directory):
    go = os.path.join(directory, "go")
    record = os.path.join(directory, "record")
    return go, record, [TRACE_TARGET, "--threads", "1", "--requests", "8", "--interval-us", "2000",
                        "--go-file", go, "--record", record]


def shell(command, words):
    """The CLI on a target waiting for its go file, created once the probes are in."""
    with tempfile.TemporaryDirectory() as directory:
        go, record, argv = target_argv(directory)
        target = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
        try:
            helper = subprocess.Popen([HELPER, command, "--pid", str(target.pid), "--no-status"] + words +
                                      (["--duration-ms", "20000"] if command == "probe" else []),
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            # The helper says on stderr when its probes are in.
            for line in helper.stderr:
                if b"xref: tracing PID" in line or b"xref: probing PID" in line:
                    break
            open(go, "w").close()
            output, _ = helper.communicate(timeout=120)
        finally:
            target.wait(timeout=60)
        return output.decode("utf-8", "replace"), read_trace_record(record)


def debugger_commands(command, words, go):
    quoted = " ".join(shlex.quote(word) for word in words)
    return ["xref %s %s" % (command, quoted)], "python open(%r, 'w').close()" % go


def in_gdb(command, words):
    with tempfile.TemporaryDirectory() as directory:
        go, record, argv = target_argv(directory)
        start, go_command = debugger_commands(command, words, go)
        run = run_gdb(["break main", "run"] + start + [go_command, "continue", "xref show --all"], argv)
        return run.output, read_trace_record(record)


def in_lldb(command, words):
    with tempfile.TemporaryDirectory() as directory:
        go, record, argv = target_argv(directory)
        start, _ = debugger_commands(command, words, go)
        commands = ["breakpoint set -n main", "run"] + start + [
            "script open(%r, 'w').close()" % go, "continue", "xref show --all"]
        lldb = [LLDB, "--no-lldbinit", "-b", "-o", "plugin load " + PLUGIN]
        for one in commands:
            lldb += ["-o", one]
        env = dict(os.environ)
        env["XREF_HELPER"] = shlex.quote(HELPER) + " serve"
        process = subprocess.run(lldb + ["--"] + argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, env=env)
        return process.stdout.decode("utf-8", "replace"), read_trace_record(record)


_DURATION = r"[0-9.]+ (?:ns|us|ms|s)"


def plain(line):
    """A line with what differs by nature taken out."""
    while re.search(r"\([^()]*\)", line):  # parameter lists, "(session 1)", "(stopped ...)"
        line = re.sub(r"\([^()]*\)", "", line)
    line = re.sub(r"\[stopped %s in it\]" % _DURATION, "", line)
    line = re.sub(r"\bself %s" % _DURATION, "", line)
    line = re.sub(r"\bran %s" % _DURATION, "ran", line)
    line = re.sub(r"\bthread \d+", "thread", line)
    line = re.sub(r"^(  \d+:\d+ +)%s" % _DURATION, r"\1", line)
    line = re.sub(r"\[bp \d+\]", "", line)
    line = re.sub(r"\brate [0-9.]+/s", "rate", line)
    return re.sub(r"\s+", " ", line).strip()


def window_text(output):
    """The lines of the first window: its header and its events."""
    lines = output.split("\n")
    start = next((i for i, line in enumerate(lines) if line.startswith("window 1")), None)
    check(start is not None, "no window", output)
    window = [lines[start]]
    for line in lines[start + 1:]:
        if not re.match(r"^  \d+:\d+ ", line):
            break
        window.append(line)
    return [plain(line) for line in window]


def probe_text(output):
    """The lines of the probe's result for its address: from its address line on."""
    lines = output.split("\n")
    start = next((i for i, line in enumerate(lines) if re.match(r"^  svc::validate", line)
                  and "hits 6 " in line), None)
    check(start is not None, "no probe result of 6 hits", output)
    found = [lines[start]]
    for line in lines[start + 1:]:
        if not line.startswith("    "):
            break
        found.append(line)
    return [plain(line) for line in found]


def trace():
    require_bpf()
    require(bool(LLDB) and os.access(LLDB, os.X_OK), "lldb-19")
    texts = {}
    for name, runner in (("shell", shell), ("gdb", in_gdb), ("lldb", in_lldb)):
        output, record = runner("trace", TRACE_WORDS)
        texts[name] = window_text(output)
        traced = {"handle_request", "validate", "compute_price"}
        entered = [function for tid, request, kind, function in record
                   if request == 3 and kind == ">" and function in traced]
        names = [re.search(r"> (\S+)", line).group(1) for line in texts[name][1:] if re.search(r"> (\S+)", line)]
        check([name.split("::")[-1] for name in names] == entered,
              "%s: window %s != record of request 3 %s" % (name, names, entered), output)
        # What `plain` takes out is each one's own spelling: the debuggers name
        # the functions as they spell them (with the parameter list), the
        # shell with the helper's short label.
        spelled = re.search(r"> svc::handle_request\(svc::Request\*\)  from ", output) is not None
        check(spelled == (name != "shell"), "%s: svc::handle_request is %s as the debugger spells it" %
              (name, "not shown" if name != "shell" else "shown"), output)
    check(texts["shell"] == texts["gdb"], "the shell and GDB differ:\n%s\n%s" % (texts["shell"], texts["gdb"]))
    check(texts["shell"] == texts["lldb"], "the shell and LLDB differ:\n%s\n%s" % (texts["shell"], texts["lldb"]))


def probe():
    require_bpf()
    require(bool(LLDB) and os.access(LLDB, os.X_OK), "lldb-19")
    texts = {}
    for name, runner in (("shell", shell), ("gdb", in_gdb), ("lldb", in_lldb)):
        output, record = runner("probe", PROBE_WORDS)
        texts[name] = probe_text(output)
        ids = re.findall(r"sample hit \d+ +thread +id=(0x[0-9a-f]+)", "\n".join(texts[name]))
        check(ids == ["0x%x" % n for n in range(6)], "%s: samples %s are not requests 0 to 5" % (name, ids), output)
    check(texts["shell"] == texts["gdb"], "the shell and GDB differ:\n%s\n%s" % (texts["shell"], texts["gdb"]))
    check(texts["shell"] == texts["lldb"], "the shell and LLDB differ:\n%s\n%s" % (texts["shell"], texts["lldb"]))


if __name__ == "__main__":
    sys.exit(run_named({"trace": trace, "probe": probe}, sys.argv))
