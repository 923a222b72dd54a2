#!/usr/bin/env python3
"""Run a command and record the CPU time it used (bench/run_drain.sh).

  rusage_run.py OUT -- CMD [ARG...]

Runs CMD with this process's stdin, stdout and stderr, waits for it with
wait4(2) and writes one line to OUT: "user_s sys_s wall_s status", the
child's user and system CPU time (all its threads, and any children it
waited for) in seconds with microsecond resolution, the wall time from
spawn to exit, and its exit status (128 + N when signal N killed it).
Exits with that status. SIGINT and SIGTERM are passed on to CMD (this
process keeps waiting for it), and CMD gets SIGTERM should this process die
first (PR_SET_PDEATHSIG), so nothing outlives a killed benchmark.

GNU time prints CPU time in hundredths of a second; a tracer's fixed cost
is a few of those, hence this.
"""
import ctypes
import os
import signal
import subprocess
import sys
import time

PR_SET_PDEATHSIG = 1


def die_with_parent():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def main(argv):
    if len(argv) < 4 or argv[2] != "--":
        sys.exit(__doc__)
    out, command = argv[1], argv[3:]
    began = time.monotonic()
    child = subprocess.Popen(command, preexec_fn=die_with_parent)

    def forward(signum, _frame):
        try:
            os.kill(child.pid, signum)
        except ProcessLookupError:
            pass

    signal.signal(signal.SIGINT, forward)
    signal.signal(signal.SIGTERM, forward)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - began
    child.returncode = 0  # reaped here, not by Popen
    code = os.waitstatus_to_exitcode(status)
    code = 128 - code if code < 0 else code
    with open(out, "w") as f:
        f.write("%.6f %.6f %.6f %d\n" % (usage.ru_utime, usage.ru_stime, wall, code))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
