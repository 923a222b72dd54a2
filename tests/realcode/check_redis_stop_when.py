#!/usr/bin/env python3
"""`--stop-when` on a :string fetch in a program not written here: Debian's
redis-server (stripped, .dynsym only), in gdb or lldb-19 attached to it.

  check_redis_stop_when.py --xref XREF --debugger gdb|lldb [--debugger-program PATH] --front-end PATH
                           [--redis-server PATH]

`xref probe setKey --fetch 'key=+0(+8(%dx)):string' --group-by key
--stop-when 'key == "stop-here"'` goes in (setKey gets the key's object in
%rdx; its `ptr`, 8 bytes in, is the key's sds), then one redis-cli after
another SETs keys that a wrong comparison would stop at first
(`stop-her`, `stop-here-too`), then `stop-here`, then more. The debugger
must stop once, by xref's signal, in setKey with the key `stop-here` at
*(%rdx + 8); there the probe must have counted exactly the SETs sent up to
it, key by key and in order. After `xref stop` and a detach, redis-server
must have every key with the value sent and shut down with status 0.

Exit status 0 equal, 1 not, 77 (skip) when redis-server, redis-cli, the
debugger, xref or BPF is missing and XREF_REQUIRE_BPF is not 1.
"""
from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import time
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from check_redis import RedisRun, missing_facility, redis_cli, verdict  # noqa: E402
from check_redis_breakpoint import background  # noqa: E402
from realcode.facility import missing_status  # noqa: E402

KEYS = ["user:1", "stop-her", "stop-here-too", "user:2", "stop-here", "user:3", "stop-here"]
STOP = KEYS.index("stop-here") + 1  # the hit it stops at
PROBE = ("xref probe setKey --fetch 'key=+0(+8(%dx)):string' --group-by key --first 0 "
         "--stop-when 'key == \"stop-here\"' --duration-ms 0")


def debugger_run(debugger: str, program: str, front_end: str, xref: str, port: int, pid: int, done: str) -> str:
    sets = background(port, *[["SET", key, "v%d" % index] for index, key in enumerate(KEYS)], done=done)
    env = dict(os.environ, XREF_HELPER=shlex.quote(xref) + " serve")
    key_at_stop = "x/s *(char**)($rdx+8)"  # no spaces: lldb reads them as more arguments
    if debugger == "gdb":
        commands = ["source " + front_end, PROBE, sets, "continue", "bt 1", key_at_stop, "xref show", "xref stop 1",
                    "detach"]
        argv = [program, "-nx", "-batch"]
        for command in commands:
            argv += ["-ex", "echo (gdb) %s\\n" % command.replace("\\", "\\\\"), "-ex", command]
        argv += ["-p", str(pid)]
    else:
        # Batch mode ends its -o commands at a stop by a signal; -k runs then.
        argv = [program, "--no-lldbinit", "-b", "-o", "plugin load " + front_end, "-o", PROBE,
                "-o", "script " + sets[len("python "):], "-o", "continue"]
        for command in ("bt 1", key_at_stop, "xref show", "xref stop 1", "process detach"):
            argv += ["-k", command]
        argv += ["-p", str(pid)]
    return subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          env=env).stdout.decode("utf-8", "replace")


def between(output: str, first: str, second: str) -> str:
    at = output.find(first)
    end = output.find(second, at + 1)
    return "" if at < 0 else output[at:] if end < 0 else output[at:end]


def run(xref: str, debugger: str, program: str, front_end: str, server_path: str) -> int:
    problems = []
    prompt = "(%s) " % debugger
    with RedisRun(server_path, "xref-realcode-redis-stop-when-") as redis:
        done = os.path.join(redis.work, "sets-done")
        output = debugger_run(debugger, program, front_end, xref, redis.port, redis.server.pid, done)
        print(output)
        stopped = between(output, prompt + "continue", prompt + "bt 1")
        if not re.search(r"\nxref: probe session 1 stopped thread \d+: hit %d of setKey, the 1st where --stop-when "
                         r"'key == \"stop-here\"' held: key=\"stop-here\"\n" % STOP, stopped):
            problems.append(f"no stop line for hit {STOP} of setKey")
        if output.count(" stopped thread ") != 2:  # the stop, and `xref show` saying it again
            problems.append("the session did not stop a thread exactly once")
        frame = between(output, prompt + "bt 1", prompt + "x/s")
        if debugger == "gdb":
            if not re.search(r"Catchpoint \d+ \(signal SIG63\), 0x[0-9a-f]+ in setKey \(", stopped):
                problems.append("gdb did not stop at the SIG63 catchpoint in setKey")
            if not re.search(r"\n#0  0x[0-9a-f]+ in setKey \(", frame):
                problems.append("frame 0 is not setKey")
        else:
            in_set_key = r"stop reason = signal SIGRTMAX-1\n +frame #0: 0x[0-9a-f]+ [^`\n]+`setKey \+ \d+\n"
            if not re.search(in_set_key, stopped) or not re.search(in_set_key, frame):
                problems.append("lldb did not stop by SIGRTMAX-1 in setKey")
        if not re.search(r"\n0x[0-9a-f]+:\s+\"stop-here\"\n", between(output, prompt + "x/s", prompt + "xref show")):
            problems.append("the key at *(%rdx + 8) is not \"stop-here\"")
        shown = between(output, prompt + "xref show", prompt + "xref stop 1")
        hits = re.search(r"\n  setKey  hits (\d+)  passed \d+  ", shown)
        groups = Counter({key: int(count) for count, key in re.findall(r"\n      (\d+)  \"([^\"]*)\"(?=\n)", shown)})
        samples = re.findall(r"\n    sample hit \d+  thread \d+  key=\"([^\"]*)\"(?=\n)", shown)
        sent = KEYS[:STOP]
        if hits is None or int(hits.group(1)) != STOP:
            problems.append(f"xref show at the stop: {hits and hits.group(1)} hits of setKey, {STOP} SETs were sent")
        if groups != Counter(sent):
            problems.append(f"xref show at the stop counts {dict(groups)}, the SETs sent up to it {dict(Counter(sent))}")
        if samples != sent:
            problems.append(f"the samples at the stop {samples} are not the keys sent, in order {sent}")

        # redis-server goes on: every SET completes (the last value of each
        # key is there), then a clean shutdown.
        while not os.path.exists(done) and redis.server.poll() is None:
            time.sleep(0.05)
        if redis.server.poll() is None:
            last = {key: "v%d" % index for index, key in enumerate(KEYS)}
            stored = {key: redis_cli(redis.port, "get", key) for key in last}
            if stored != last:
                problems.append(f"redis-server holds {stored}, the SETs sent {last}")
        status = redis.shutdown()
        if status != 0:
            problems.append(f"redis-server ended with status {status}")
    return verdict(problems)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--xref", required=True)
    parser.add_argument("--debugger", choices=["gdb", "lldb"], required=True)
    parser.add_argument("--debugger-program", default="", help="gdb or lldb-19 (default: found on PATH)")
    parser.add_argument("--front-end", required=True, help="gdb-python/xref.py or the LLDB plugin")
    parser.add_argument("--redis-server", default="/usr/bin/redis-server")
    options = parser.parse_args()
    package = {"gdb": "gdb", "lldb": "lldb-19"}[options.debugger]
    program = options.debugger_program or package
    missing = missing_facility(options.xref, options.redis_server, (("redis-cli", "redis-tools"), (program, package)))
    if not missing and not os.path.exists(options.front_end):
        missing = f"the xref front end ({options.front_end})"
    if missing:
        return missing_status(missing)
    return run(options.xref, options.debugger, program, options.front_end, options.redis_server)


if __name__ == "__main__":
    sys.exit(main())
