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

import json
import os
import sys
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from check_redis import RedisRun, check_main, stop_counting, verdict  # noqa: E402

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
    with RedisRun(server_path, "xref-realcode-redis-probe-") as redis:
        # bpftrace first, proven live by a PING it sees ("Attaching" comes
        # before the probes are in); then xref.
        bpftrace, bpftrace_output = redis.start_bpftrace(bpftrace_program(redis.binary, redis.server.pid), "live")

        result_path = os.path.join(redis.work, "probe.json")
        prober = redis.start_xref([xref, "probe", "--pid", str(redis.server.pid), *PROBED, "--callers",
                                   "--duration-ms", "0", "--json"], result_path, "xref: probing PID")
        if prober is None:
            return 1
        # Nothing else talks to this server: xref sees exactly the ECHOs,
        # the benchmark's commands and nothing after them.
        redis.benchmark(requests, "set,get", BEGIN, END)
        stop_counting(prober, bpftrace, bpftrace_output)
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
        print(f"redis-server {redis.binary}: between the markers bpftrace counted {dict(seen)}, xref {counted}")
        if seen["setKey"] < requests or seen["lookupKeyReadOrReply"] < requests:
            problems.append("the workload did not reach setKey and lookupKeyReadOrReply for every request")
        return verdict(problems)


def main() -> int:
    return check_main(run, __doc__, 2000)


if __name__ == "__main__":
    sys.exit(main())
