#!/usr/bin/env python3
"""Time to attach against module size (issue 12, "large binaries").

For each module of a live process, from the executable to libLLVM (129 MB),
measures:
  - xref trace with 5 functions of that module: wall time from exec until
    xref says it is tracing (everything before the first event can be seen:
    reading the module, planning, loading the BPF program, attaching), and
    the helper's peak RSS;
  - xref trace --callees-of one function --depth 3 in that module, the same;
  - bpftrace with uprobes on the same 5 functions and `BEGIN { exit() }`:
    its whole run (start-up, attach, detach), the peer.
Median of --rounds runs each, printed as a markdown table.

  module_attach.py --xref build/helper/xref [--rounds 5]
"""
import argparse
import ctypes
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

# A process that maps every module measured: python3 (the executable),
# libc, libstdc++ (pulled in by libLLVM) and libLLVM itself.
TARGET_SCRIPT = "import ctypes, sys, time; ctypes.CDLL('libLLVM.so.19.1'); print('ready', flush=True); time.sleep(3600)"

# module (as `xref maps` names it) -> five exported functions, and the
# root of the --callees-of tree.
MODULES = [
    ("libc.so.6", ["getpid", "getppid", "malloc", "free", "calloc"], "qsort"),
    ("libstdc++.so.6", ["__cxa_begin_catch", "__cxa_end_catch", "__cxa_allocate_exception",
                        "__cxa_free_exception", "__cxa_throw"], "__cxa_throw"),
    ("libLLVM.so.19.1", ["LLVMContextCreate", "LLVMContextDispose", "LLVMModuleCreateWithName",
                         "LLVMDisposeModule", "LLVMGetModuleIdentifier"], "LLVMModuleCreateWithNameInContext"),
]


def module_path(pid, name):
    """The mapped file whose name is `name` or starts with it (libstdc++.so.6.0.30)."""
    with open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) >= 6 and os.path.basename(fields[5]).startswith(name):
                return fields[5]
    sys.exit(f"module_attach: {name} is not mapped in the target")


def run_until_tracing(argv):
    """Seconds until xref prints its 'tracing PID' line, and its peak RSS (KiB)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.monotonic()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    attached = None
    for line in process.stderr:
        if "tracing PID" in line and attached is None:
            attached = time.monotonic() - start
    process.wait()
    if process.returncode != 0 or attached is None:
        sys.exit(f"module_attach: {' '.join(argv)} failed (exit {process.returncode})")
    # ru_maxrss of children is the largest child so far: run each measurement
    # in a fresh fork so it is this run's own.
    return attached, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, before


def measured(argv):
    """(seconds to attach, peak RSS in KiB) of one run, in a child of its own."""
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(read)
        attached, rss, _ = run_until_tracing(argv)
        os.write(write, f"{attached} {rss}".encode())
        os._exit(0)
    os.close(write)
    data = os.read(read, 100).decode().split()
    os.waitpid(child, 0)
    return float(data[0]), int(data[1])


def bpftrace_seconds(path, functions):
    probes = ",".join(f"uprobe:\"{path}\":{function}" for function in functions)
    start = time.monotonic()
    subprocess.run(["bpftrace", "-e", f"{probes} {{ }} BEGIN {{ exit(); }}"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--xref", required=True)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    target = subprocess.Popen([sys.executable, "-c", TARGET_SCRIPT], stdout=subprocess.PIPE, text=True)
    try:
        target.stdout.readline()
        pid = str(target.pid)
        print("| module | size | 5 functions: attach | peak RSS | `--callees-of --depth 3`: attach | peak RSS "
              "| bpftrace, 5 uprobes (whole run) | xref / bpftrace |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for name, functions, root in MODULES:
            path = module_path(target.pid, name)
            name = os.path.basename(path)  # as `xref maps` names it
            size_mb = os.path.getsize(path) / 1e6
            five = ["--start", f"{name}:{functions[0]}", "--functions", ",".join(f"{name}:{f}" for f in functions[1:])]
            tree = ["--start", f"{name}:{root}", "--callees-of", f"{name}:{root}", "--depth", "3"]
            rows = {"five": [], "tree": [], "bpftrace": []}
            for _ in range(args.rounds):
                rows["five"].append(measured([args.xref, "trace", "--pid", pid, *five, "--duration-ms", "1"]))
                rows["tree"].append(measured([args.xref, "trace", "--pid", pid, *tree, "--duration-ms", "1"]))
                if shutil.which("bpftrace"):
                    rows["bpftrace"].append(bpftrace_seconds(path, functions))
            five_s = statistics.median(r[0] for r in rows["five"])
            five_rss = statistics.median(r[1] for r in rows["five"])
            tree_s = statistics.median(r[0] for r in rows["tree"])
            tree_rss = statistics.median(r[1] for r in rows["tree"])
            peer = statistics.median(rows["bpftrace"]) if rows["bpftrace"] else float("nan")
            print(f"| {name} | {size_mb:.1f} MB | {five_s * 1000:.0f} ms | {five_rss / 1024:.0f} MB "
                  f"| {tree_s * 1000:.0f} ms | {tree_rss / 1024:.0f} MB | {peer * 1000:.0f} ms | {five_s / peer:.2f}x |")
    finally:
        target.kill()


if __name__ == "__main__":
    main()
