#!/usr/bin/env python3
"""`xref trace --here` in gdb at a breakpoint on Debian redis-server's
getCommand, whose first instruction is a tail jump (`jmp getGenericCommand`).

  check_redis_here.py --xref XREF --front-end gdb-python/xref.py [--redis-server PATH]

gdb attaches to a redis-server holding key `a`, breaks on getCommand, lets
a `GET a` in, types `xref trace --here --stop-at-end` there and continues.
The session must start (no breakpoint collision), and the window printed at
the stop must be complete and be what redis 7.0's source says GET of an
existing string key does: getCommand, handed by its tail jump to
getGenericCommand, which calls lookupKeyReadOrReply, checkType and
addReplyBulk. The client gets its value, and after gdb detaches the server
answers a PING (nothing left behind: the breakpoint was off while the probe
sat on its address, and back after).

Exit status 0 equal, 1 not, 77 (skip) when gdb, redis-server or root (BPF)
is missing and XREF_REQUIRE_BPF is not 1.
"""
from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gdb"))

from check_redis import RedisRun, redis_cli, verdict  # noqa: E402
from realcode.facility import missing_status  # noqa: E402

EXPECTED_START = ["getCommand", "getGenericCommand", "lookupKeyReadOrReply"]


def run(xref: str, front_end: str, server: str) -> int:
    from gdb_batch import echo_command, shown_windows  # gdb's commands and windows as the gdb tests have them

    problems: list[str] = []
    with RedisRun(server, "xref-realcode-redis-here-") as redis:
        redis_cli(redis.port, "set", "a", "1")
        reply_path = os.path.join(redis.work, "reply")
        get = (f"python import subprocess; subprocess.Popen(['redis-cli', '-p', '{redis.port}', 'get', 'a'], "
               f"stdout=open('{reply_path}', 'w'))")
        commands = ["break getCommand", get, "continue", "xref trace --here --stop-at-end", "continue", "delete",
                    "detach"]
        argv = ["gdb", "-nx", "-batch", "-p", str(redis.server.pid), "-ex", "source " + front_end]
        for command in commands:
            argv += ["-ex", echo_command(command), "-ex", command]
        environment = dict(os.environ, XREF_HELPER=shlex.quote(xref) + " serve")
        result = subprocess.run(argv, capture_output=True, text=True, env=environment)
        output = result.stdout + result.stderr
        if "xref: session 1 tracing PID" not in output:
            problems.append("the --here session did not start")
        if "breakpoint 1 disabled while the trace is armed" not in output:
            problems.append("breakpoint 1 was not kept off while the probe sat on its address")
        windows = shown_windows(output)
        if len(windows) != 1:
            problems.append(f"{len(windows)} windows printed, not one")
        else:
            window = windows[0]
            entered = [event.name for event in window.events if event.mark == ">"]
            if "  complete  " not in window.header:
                problems.append(f"the window is not complete: {window.header}")
            if entered[:3] != EXPECTED_START or "checkType" not in entered or "addReplyBulk" not in entered:
                problems.append(f"the window enters {entered}")
            tail = [event for event in window.events if event.name == "getGenericCommand" and event.mark == ">"]
            if not tail or "[tail]" not in tail[0].rest:
                problems.append("getGenericCommand is not shown as reached by getCommand's tail jump")
            print("window:", entered)
        try:
            if redis_cli(redis.port, "ping") != "PONG":
                problems.append("redis-server does not answer PING after gdb detached")
        except subprocess.CalledProcessError as error:
            problems.append(f"redis-server does not answer after gdb detached: {error}")
        with open(reply_path) as reply:
            if reply.read().strip() != "1":
                problems.append("the GET did not get its value")
        if problems:
            print(output)
    return verdict(problems)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--xref", required=True)
    parser.add_argument("--front-end", required=True)
    parser.add_argument("--redis-server", default="/usr/bin/redis-server")
    options = parser.parse_args()
    for program in ("gdb", "redis-cli"):
        if not shutil.which(program):
            return missing_status(program)
    if not os.path.exists(options.redis_server):
        return missing_status(options.redis_server)
    if os.geteuid() != 0:
        return missing_status("root (BPF uprobes)")
    return run(options.xref, options.front_end, options.redis_server)


if __name__ == "__main__":
    sys.exit(main())
