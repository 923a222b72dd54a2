#!/usr/bin/env python3
"""Attach time of 10,000 store sites: `xref watch --backend stores` (bench/run_watch.sh).

The target, build/bench/many_stores, has 1,000 functions st_000 .. st_999 of
10 stores each through a pointer into its scratch array, and calls each once
per byte it reads. One run:

  1. a fresh target; none of the 10,000 stores may hold int3 yet;
  2. t0 (CLOCK_MONOTONIC): exec `xref watch --pid P 0xSCRATCH:80000
     --backend stores` (xref_1: `0xSCRATCH:80 --in st_000`, st_000's 10
     stores and the 80 bytes they write: the fixed start-up);
  3. "armed": the JSON's result.armed_ns (the helper's CLOCK_MONOTONIC once
     every uprobe is in and the program records) minus t0; "line": xref
     prints `xref: watching PID ...` (read here from its stderr);
  4. "int3": every store of the scope holds int3 in the target's memory;
  5. one go byte: each store writes scratch once ("workload");
  6. SIGINT; "stop" is SIGINT until xref exited, "whole" exec to exit.

Checked: the stores objdump lists in the scope (10,000, or st_000's 10) are
the writers of the writes xref recorded, each exactly once, with nothing
lost and no unobserved change; stop_reason interrupted. A run that fails its
check exits with status 1: it is not a measurement.

Prints one TSV line: tool, run, armed_ms, line_ms, int3_ms, workload_ms,
stop_ms, whole_ms, uprobes, probed, pruned_static, pruned_stack, functions.

  watch_attach.py --tool xref|xref_1 --run N --xref X --target T --work DIR
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

import probe_attach  # the target's plumbing: file offsets, live addresses, int3 polls, the go byte

FUNCTIONS, STORES = 1000, 10


def fail(message):
    sys.exit(f"watch_attach: {message}; the measurement is invalid")


def store_vas(target):
    """{static VA: function} of every store of st_NNN (a mov to memory through a register)."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", target], check=True, capture_output=True,
                         text=True).stdout
    stores, function = {}, None
    for line in out.splitlines():
        header = re.match(r"^[0-9a-f]+ <(\w+)>:$", line)
        if header:
            function = header.group(1) if re.fullmatch(r"st_\d{3}", header.group(1)) else None
            continue
        fields = line.split("\t")
        if function and len(fields) >= 2 and re.match(r"^\s*[0-9a-f]+:$", fields[0]):
            text = fields[1]
            if text.startswith("mov") and re.search(r",[^,]*\(%r(?!ip)", text):
                stores[int(fields[0].strip().rstrip(":"), 16)] = function
    if len(stores) != FUNCTIONS * STORES:
        fail(f"{target} has {len(stores)} stores through a register in st_NNN, expected {FUNCTIONS * STORES}")
    return stores


class Target(probe_attach.Target):
    """many_stores, as probe_attach's many_functions (the same lines, then its scratch array)."""

    def __init__(self, path):
        super().__init__(path)
        obj = self.process.stdout.readline().split()
        if obj[:2] != ["obj", "scratch"]:
            fail(f"many_stores printed {obj}, expected its obj scratch line")
        self.scratch, self.scratch_size = int(obj[2], 16), int(obj[3])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tool", required=True, choices=["xref", "xref_1"])
    parser.add_argument("--run", required=True)
    parser.add_argument("--xref", required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--work", required=True)
    args = parser.parse_args()
    target_path = os.path.realpath(args.target)
    stores = store_vas(target_path)
    if args.tool == "xref_1":
        stores = {va: f for va, f in stores.items() if f == "st_000"}
    target = Target(target_path)
    offsets = probe_attach.file_offsets(target_path, {hex(va): va for va in stores})
    addresses = probe_attach.live_addresses(target.pid, target_path, list(offsets.values()))
    if target.int3_bytes(addresses):
        fail("a store already holds int3 before the run (a stray probe?)")
    # xref_1 watches st_000's 80 bytes only: the other stores, out of scope,
    # would be unobserved changes of the whole array.
    length = STORES * 8 if args.tool == "xref_1" else target.scratch_size
    argv = [args.xref, "watch", "--pid", str(target.pid), f"{target.scratch:#x}:{length}",
            "--backend", "stores", "--duration-ms", "0", "--max-events", "0", "--json"]
    if args.tool == "xref_1":
        argv += ["--in", "st_000"]
    output_path = os.path.join(args.work, f"attach_{args.tool}.json")
    seen, log = {}, []

    def watch_stderr(stream):
        for line in stream:
            log.append(line)
            if "line" not in seen and line.startswith("xref: watching PID"):
                seen["line"] = time.monotonic_ns()

    with open(output_path, "w") as out:
        t0 = time.monotonic_ns()
        tool = subprocess.Popen(argv, stdout=out, stderr=subprocess.PIPE, text=True)
        reader = threading.Thread(target=watch_stderr, args=(tool.stderr,))
        reader.start()
        int3_at = None
        while int3_at is None or "line" not in seen:
            if tool.poll() is not None:
                reader.join()
                fail(f"xref exited with status {tool.returncode} before it was armed: {''.join(log)}")
            if int3_at is None and target.int3_bytes(addresses) == len(addresses):
                int3_at = time.monotonic_ns()
            time.sleep(0.001)
        go = time.monotonic_ns()
        target.call_each_once()
        interrupt = time.monotonic_ns()
        tool.send_signal(signal.SIGINT)
        tool.wait()
        exited = time.monotonic_ns()
        reader.join()
    target.close()
    if tool.returncode != 0:
        fail(f"xref exited with status {tool.returncode}: {''.join(log)}")
    result = json.load(open(output_path))["result"]
    if result["stop_reason"] != "interrupted":
        fail(f"xref stopped on {result['stop_reason']}, expected interrupted")
    if result["lost"] or result["in_flight_full"] or result["unobserved_changes"]:
        fail(f"xref lost {result['lost']}, in flight full {result['in_flight_full']}, "
             f"unobserved {len(result['unobserved_changes'])}")
    writers = {}
    for write in result["writes"]:
        va = int(write["writer"]["static_va"], 16)
        writers[va] = writers.get(va, 0) + 1
    if writers != {va: 1 for va in stores}:
        missing = [hex(va) for va in stores if writers.get(va) != 1][:5]
        fail(f"xref recorded {len(result['writes'])} writes from {len(writers)} stores, expected one from each of "
             f"{len(stores)} (e.g. {missing})")
    sites = result["sites"]
    ms = lambda ns: f"{ns / 1e6:.1f}"
    row = [args.tool, args.run, ms(result["armed_ns"] - t0), ms(seen["line"] - t0), ms(int3_at - t0),
           ms(interrupt - go), ms(exited - interrupt), ms(exited - t0), str(sites["uprobes"]), str(sites["probed"]),
           str(sites["pruned_static"]), str(sites["pruned_stack"]), str(sites["functions"])]
    print("\t".join(row), flush=True)
    print("bench: attach " + " ".join(row), file=sys.stderr)


if __name__ == "__main__":
    main()
