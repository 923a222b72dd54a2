"""Runs real lldb-19 in batch mode with the xref plugin loaded and the real
helper, for the Python tests of tests/lldb; the paths come from ctest's
environment (XREF_LLDB_PROGRAM, XREF_LLDB_PLUGIN, XREF_BINARY)."""

import os
import shlex
import subprocess

LLDB = os.environ.get("XREF_LLDB_PROGRAM", "")
PLUGIN = os.environ.get("XREF_LLDB_PLUGIN", "")
HELPER = os.environ.get("XREF_BINARY", "")


def lldb_available():
    return bool(LLDB) and os.access(LLDB, os.X_OK)


def check(condition, message, output=""):
    """An assertion whose failure carries lldb's output."""
    if not condition:
        raise AssertionError(message + ("\n--- output ---\n" + output if output else ""))


def require_lldb_and_target(program, what):
    """Root (BPF), lldb-19 and the target build `program` (`what` names it)."""
    from facility import require
    require(os.geteuid() == 0, "BPF (run as root)")
    require(lldb_available(), "lldb-19 (Debian package lldb-19)")
    check(os.access(program, os.X_OK), "no %s: %r" % (what, program))


def run_lldb(commands, target, after_signal=()):
    """`lldb-19 -b` with the plugin loaded, then `commands` (-o) on `target`
    (program and arguments): (exit status, stdout and stderr as printed).
    Batch mode ends the -o commands at a stop by a signal (xref's
    --stop-when stop is one); `after_signal` (-k) runs then."""
    argv = [LLDB, "--no-lldbinit", "-b", "-o", "plugin load " + PLUGIN]
    for command in commands:
        argv += ["-o", command]
    for command in after_signal:
        argv += ["-k", command]
    env = dict(os.environ)
    env["XREF_HELPER"] = shlex.quote(HELPER) + " serve"
    process = subprocess.run(argv + ["--"] + list(target), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, env=env)
    return process.returncode, process.stdout.decode("utf-8", "replace")


def between(output, first, second):
    """The output from the first `first` to the next `second` after it (to
    the end when there is none; "" when `first` is absent)."""
    at = output.find(first)
    if at < 0:
        return ""
    end = output.find(second, at + len(first))
    return output[at:] if end < 0 else output[at:end]
