#!/usr/bin/env python3
"""A gdb breakpoint set where an xref probe already is, on a program not
written here: Debian's redis-server (the case of issue 23).

  check_redis_breakpoint.py --xref XREF --gdb-loader gdb-python/xref.py [--redis-server PATH]

gdb attaches to a running redis-server, `xref probe setCommand` goes in, five
SETs and a PING run (gdb stops at pingCommand), then `break setCommand`: the
session must release setCommand, with the five hits it counted; the next SET
must stop gdb at breakpoint 2. The session and the breakpoint end, the bytes
at setCommand in /proc/PID/mem must equal the file's, gdb detaches, and
redis-server must serve more SETs and shut down with status 0 (before the
fix gdb never stopped and a later SET killed it with SIGTRAP, status 133).

Exit status 0 equal, 1 not, 77 (skip) when redis-server, redis-cli, gdb,
xref or BPF is missing and XREF_REQUIRE_BPF is not 1.
"""
from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from check_redis import RedisRun, missing_facility, redis_cli, verdict  # noqa: E402
from realcode.facility import missing_status  # noqa: E402

SETS_BEFORE = 5
SITE_BYTES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support", "site_bytes.py")


def background(port: int, *commands: list[str], done: str = "") -> str:
    """A gdb command that starts redis-cli runs in the background: they
    complete once gdb lets redis-server run (then `done` is made, if given)."""
    script = "; ".join("redis-cli -p %d %s > /dev/null" % (port, " ".join(shlex.quote(word) for word in words))
                       for words in commands)
    if done:
        script += "; touch " + shlex.quote(done)
    return "python import subprocess; subprocess.Popen(['sh', '-c', %r])" % script


def run(xref: str, loader: str, server_path: str) -> int:
    problems = []
    with RedisRun(server_path, "xref-realcode-redis-break-") as redis:
        port, pid = redis.port, redis.server.pid
        commands = [
            "source " + loader, "python exec(open(%r).read())" % SITE_BYTES,
            "break pingCommand", "xref probe setCommand --duration-ms 0",
            background(port, *([["SET", "a", str(n)] for n in range(SETS_BEFORE)] + [["PING"]])), "continue",
            "break setCommand",
            # A PING after: a swallowed breakpoint stops gdb at pingCommand instead.
            background(port, ["SET", "a", "last"], ["PING"]), "continue",
            "xref stop 1", "delete", "site-bytes setCommand", "detach"]
        argv = ["gdb", "-nx", "-batch"]
        for command in commands:
            argv += ["-ex", "echo (gdb) %s\\n" % command.replace("\\", "\\\\"), "-ex", command]
        argv += ["-p", str(pid)]
        env = dict(os.environ, XREF_HELPER=shlex.quote(xref) + " serve")
        output = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                env=env).stdout.decode("utf-8", "replace")
        print(output)
        released = re.search(r"\nxref: session 1 no longer observes setCommand at 0x[0-9a-f]+ since \d+ ms "
                             r"\(breakpoint 2 there\): (\d+) hits counted up to then\n", output)
        if released is None:
            problems.append("no line saying session 1 released setCommand for breakpoint 2")
        elif int(released.group(1)) != SETS_BEFORE:
            problems.append(f"setCommand counted {released.group(1)} hits before the break, {SETS_BEFORE} SETs ran")
        stop = output[output.find("(gdb) break setCommand"):output.find("(gdb) xref stop 1")]
        if re.search(r"hit Breakpoint 2, 0x[0-9a-f]+ in setCommand", stop) is None:
            problems.append("gdb did not stop at breakpoint 2 in setCommand")
        site = re.search(r"\nsite bytes 0x[0-9a-f]+: live [0-9a-f]+ file [0-9a-f]+ (\w+)\n", output)
        if site is None or site.group(1) != "equal":
            problems.append("the bytes at setCommand differ from the file after everything ended")
        # redis-server goes on: more SETs, then a clean shutdown.
        for n in range(3):
            if redis.server.poll() is not None:
                break
            redis_cli(port, "set", "b", str(n))
        if redis.server.poll() is not None:
            problems.append(f"redis-server died after gdb detached (status {redis.server.returncode})")
        else:
            status = redis.shutdown()
            if status != 0:
                problems.append(f"redis-server ended with status {status} (133 is SIGTRAP from a stray int3)")
    return verdict(problems)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--xref", required=True)
    parser.add_argument("--gdb-loader", required=True)
    parser.add_argument("--redis-server", default="/usr/bin/redis-server")
    options = parser.parse_args()
    missing = missing_facility(options.xref, options.redis_server, (("redis-cli", "redis-tools"), ("gdb", "gdb")))
    if missing:
        return missing_status(missing)
    return run(options.xref, options.gdb_loader, options.redis_server)


if __name__ == "__main__":
    sys.exit(main())
