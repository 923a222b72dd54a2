#!/usr/bin/env python3
"""xref probe on libc's string functions, whatever implementation this CPU
binds (on AVX-512 hosts glibc's *_evex ones, which Debian's Capstone 4
cannot decode), against bpftrace on the same run and the target's own count.

  check_libc_probe.py --xref XREF --target LIBC_CALLS [--calls N]

libc_calls.c calls strlen, strcmp, memset, strchr, memcmp, memcpy, malloc
and free N times each and says which live address each call reaches. xref
probes them by the names a user types (`libc.so.6:strlen`, ...) and
bpftrace counts uprobes on the very addresses the target named; both
attach before the calls and count until the target exits. Each count must
be N on both sides, and xref must name every function as it was typed
(`malloc`, not its alias `__libc_malloc`), in JSON and in text.

Exit status 0 equal, 1 not, 77 (skip) when bpftrace or BPF is missing and
XREF_REQUIRE_BPF is not 1.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from check_redis import LineReader, die_with_parent, verdict  # noqa: E402
from realcode.facility import missing_status  # noqa: E402

FUNCTIONS = ["strlen", "strcmp", "memset", "strchr", "memcmp", "memcpy", "malloc", "free"]


def libc_mapping(pid: int) -> tuple[str, int, int]:
    """libc's path, load base and end in the process, from /proc/PID/maps."""
    path, base, end = "", None, 0
    with open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) < 6 or not os.path.basename(fields[5]).startswith("libc.so"):
                continue
            start, stop = (int(value, 16) for value in fields[0].split("-"))
            if int(fields[2], 16) == 0 and base is None:
                path, base = fields[5], start
            end = max(end, stop)
    if base is None:
        raise AssertionError(f"no libc mapping in /proc/{pid}/maps")
    return path, base, end


def implementation_names(path: str, static_vas: set[int]) -> dict[int, list[str]]:
    """The names nm gives each address, from libc's debug file when Debian's
    libc6-dbg is there (else its .dynsym): __strlen_evex, __libc_malloc ..."""
    build_id = ""
    notes = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    for line in notes.splitlines():
        if "Build ID:" in line:
            build_id = line.split("Build ID:")[1].strip()
    debug = f"/usr/lib/debug/.build-id/{build_id[:2]}/{build_id[2:]}.debug"
    listing = subprocess.run(["nm", debug] if build_id and os.path.exists(debug) else ["nm", "-D", path],
                             capture_output=True, text=True).stdout
    names: dict[int, list[str]] = {}
    for line in listing.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[1] in "Tti" and int(fields[0], 16) in static_vas:
            names.setdefault(int(fields[0], 16), []).append(fields[2])
    return names


def entry_probe_va(libc: str, static_va: int) -> int:
    """Where a uprobe may count a function's calls, by objdump: its first
    instruction, or the next one when the first is EVEX-encoded (AVX-512,
    first byte 0x62 after any legacy prefix), which kernel 6.18 runs wrongly
    out of line (a uprobe there makes __strchr_evex return wrong results,
    in every process of the host when the uprobe has no pid: bpftrace's)."""
    listing = subprocess.run(["objdump", "-d", f"--start-address={static_va:#x}",
                              f"--stop-address={static_va + 32:#x}", libc],
                             capture_output=True, text=True, check=True).stdout
    instructions = []
    for line in listing.splitlines():
        fields = line.split("\t")
        if len(fields) >= 2 and fields[0].strip().endswith(":"):
            instructions.append((int(fields[0].strip()[:-1], 16), fields[1].split()))
    first_bytes = [byte for byte in instructions[0][1] if byte not in ("66", "67", "f2", "f3", "64", "65")]
    return instructions[1][0] if first_bytes and first_bytes[0] == "62" else instructions[0][0]


def bpftrace_program(libc: str, pid: int, static_va: int) -> str:
    """A ping (getppid) proves bpftrace live; every hit of the bound code is counted."""
    return (f"tracepoint:syscalls:sys_enter_getppid /pid == {pid}/ {{ printf(\"live\\n\"); }}\n"
            f"uprobe:{libc}:{hex(static_va)} /pid == {pid}/ {{ @hits[probe] = count(); }}\n")


def bpftrace_counts(lines: list[str]) -> dict[int, int]:
    """@hits[uprobe:PATH:VA]: N (VA in decimal), as bpftrace prints its maps at exit."""
    counts = {}
    for line in lines:
        if line.startswith("@hits[") and "]: " in line:
            probe, value = line[len("@hits["):].split("]: ")
            counts[int(probe.rsplit(":", 1)[1], 0)] = int(value)
    return counts


def start_bpftrace(program: str, target: "Target", helpers: list) -> tuple | str:
    """bpftrace running `program`, live once it has seen a ping; a start
    that bpftrace itself gives up on ("Could not resolve symbol", seen now
    and then under load) is tried again, up to three times."""
    errors = []
    for _ in range(3):
        bpftrace = subprocess.Popen(["bpftrace", "-B", "line", "-e", program], stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, preexec_fn=die_with_parent)
        helpers.append(bpftrace)
        output = LineReader(bpftrace.stdout.fileno())
        # No ping before bpftrace says it attaches: a ping while it resolves
        # its probes makes bpftrace 0.17 fail to ("Could not resolve symbol").
        while not any(line.startswith("Attaching") for line in output.lines) and bpftrace.poll() is None:
            output.read_available(0.5)
        while "live" not in output.lines and bpftrace.poll() is None:
            target.ask("ping", "pong")
            output.read_available(0.2)
        if "live" in output.lines:
            return bpftrace, output
        errors.append(bpftrace.stderr.read().decode().strip())
    return "bpftrace ended: " + " / ".join(errors)


class Target:
    """libc_calls, its addresses read; killed at the end if still running."""

    def __init__(self, path: str):
        self.process = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        preexec_fn=die_with_parent)
        self.output = LineReader(self.process.stdout.fileno())
        self.live: dict[str, int] = {}
        while "ready" not in self.output.lines:
            if self.process.poll() is not None:
                raise AssertionError(f"libc_calls exited with status {self.process.returncode}")
            self.output.read_available(1.0)
        for line in self.output.lines:
            if line != "ready":
                name, address = line.split()
                self.live[name] = int(address, 16)
        self.output.lines.clear()

    def ask(self, line: str, answer: str) -> None:
        self.process.stdin.write((line + "\n").encode())
        self.process.stdin.flush()
        while answer not in self.output.lines:
            if self.process.poll() is not None:
                raise AssertionError(f"libc_calls exited with status {self.process.returncode}")
            self.output.read_available(1.0)
        self.output.lines.remove(answer)

    def finish(self) -> int:
        self.process.stdin.close()
        return self.process.wait()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def typed(name: str) -> str:
    return "libc.so.6:" + name


def check_text_spelling(xref: str, pid: int, problems: list[str]) -> None:
    """The text table names each address as typed (the target is idle: no hits)."""
    result = subprocess.run([xref, "probe", "--pid", str(pid), typed("malloc"), typed("strlen"), "--duration-ms", "100"],
                            capture_output=True, text=True)
    if result.returncode != 0:
        problems.append(f"xref probe (text) exited {result.returncode}: {result.stderr.strip()}")
        return
    # A row: the name as typed, then the function when its name is another
    # alias ("  __strlen_evex at FILE:LINE"), else " at FILE:LINE" at once.
    rows = [re.split(r"  | at ", line.strip())[0] for line in result.stdout.splitlines()
            if line.strip().startswith("libc.so.6:")]
    if rows != [typed("malloc"), typed("strlen")]:
        problems.append(f"the text names {rows}, not as typed: {result.stdout!r}")


def count_round(xref: str, target: "Target", libc: str, pid: int, calls: int, functions: list[str],
                static_vas: dict[str, int], work: str, helpers: list) -> tuple | str:
    """bpftrace and xref on `functions`, then `calls` calls of each: bpftrace's
    counts by static VA and xref's document, or why not."""
    counters = []
    for name in functions:
        # bpftrace 0.17 attaches only at a symbol's start, and a uprobe on an
        # EVEX entry corrupts every process of the host: there the target's
        # own count is the only truth.
        if entry_probe_va(libc, static_vas[name]) != static_vas[name]:
            continue
        counter = start_bpftrace(bpftrace_program(libc, pid, static_vas[name]), target, helpers)
        if isinstance(counter, str):
            return counter
        counters.append(counter)
    result_path = os.path.join(work, "probe.json")
    with open(result_path, "w") as result:
        prober = subprocess.Popen([xref, "probe", "--pid", str(pid), *map(typed, functions), "--duration-ms", "0",
                                   "--json"], stdout=result, stderr=subprocess.PIPE, text=True)
    helpers.append(prober)
    errors = []
    while not any(line.startswith("xref: probing PID") for line in errors):
        line = prober.stderr.readline()
        if not line:
            prober.wait()
            return f"xref probe did not attach (status {prober.returncode}): {''.join(errors)}"
        errors.append(line)
    target.ask(f"go {calls}", "did")
    prober.send_signal(signal.SIGINT)  # it writes its document and detaches
    prober.wait()
    errors += prober.stderr.readlines()
    if prober.returncode != 0:
        return f"xref probe exited with status {prober.returncode}: {''.join(errors)}"
    seen = {}
    for bpftrace, output in counters:
        bpftrace.send_signal(signal.SIGINT)
        output.read_to_end()
        bpftrace.wait()
        seen.update(bpftrace_counts(output.lines))
    with open(result_path) as result:
        return seen, json.load(result)


def run(xref: str, target_path: str, calls: int) -> int:
    problems: list[str] = []
    work = tempfile.mkdtemp(prefix="xref-libc-probe-")
    target = Target(target_path)
    helpers: list[subprocess.Popen] = []
    try:
        pid = target.process.pid
        libc, base, end = libc_mapping(pid)
        static_vas = {}
        for name in FUNCTIONS:
            live = target.live[name]
            if not base <= live < end:
                problems.append(f"{name} reaches {hex(live)}, outside libc [{hex(base)}, {hex(end)})")
            static_vas[name] = live - base
        if problems:
            return verdict(problems)
        names = implementation_names(libc, set(static_vas.values()))
        print("bound here:", ", ".join(f"{name} -> {'/'.join(names.get(static_vas[name], ['?']))} "
                                       f"({hex(static_vas[name])})" for name in FUNCTIONS))
        check_text_spelling(xref, pid, problems)

        # Two rounds of four functions: in each, one bpftrace per address
        # (live once it sees a ping), then xref (attached once it says so),
        # then "go": both count the same calls. (bpftrace 0.17 fails to
        # resolve some of libc's local symbols, "Could not resolve symbol",
        # when one program names several, and a fifth bpftrace beside four
        # fails to start here.)
        seen, counted = {}, {}
        for round_functions in (FUNCTIONS[:4], FUNCTIONS[4:]):
            outcome = count_round(xref, target, libc, pid, calls, round_functions, static_vas, work, helpers)
            if isinstance(outcome, str):
                return verdict([outcome])
            round_seen, document = outcome
            seen.update(round_seen)
            if not document["summary"]["complete"]:
                problems.append(f"xref's result is not complete: {document['summary']}")
            counted.update({address["address"]: address for address in document["addresses"]})
        status = target.finish()
        if status != 0:
            problems.append(f"libc_calls exited with status {status}")

        for name in FUNCTIONS:
            address = counted.get(typed(name))
            if address is None:
                problems.append(f"xref has no row for {typed(name)}")
                continue
            if int(address["static_va"], 16) != static_vas[name]:
                problems.append(f"{name}: xref probed {address['static_va']}, the target's call reaches "
                                f"{hex(static_vas[name])}")
            if address["function"] != name or address["location"] != typed(name):
                problems.append(f"{name}: xref names it {address['function']!r} at {address['location']!r}, "
                                f"not as typed")
            probe_va = entry_probe_va(libc, static_vas[name])
            if int(address["probe_va"], 16) != probe_va:
                problems.append(f"{name}: xref's uprobe went to {address['probe_va']}, not {hex(probe_va)}")
            peer = seen.get(probe_va) if probe_va == static_vas[name] else calls  # no bpftrace there: see count_round
            if address["hits"] != peer or address["hits"] != calls:
                problems.append(f"{name}: xref counted {address['hits']}, bpftrace {seen.get(probe_va)}, "
                                f"the target called it {calls} times")
        print(f"{calls} calls each: xref counted "
              f"{ {name: counted[typed(name)]['hits'] for name in FUNCTIONS if typed(name) in counted} }, "
              f"bpftrace { {name: seen.get(static_vas[name], 'no safe uprobe') for name in FUNCTIONS} }")
        return verdict(problems)
    finally:
        target.kill()
        for helper in helpers:
            if helper.poll() is None:
                helper.kill()
                helper.wait()
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--xref", required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--calls", type=int, default=3000)
    options = parser.parse_args()
    if not shutil.which("bpftrace"):
        return missing_status("bpftrace")
    if os.geteuid() != 0:
        return missing_status("root (BPF uprobes)")
    return run(options.xref, options.target, options.calls)


if __name__ == "__main__":
    sys.exit(main())
