#!/usr/bin/env python3
"""xref probe's :string fetches, string filters and --group-by on a program
not written here: Debian's redis-server (stripped, .dynsym only).

  check_redis_strings.py --xref XREF [--redis-server PATH] [--requests N]

setKey(client *c, redisDb *db, robj *key, robj *val, int flags) is exported
and called once per SET with the key's object in %rdx; the object's `ptr`
(8 bytes in: type/encoding/lru bits, then refcount) is the key's sds, a
NUL-terminated char * to its bytes. So both tools read the same string:
xref `key=+0(+8(%dx)):string`, bpftrace `str(*(uint64 *)(arg2 + 8))`.

Starts redis-server on a free loopback port with no persistence, then
bpftrace (`@keys[str(...)] = count()`, whole keys: BPFTRACE_STRLEN=200,
proven live by a PING it sees) and, once bpftrace is in, six `xref probe
setKey` at once, all grouped by key: with no filter (bounds 64 and 128),
with a prefix filter (`key == "user:*"`, also on the tracefs backend), an
exact one and a `!=`. Only
then does the driver talk to the server: SETs of a fixed mix of keys
(several prefixes; keys a wrong prefix test would take: `user`, `users:9`,
`USER:1`; keys of 64, 105, 128 and 129 bytes), pipelined on one
connection, each reply checked to be +OK; the driver counts what it sent.
Nothing else sends a SET, so the whole workload runs inside both tools'
windows and every count must be equal: bpftrace's map to the driver's count
per key, and each xref probe's groups (the bytes its bound keeps, and
whether it cut the key) and `passed` to bpftrace's counts of the keys its
filter admits.

Exit status 0 equal, 1 not, 77 (skip) when redis-server, redis-tools,
bpftrace, xref or BPF is missing and XREF_REQUIRE_BPF is not 1.
"""
from __future__ import annotations

import json
import os
import random
import signal
import socket
import sys
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from check_redis import RedisRun, check_main, verdict  # noqa: E402

# Each key is sent (weight x requests / 100) times; `user`, `users:9` and
# `USER:1` share bytes with the prefix `user:` but do not start with it.
# The long ones (redis keeps keys over 44 bytes in an object of their own)
# are 64, 105, 128 and 129 bytes: at the bounds of 64 and 128 or past them.
KEY_WEIGHTS = {"user:1": 9, "user:2": 7, "user:10": 5, "user:": 2, "user": 3, "users:9": 4, "USER:1": 2,
               "session:a": 8, "session:b": 6, "cache:hot": 11, "cache:cold": 1, "order:42": 3,
               "order:" + "z" * 58: 2, "user:" + "x" * 100: 3, "cache:" + "y" * 122: 2, "cache:" + "y" * 123: 1}
# bpftrace reads whole keys: its str() bound (BPFTRACE_STRLEN, NUL included) is past the longest.
BPFTRACE_STRLEN = "200"
# (what a user writes in --filter, which keys it admits, the :string bound,
# the backend: tracefs reads with the kernel's :string and cuts it itself)
FILTERS = {
    "all": (None, lambda key: True, 64, "auto"),
    "all-128": (None, lambda key: True, 128, "auto"),
    "prefix": ('key == "user:*"', lambda key: key.startswith("user:"), 64, "auto"),
    "exact": ('key == "cache:hot"', lambda key: key == "cache:hot", 64, "auto"),
    "not": ('key != "session:a"', lambda key: key != "session:a", 128, "auto"),
    "prefix-tracefs": ('key == "user:*"', lambda key: key.startswith("user:"), 64, "tracefs"),
}


def fetch(bound: int) -> str:
    return "key=+0(+8(%dx)):string" + ("" if bound == 64 else f"[{bound}]")


def kept(key: str, bound: int) -> tuple[str, bool]:
    """What a :string[bound] fetch keeps of `key`, and whether it was cut."""
    return key[:bound], len(key) > bound


def bpftrace_program(path: str, pid: int) -> str:
    return (f"uprobe:{path}:setKey /pid == {pid}/ {{ @keys[str(*(uint64 *)(arg2 + 8))] = count(); }}\n"
            f"uprobe:{path}:pingCommand /pid == {pid}/ {{ printf(\"live\\n\"); }}\n")


def bpftrace_keys(lines: list[str]) -> Counter:
    """@keys[KEY]: N, as bpftrace prints its map at exit."""
    counts = Counter()
    for line in lines:
        if line.startswith("@keys[") and "]: " in line:
            key, value = line[len("@keys["):].rsplit("]: ", 1)
            counts[key] = int(value)
    return counts


def resp(*words: str) -> bytes:
    encoded = [word.encode() for word in words]
    return b"*%d\r\n" % len(encoded) + b"".join(b"$%d\r\n%s\r\n" % (len(word), word) for word in encoded)


def drive(port: int, requests: int) -> Counter:
    """SETs of the key mix in a fixed shuffled order on one connection; what
    was sent and answered +OK, per key."""
    keys = [key for key, weight in KEY_WEIGHTS.items() for _ in range(max(1, weight * requests // 100))]
    random.Random(24).shuffle(keys)
    sent = Counter()
    with socket.create_connection(("127.0.0.1", port)) as connection:
        replies = connection.makefile("rb")
        for start in range(0, len(keys), 100):
            batch = keys[start:start + 100]
            connection.sendall(b"".join(resp("SET", key, "v%d" % (start + index)) for index, key in enumerate(batch)))
            for key in batch:
                reply = replies.readline()
                if reply != b"+OK\r\n":
                    raise AssertionError(f"SET {key} answered {reply!r}")
                sent[key] += 1
    return sent


def groups_of(address: dict) -> Counter:
    groups = address.get("groups", {})
    return Counter({(value["string"], value["truncated"]): value["hits"] for value in groups.get("values", [])})


def run(xref: str, server_path: str, requests: int) -> int:
    with RedisRun(server_path, "xref-realcode-redis-strings-") as redis:
        bpftrace, bpftrace_output = redis.start_bpftrace(bpftrace_program(redis.binary, redis.server.pid), "live",
                                                         {"BPFTRACE_STRLEN": BPFTRACE_STRLEN})

        probers = {}
        for name, (condition, _, bound, backend) in FILTERS.items():
            argv = [xref, "probe", "--pid", str(redis.server.pid), "setKey", "--fetch", fetch(bound), "--group-by", "key",
                    "--backend", backend, "--duration-ms", "0", "--json"]
            if condition:
                argv += ["--filter", condition]
            path = os.path.join(redis.work, f"probe-{name}.json")
            prober = redis.start_xref(argv, path, "xref: probing PID")
            if prober is None:
                return 1
            probers[name] = (prober, path)

        sent = drive(redis.port, requests)

        for prober, _ in probers.values():
            prober.send_signal(signal.SIGINT)
            prober.wait()
        bpftrace.send_signal(signal.SIGINT)
        bpftrace_output.read_to_end()
        bpftrace.wait()

        seen = bpftrace_keys(bpftrace_output.lines)
        problems = []
        if seen != sent:
            problems.append(f"bpftrace counted {dict(seen)}, the driver sent {dict(sent)}")
        total = sum(sent.values())
        for name, (prober, path) in probers.items():
            condition, admits, bound, backend = FILTERS[name]
            with open(path) as output:
                document = json.load(output)
            label = (f"xref probe --backend {backend} --fetch '{fetch(bound)}' "
                     + (f"--filter '{condition}'" if condition else "(no filter)"))
            if prober.returncode != 0:
                problems.append(f"{label} exited with status {prober.returncode}")
            if not document["summary"]["complete"]:
                problems.append(f"{label}: the result is not complete: {document['summary']}")
            (address,) = document["addresses"]
            expected = Counter()
            for key, count in seen.items():
                if admits(key):
                    expected[kept(key, bound)] += count
            groups = address["groups"]
            counted = groups_of(address)
            print(f"{label}: hits {address['hits']} passed {address['passed']} groups {len(counted)}")
            if counted != expected:
                problems.append(f"{label}: groups {dict(counted)}, bpftrace's keys it admits {dict(expected)}")
            if address["hits"] != total:
                problems.append(f"{label}: {address['hits']} hits, the driver sent {total} SETs")
            if address["passed"] != sum(expected.values()):
                problems.append(f"{label}: passed {address['passed']}, bpftrace's keys it admits add up to "
                                f"{sum(expected.values())}")
            admitted_sent = sum(count for key, count in sent.items() if admits(key))
            if address["passed"] != admitted_sent:
                problems.append(f"{label}: passed {address['passed']}, the driver sent {admitted_sent} SETs of "
                                f"keys it admits")
            if not groups["complete"] or groups["not_counted"] or groups["unread"] or groups["shown"] != len(expected):
                problems.append(f"{label}: groups not whole: {({k: v for k, v in groups.items() if k != 'values'})}")
        print(f"redis-server {redis.binary}: the driver sent {total} SETs of {len(sent)} keys; "
              f"bpftrace counted {dict(seen)}")
        if not sent or min(sent.values()) < 1 or len(sent) != len(KEY_WEIGHTS):
            problems.append("the driver did not send every key")
        return verdict(problems)


def main() -> int:
    return check_main(run, __doc__, 1000)


if __name__ == "__main__":
    sys.exit(main())
