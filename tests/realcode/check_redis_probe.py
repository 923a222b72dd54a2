#!/usr/bin/env python3
"""xref probe on a program not written here: Debian's redis-server.

  check_redis_probe.py --xref XREF [--redis-server PATH] [--requests N]

Starts redis-server on a free loopback port and counts the hits of a few of
its .dynsym functions twice on the same run: with bpftrace uprobes (count()
maps) and with `xref probe --callers` (counts kept in BPF). Nothing but an
ECHO, a redis-benchmark run and another ECHO talks to the server while xref
is attached; the counts must agree exactly, and every caller xref names
must be a verified call site whose counts add up to the function's hits.

Exit status 0 equal, 1 not, 77 (skip) when redis-server, redis-benchmark,
bpftrace, xref or BPF is missing and XREF_REQUIRE_BPF is not 1.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from check_redis import LineReader, die_with_parent, free_port, missing_facility, redis_cli, wait_for_redis  # noqa: E402
from realcode.facility import missing_status  # noqa: E402

PROBED = ["processCommand", "lookupKeyReadOrReply", "setKey", "echoCommand"]
BEGIN, END = "xref-probe-begin", "xref-probe-end"


def bpftrace_program(path: str, pid: int) -> str:
    """Counts in bpftrace maps (nothing is lost to a full buffer), only while
    @on == 1: from the first ECHO's echoCommand to the second's."""
    counted = ",\n".join(f"uprobe:{path}:{name}" for name in PROBED if name != "echoCommand")
    return (f"uprobe:{path}:echoCommand /pid == {pid}/ {{ @on = @on + 1; }}\n"
            f"{counted} /pid == {pid} && @on == 1/ {{ @hits[probe] = count(); }}\n"
            f"uprobe:{path}:pingCommand /pid == {pid}/ {{ printf(\"live\\n\"); }}\n")


def bpftrace_counts(lines: list[str]) -> Counter:
    """@hits[uprobe:PATH:NAME]: N, as bpftrace prints its maps at exit."""
    counts = Counter()
    for line in lines:
        if line.startswith("@hits[") and "]: " in line:
            probe, value = line[len("@hits["):].split("]: ")
            counts[probe.rsplit(":", 1)[1]] = int(value)
    return counts


def run(xref: str, server_path: str, requests: int) -> int:
    port = free_port()
    work = tempfile.mkdtemp(prefix="xref-realcode-redis-probe-")
    processes = []
    try:
        server = subprocess.Popen([server_path, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                   "--appendonly", "no", "--dir", work, "--daemonize", "no"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=die_with_parent)
        processes.append(server)
        wait_for_redis(port, server)
        binary = os.path.realpath(f"/proc/{server.pid}/exe")

        # bpftrace first, proven live by a PING it sees ("Attaching" comes
        # before the probes are in); then xref.
        bpftrace = subprocess.Popen(["bpftrace", "-B", "line", "-e", bpftrace_program(binary, server.pid)],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=die_with_parent)
        processes.append(bpftrace)
        bpftrace_output = LineReader(bpftrace.stdout.fileno())
        bpftrace_errors = LineReader(bpftrace.stderr.fileno())
        while "live" not in bpftrace_output.lines:
            if bpftrace.poll() is not None:
                bpftrace_errors.read_to_end()
                raise AssertionError("bpftrace ended: " + "\n".join(bpftrace_errors.lines))
            redis_cli(port, "ping")
            bpftrace_output.read_available(0.1)

        result_path = os.path.join(work, "probe.json")
        with open(result_path, "w") as result_output:
            prober = subprocess.Popen([xref, "probe", "--pid", str(server.pid), *PROBED, "--callers",
                                       "--duration-ms", "0", "--json"],
                                      stdout=result_output, stderr=subprocess.PIPE, text=True)
        processes.append(prober)
        while True:
            line = prober.stderr.readline()
            if not line:
                print("xref did not attach:", open(result_path).read())
                return 1
            if line.startswith("xref: probing PID"):
                break

        # Nothing else talks to this server: xref sees exactly the ECHOs,
        # the benchmark's commands and nothing after them.
        redis_cli(port, "echo", BEGIN)
        subprocess.run(["redis-benchmark", "-p", str(port), "-c", "1", "-n", str(requests), "-t", "set,get", "-q"],
                       check=True, stdout=subprocess.DEVNULL)
        redis_cli(port, "echo", END)

        # Both stop on SIGINT after writing out everything they counted.
        prober.send_signal(signal.SIGINT)
        prober.wait()
        bpftrace.send_signal(signal.SIGINT)
        bpftrace_output.read_to_end()
        bpftrace.wait()
        with open(result_path) as result_output:
            document = json.load(result_output)

        seen = bpftrace_counts(bpftrace_output.lines)
        problems = []
        if prober.returncode != 0:
            problems.append(f"xref probe exited with status {prober.returncode}")
        if not document["summary"]["complete"]:
            problems.append(f"xref's result is not complete: {document['summary']}")
        counted = {}
        for address in document["addresses"]:
            name = address["address"]
            counted[name] = address["hits"]
            callers = address.get("callers", {})
            if callers.get("method") != "exact":
                problems.append(f"{name}: callers {callers.get('method')}, not exact at an entry")
            sites = callers.get("sites", [])
            if sum(site["hits"] for site in sites) != address["hits"]:
                problems.append(f"{name}: callers add up to {sum(site['hits'] for site in sites)}, "
                                f"hits {address['hits']}")
            unverified = [site for site in sites if not site["call_site_verified"]]
            if unverified:
                problems.append(f"{name}: {len(unverified)} call sites not verified: {unverified[:3]}")
        # bpftrace counts from the first ECHO's echoCommand to the second's:
        # the first ECHO's processCommand came before (xref has one more),
        # and ECHO calls neither setKey nor lookupKeyReadOrReply.
        expected = {"processCommand": seen["processCommand"] + 1, "lookupKeyReadOrReply": seen["lookupKeyReadOrReply"],
                    "setKey": seen["setKey"], "echoCommand": 2}
        for name, count in expected.items():
            if counted.get(name) != count:
                problems.append(f"{name}: xref counted {counted.get(name)}, bpftrace says {count}")
        print(f"redis-server {binary}: between the markers bpftrace counted {dict(seen)}, xref {counted}")
        if seen["setKey"] < requests or seen["lookupKeyReadOrReply"] < requests:
            problems.append("the workload did not reach setKey and lookupKeyReadOrReply for every request")
        for problem in problems[:20]:
            print("wrong:", problem)
        print("equal" if not problems else f"{len(problems)} differences")
        return 0 if not problems else 1
    finally:
        for process in reversed(processes):
            if process.poll() is None:
                process.kill()
                process.wait()
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--xref", required=True)
    parser.add_argument("--redis-server", default="/usr/bin/redis-server")
    parser.add_argument("--requests", type=int, default=2000)
    args = parser.parse_args()
    missing = missing_facility(args.xref, args.redis_server)
    if missing:
        return missing_status(missing)
    return run(args.xref, args.redis_server, args.requests)


if __name__ == "__main__":
    sys.exit(main())
