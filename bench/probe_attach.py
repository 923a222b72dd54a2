#!/usr/bin/env python3
"""Attach time of 1,000 addresses: `xref probe` and bpftrace (bench/run_probe.sh).

The target, build/bench/many_functions, has 1,000 small functions fn_000 ..
fn_999 and calls each once per byte it reads. One run of a tool:

  1. a fresh target; no function entry may hold int3 yet;
  2. t0: exec the tool with probes on all 1,000 entries (by name);
  3. "armed": xref prints `xref: probing PID ...` once every probe is
     attached and counting (bpftrace prints nothing then: its `Attaching
     1000 probes...` comes before it attaches, and is timed as `announced`);
  4. "int3": every one of the 1,000 entries holds int3 in the target's memory
     (read through /proc/PID/mem), the same signal for both tools;
  5. one go byte: the target calls each function once ("workload");
  6. SIGINT; "exit": the tool has detached, printed and exited.

Checked: xref's JSON has 1,000 addresses, each with 1 hit, each probed at its
symbol's address (no endbr64 moved it: bpftrace probes that address too),
stop_reason interrupted; bpftrace's @[probe] map has 1,000 keys of 1. A run
that fails its check exits with status 1: it is not a measurement.
"xref_1" is xref probe on fn_000 alone: its start-up cost, which does not
grow with the number of addresses.

One invocation is one run (bench/run_probe.sh rotates them, each under its
LOCK): it prints one TSV line: tool, run, announced_ms, armed_ms, int3_ms,
workload_ms, stop_ms (SIGINT to exit), whole_ms (exec to exit), backend.
A figure a tool does not have is "-".

  probe_attach.py --tool xref|xref_1|bpftrace --run N --xref X --target T --work DIR
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time


def fail(message):
    sys.exit(f"probe_attach: {message}; the measurement is invalid")


def now_ms():
    return time.monotonic_ns() / 1e6


def functions_of(target):
    """{name: static VA} of fn_000 .. fn_999, from nm."""
    out = subprocess.run(["nm", target], check=True, capture_output=True, text=True).stdout
    found = {}
    for line in out.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[1] in "tT" and re.fullmatch(r"fn_\d{3}", fields[2]):
            found[fields[2]] = int(fields[0], 16)
    if len(found) != 1000:
        fail(f"{target} has {len(found)} functions fn_NNN, expected 1000")
    return dict(sorted(found.items()))


def file_offsets(target, vas):
    """Static VA -> file offset, through the PT_LOAD segment that holds it."""
    out = subprocess.run(["readelf", "-lW", target], check=True, capture_output=True, text=True).stdout
    loads = [(int(f[1], 16), int(f[2], 16), int(f[4], 16))
             for f in (line.split() for line in out.splitlines()) if f and f[0] == "LOAD"]
    offsets = {}
    for name, va in vas.items():
        for offset, vaddr, filesz in loads:
            if vaddr <= va < vaddr + filesz:
                offsets[name] = va - vaddr + offset
                break
        else:
            fail(f"{name} at {va:#x} is in no PT_LOAD segment")
    return offsets


def live_addresses(pid, target, offsets):
    """File offset -> address in the process, from /proc/PID/maps."""
    maps = []
    with open(f"/proc/{pid}/maps") as lines:
        for line in lines:
            fields = line.split()
            if len(fields) >= 6 and fields[5] == target:
                start, end = (int(x, 16) for x in fields[0].split("-"))
                maps.append((start, end, int(fields[2], 16)))
    live = []
    for offset in offsets:
        for start, end, map_offset in maps:
            if map_offset <= offset < map_offset + end - start:
                live.append(start + offset - map_offset)
                break
        else:
            fail(f"file offset {offset:#x} of {target} is not mapped in {pid}")
    return live


class Target:
    def __init__(self, path):
        self.process = subprocess.Popen([path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        ready = self.process.stdout.readline().split()
        functions = self.process.stdout.readline().split()
        if ready[:1] != ["ready"] or functions != ["functions", "1000"]:
            fail(f"many_functions printed {ready} {functions}")
        self.pid = int(ready[1])
        self.mem = os.open(f"/proc/{self.pid}/mem", os.O_RDONLY)

    def int3_bytes(self, addresses):
        """How many of addresses hold int3, from one read of the span that holds them all."""
        low = min(addresses)
        span = os.pread(self.mem, max(addresses) + 1 - low, low)
        return sum(span[a - low] == 0xCC for a in addresses)

    def all_int3(self, addresses):
        return self.int3_bytes(addresses) == len(addresses)

    def call_each_once(self):
        self.process.stdin.write("g")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line.startswith("called 1 "):
            fail(f"many_functions printed {line!r} after its go byte")

    def close(self):
        os.close(self.mem)
        self.process.stdin.close()
        if self.process.wait() != 0:
            fail(f"many_functions exited with status {self.process.returncode}")


def watch_lines(stream, patterns, seen, log):
    """Time (ms) of the first line starting with each pattern -> seen[pattern]; keeps every line."""
    for line in stream:
        log.append(line)
        for pattern in patterns:
            if pattern and pattern not in seen and line.startswith(pattern):
                seen[pattern] = now_ms()


def one_run(tool, argv, env, target, addresses, output_path, armed_line, announced_line):
    """Times one run of argv against target; returns its figures (ms).

    xref's stdout (the JSON) goes to output_path and its stderr is watched;
    bpftrace prints everything, its "Attaching" line and its maps, on stdout:
    both streams are watched and then written to output_path."""
    if target.int3_bytes(addresses):
        fail("a function entry already holds int3 before the run (a stray probe?)")
    seen, log = {}, []
    json_out = tool.startswith("xref")
    with open(output_path, "w") as out:
        t0 = now_ms()
        tool_process = subprocess.Popen(argv, env=env, text=True, stdout=out if json_out else subprocess.PIPE,
                                        stderr=subprocess.PIPE if json_out else subprocess.STDOUT)
        watched = tool_process.stderr if json_out else tool_process.stdout
        reader = threading.Thread(target=watch_lines, args=(watched, [armed_line, announced_line], seen, log))
        reader.start()
        # One pread of the span that holds every entry per poll: the poll
        # sees the last int3 at most one poll interval (0.5 ms) and one read
        # late, and costs the tool little CPU.
        int3_at, polls = None, 0
        while int3_at is None or (armed_line and armed_line not in seen):
            if tool_process.poll() is not None:
                reader.join()
                fail(f"{tool} exited with status {tool_process.returncode} before it was armed: {''.join(log)}")
            if int3_at is None and target.all_int3(addresses):
                int3_at = now_ms()
            polls += 1
            if polls % 20000 == 0:
                print(f"probe_attach: still waiting for {tool} to arm the entries", file=sys.stderr)
            time.sleep(0.0005)
        go = now_ms()
        target.call_each_once()
        interrupt = now_ms()
        tool_process.send_signal(signal.SIGINT)
        # bpftrace 0.17 can miss a SIGINT (bench/lib.sh, stop_bpftrace): repeat
        # it while every probe is still in, for bpftrace only. Once it has
        # begun to detach it took the first one, and a second would kill it
        # while it prints its maps; a second makes xref give up its output.
        while True:
            try:
                tool_process.wait(timeout=1.0)
                break
            except subprocess.TimeoutExpired:
                if tool == "bpftrace" and target.all_int3(addresses):
                    tool_process.send_signal(signal.SIGINT)
        exited = now_ms()
        reader.join()
        if not json_out:
            out.write("".join(log))
    if tool_process.returncode != 0:
        fail(f"{tool} exited with status {tool_process.returncode}: {''.join(log)}")
    return {
        "announced": seen[announced_line] - t0 if announced_line in seen else None,
        "armed": seen[armed_line] - t0 if armed_line else None,
        "int3": int3_at - t0,
        "workload": interrupt - go,
        "stop": exited - interrupt,
        "whole": exited - t0,
    }


def check_xref(path, vas):
    document = json.load(open(path))
    summary = document["summary"]
    addresses = document["addresses"]
    if summary["stop_reason"] != "interrupted":
        fail(f"xref stopped on {summary['stop_reason']}, expected interrupted")
    if len(addresses) != len(vas) or summary["hits"] != len(vas):
        fail(f"xref counted {summary['hits']} hits at {len(addresses)} addresses, expected {len(vas)} at {len(vas)}")
    for address in addresses:
        want = vas.get(address.get("function"))
        if address["hits"] != 1:
            fail(f"xref counted {address['hits']} hits at {address['function']}, expected 1")
        if want is None or int(address["probe_va"], 16) != want or int(address["static_va"], 16) != want:
            fail(f"xref probed {address['function']} at {address['probe_va']}, not its symbol's address")
    return document["backend"]


def check_bpftrace(path, names):
    counts = {}
    for line in open(path):
        match = re.match(r"@\[uprobe:.*:(fn_\d{3})\]: (\d+)$", line.strip())
        if match:
            counts[match.group(1)] = int(match.group(2))
    wrong = {name: counts.get(name, 0) for name in names if counts.get(name) != 1}
    if wrong:
        sample = dict(list(wrong.items())[:5])
        fail(f"bpftrace counted {len(wrong)} functions other than once, e.g. {sample}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tool", required=True, choices=["xref", "xref_1", "bpftrace"])
    parser.add_argument("--run", required=True)
    parser.add_argument("--xref", required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    tool = args.tool
    target_path = os.path.realpath(args.target)

    vas = functions_of(target_path)
    names = list(vas)
    probed = names[:1] if tool == "xref_1" else names
    offsets = file_offsets(target_path, vas)
    target = Target(target_path)
    addresses = live_addresses(target.pid, target_path, [offsets[name] for name in probed])
    output_path = os.path.join(args.work, f"attach_{tool}.out")
    if tool.startswith("xref"):
        argv = [args.xref, "probe", "--pid", str(target.pid), *probed, "--count", "--duration-ms", "0", "--json"]
        armed, announced, env = "xref: probing PID", None, None
    else:
        program = os.path.join(args.work, "many.bt")
        with open(program, "w") as text:
            text.write(",\n".join(f"uprobe:{target_path}:{name}" for name in names) + "\n{ @[probe] = count(); }\n")
        argv = ["bpftrace", "-p", str(target.pid), program]
        armed, announced = None, f"Attaching {len(names)} probes..."
        # It loads one BPF program per attach point, and refuses more than
        # 512 programs or probes unless told.
        limit = str(len(names) + 16)
        env = dict(os.environ, BPFTRACE_MAX_BPF_PROGS=limit, BPFTRACE_MAX_PROBES=limit)
    figures = one_run(tool, argv, env, target, addresses, output_path, armed, announced)
    target.close()
    if tool.startswith("xref"):
        backend = check_xref(output_path, {name: vas[name] for name in probed})
    else:
        check_bpftrace(output_path, names)
        backend = "a perf uprobe per address"
    fields = ["announced", "armed", "int3", "workload", "stop", "whole"]
    row = [tool, args.run] + ["-" if figures[k] is None else f"{figures[k]:.1f}" for k in fields] + [backend]
    print("\t".join(row), flush=True)
    print("bench: attach " + ", ".join(f"{k} {v}" for k, v in zip(["tool", "run"] + fields + ["backend"], row)),
          file=sys.stderr)

if __name__ == "__main__":
    main()
