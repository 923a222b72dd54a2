#!/usr/bin/env python3
"""xref trace on a program not written here: Debian's redis-server.

  check_redis.py --xref XREF [--redis-server PATH] [--requests N]

Starts redis-server on a free loopback port, traces its main thread with
`xref trace --start processCommand --functions ...` (the names of its
.dynsym; Debian strips the rest) and, at the same time, counts the same
functions with bpftrace uprobes on the same thread, one count per
processCommand call (uprobe to uretprobe). A redis-benchmark run between two
ECHO commands (echoCommand is traced too, so both sides find them) is the
workload. Each xref window must be complete and count, per function, as
many entries as bpftrace saw in the same processCommand call.

Exit status 0 equal, 1 not, 77 (skip) when redis-server, redis-benchmark,
bpftrace, xref or BPF is missing and XREF_REQUIRE_BPF is not 1.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from realcode.facility import missing_status  # noqa: E402

# Exported functions of Debian's build (nm -D); lookupKeyRead and its
# siblings are small wrappers that tail-jump into each other.
COUNTED = ["echoCommand", "call", "lookupKey", "lookupKeyRead", "lookupKeyReadWithFlags", "lookupKeyReadOrReply",
           "lookupKeyWrite", "lookupKeyWriteWithFlags", "setKey", "dbAdd", "addReply", "addReplyBulk"]
BEGIN, END = "xref-realcode-begin", "xref-realcode-end"


def die_with_parent() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def redis_cli(port: int, *words: str) -> str:
    return subprocess.run(["redis-cli", "-p", str(port), *words], check=True, capture_output=True,
                          text=True).stdout.strip()


def wait_for_redis(port: int, server: subprocess.Popen) -> None:
    # Readiness is an event (PONG); the pauses only pace the asking.
    while server.poll() is None:
        try:
            if redis_cli(port, "ping") == "PONG":
                return
        except subprocess.CalledProcessError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"redis-server exited with status {server.returncode}")


class LineReader:
    """The lines a pipe has delivered so far, without blocking for more."""

    def __init__(self, fd: int):
        self.fd = fd
        self.lines: list[str] = []
        self.partial = b""

    def _take(self, data: bytes) -> None:
        *complete, self.partial = (self.partial + data).split(b"\n")
        self.lines += [line.decode().strip() for line in complete]

    def read_available(self, wait_seconds: float) -> None:
        while select.select([self.fd], [], [], wait_seconds)[0]:
            data = os.read(self.fd, 65536)
            if not data:
                return
            self._take(data)
            wait_seconds = 0

    def read_to_end(self) -> None:
        while data := os.read(self.fd, 65536):
            self._take(data)


class RedisRun:
    """A redis-server on a free loopback port with a scratch directory, and
    every process started beside it; all killed and removed at the end."""

    def __init__(self, server_path: str, prefix: str):
        self.server_path = server_path
        self.prefix = prefix
        self.processes: list[subprocess.Popen] = []

    def __enter__(self) -> "RedisRun":
        self.port = free_port()
        self.work = tempfile.mkdtemp(prefix=self.prefix)
        self.server = self.spawn([self.server_path, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                  "--appendonly", "no", "--dir", self.work, "--daemonize", "no"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_redis(self.port, self.server)
        self.binary = os.path.realpath(f"/proc/{self.server.pid}/exe")
        return self

    def spawn(self, argv: list[str], **options) -> subprocess.Popen:
        options.setdefault("preexec_fn", die_with_parent)
        process = subprocess.Popen(argv, **options)
        self.processes.append(process)
        return process

    def start_bpftrace(self, program: str, live: str, environment: dict | None = None
                       ) -> tuple[subprocess.Popen, LineReader]:
        """bpftrace running `program` (`environment` added to its own) and its
        output so far, once it has printed the line `live` (its probe fired by
        the PINGs sent meanwhile: "Attaching" comes before the probes are in)."""
        bpftrace = self.spawn(["bpftrace", "-B", "line", "-e", program], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env={**os.environ, **(environment or {})})
        output, errors = LineReader(bpftrace.stdout.fileno()), LineReader(bpftrace.stderr.fileno())
        while live not in output.lines:
            if bpftrace.poll() is not None:
                errors.read_to_end()
                raise AssertionError("bpftrace ended: " + "\n".join(errors.lines))
            redis_cli(self.port, "ping")
            output.read_available(0.1)
        return bpftrace, output

    def start_xref(self, argv: list[str], output_path: str, attached: str) -> subprocess.Popen | None:
        """xref writing to `output_path`, once it says `attached` on stderr
        (None, the output printed, when it ends before)."""
        with open(output_path, "w") as output:
            xref = self.spawn(argv, stdout=output, stderr=subprocess.PIPE, text=True, preexec_fn=None)
        while True:
            line = xref.stderr.readline()
            if not line:
                print("xref did not attach:", open(output_path).read())
                return None
            if line.startswith(attached):
                return xref

    def benchmark(self, requests: int, tests: str, begin: str, end: str) -> None:
        """An ECHO, a one-connection redis-benchmark of `tests`, an ECHO."""
        redis_cli(self.port, "echo", begin)
        subprocess.run(["redis-benchmark", "-p", str(self.port), "-c", "1", "-n", str(requests), "-t", tests, "-q"],
                       check=True, stdout=subprocess.DEVNULL)
        redis_cli(self.port, "echo", end)

    def shutdown(self) -> int:
        """Asks redis-server to end (SHUTDOWN NOSAVE); its exit status."""
        subprocess.run(["redis-cli", "-p", str(self.port), "shutdown", "nosave"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        return self.server.wait()

    def __exit__(self, *_) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                process.kill()
                process.wait()
        shutil.rmtree(self.work, ignore_errors=True)


def stop_counting(xref: subprocess.Popen, bpftrace: subprocess.Popen, bpftrace_output: "LineReader") -> None:
    """Both stop on SIGINT after writing out everything they recorded."""
    xref.send_signal(signal.SIGINT)
    xref.wait()
    bpftrace.send_signal(signal.SIGINT)
    bpftrace_output.read_to_end()
    bpftrace.wait()


def verdict(problems: list[str]) -> int:
    """Prints the first problems and says equal or not: the exit status."""
    for problem in problems[:20]:
        print("wrong:", problem)
    print("equal" if not problems else f"{len(problems)} differences")
    return 0 if not problems else 1


def check_main(run, doc: str, requests: int) -> int:
    """The command line every redis check has: --xref, --redis-server and
    --requests, a skip (77) when a facility is missing, then `run`."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--xref", required=True)
    parser.add_argument("--redis-server", default="/usr/bin/redis-server")
    parser.add_argument("--requests", type=int, default=requests, help="redis-benchmark requests per test")
    options = parser.parse_args()
    missing = missing_facility(options.xref, options.redis_server)
    if missing:
        return missing_status(missing)
    return run(options.xref, options.redis_server, options.requests)


def bpftrace_program(path: str, tid: int) -> str:
    counted = ",\n".join(f"uprobe:{path}:{name}" for name in COUNTED)
    return (f"uprobe:{path}:processCommand /tid == {tid}/ {{ printf(\"S\\n\"); }}\n"
            f"uretprobe:{path}:processCommand /tid == {tid}/ {{ printf(\"E\\n\"); }}\n"
            f"{counted} /tid == {tid}/ {{ printf(\"C %s\\n\", probe); }}\n")


def bpftrace_calls(lines: list[str]) -> list[Counter]:
    """Per processCommand call (S ... E), the entries of each function."""
    calls, current = [], None
    for line in lines:
        if line == "S":
            current = Counter()
        elif line == "E" and current is not None:
            calls.append(current)
            current = None
        elif line.startswith("C ") and current is not None:
            current[line.rsplit(":", 1)[1]] += 1
    return calls


def xref_calls(document: dict) -> list[tuple[str, Counter]]:
    calls = []
    for window in document.get("windows", []):
        counts = Counter(event["symbol"] for event in window["events"]
                         if event["kind"] == "entry" and event.get("depth", 0) > 0)
        loss = window.get("possible_loss") or window.get("lost_events")
        calls.append((window["status"] + (" (events lost)" if loss else ""), counts))
    return calls


def between_markers(calls: list, counts_of) -> list:
    """The calls from the ECHO before the workload to the ECHO after it."""
    echoes = [index for index, call in enumerate(calls) if counts_of(call)["echoCommand"] > 0]
    if len(echoes) < 2:
        raise AssertionError(f"found {len(echoes)} of the two ECHO commands")
    return calls[echoes[0]:echoes[-1] + 1]


PEERS = (("redis-cli", "redis-tools"), ("redis-benchmark", "redis-tools"), ("bpftrace", "bpftrace"))


def missing_facility(xref: str, server: str, programs: tuple = PEERS) -> str | None:
    """What a redis check lacks: redis-server, `programs` (program, Debian
    package), the xref helper, or root for BPF; None when nothing."""
    for program, package in ((server, "redis-server"), *programs):
        if shutil.which(program) is None:
            return f"{program} (Debian package {package})"
    if not os.access(xref, os.X_OK):
        return f"the xref helper ({xref})"
    if os.geteuid() != 0:
        return "BPF (run as root)"
    return None


def run(xref: str, server_path: str, requests: int) -> int:
    with RedisRun(server_path, "xref-realcode-redis-") as redis:
        server, binary = redis.server, redis.binary
        # bpftrace first, proven live by a PING it counts; then xref.
        bpftrace, bpftrace_output = redis.start_bpftrace(bpftrace_program(binary, server.pid), "E")

        trace_path = os.path.join(redis.work, "trace.json")
        tracer = redis.start_xref([xref, "trace", "--pid", str(server.pid), "--start", "processCommand",
                                   "--functions", ",".join(COUNTED), "--json"], trace_path, "xref: tracing PID")
        if tracer is None:
            return 1
        redis.benchmark(requests, "set,get,incr,lpush,lpop", BEGIN, END)
        stop_counting(tracer, bpftrace, bpftrace_output)
        bpftrace_lines = bpftrace_output.lines
        with open(trace_path) as trace_output:
            document = json.load(trace_output)

        seen = between_markers(bpftrace_calls(bpftrace_lines), lambda counts: counts)
        traced = between_markers(xref_calls(document), lambda call: call[1])
        problems = []
        if len(seen) != len(traced):
            problems.append(f"bpftrace saw {len(seen)} processCommand calls, xref {len(traced)} windows")
        for index, (counts, (status, window_counts)) in enumerate(zip(seen, traced)):
            if status != "complete":
                problems.append(f"window {index}: status {status}")
            if counts != window_counts:
                problems.append(f"window {index}: xref counted {dict(window_counts)}, bpftrace {dict(counts)}")
        total = sum(seen, Counter())
        print(f"redis-server {binary}: {len(seen)} processCommand calls between the markers; "
              f"bpftrace counted {dict(total)}")
        if not total["lookupKeyReadOrReply"] or not total["setKey"]:
            problems.append("the workload did not reach lookupKeyReadOrReply and setKey")
        return verdict(problems)


def main() -> int:
    return check_main(run, __doc__, 20)


if __name__ == "__main__":
    sys.exit(main())
