"""xref's windows against bpftrace on a Debian program nobody here wrote.

bpftrace counts the same functions with uprobes, per call of the window's
start function (uprobe to uretprobe on it): each entry with the return
address it will return to. Nesting needs uretprobes on the counted
functions too, and a uretprobe puts its trampoline's address in the return
address's slot, where xref checks whether a frame that can end unseen is
still there; so nesting is measured in a run of its own (bpftrace alone, the
same workload), and the counts in the run xref traces.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable

from check_redis import LineReader, die_with_parent


def counting_program(path: str, pid: int, start: str, counted: list[str]) -> str:
    """S / E around each start call, `C NAME RETURN_ADDRESS` per counted entry."""
    probes = ",\n".join(f"uprobe:{path}:{name}" for name in counted)
    return (f"uprobe:{path}:{start} /pid == {pid}/ {{ @in[tid] = @in[tid] + 1; printf(\"S\\n\"); }}\n"
            f"uretprobe:{path}:{start} /pid == {pid}/ {{ @in[tid] = @in[tid] - 1; printf(\"E\\n\"); }}\n"
            f"{probes} /pid == {pid} && @in[tid]/ {{ printf(\"C %s %lx\\n\", probe, *(uint64 *)reg(\"sp\")); }}\n")


def nesting_program(path: str, pid: int, start: str, counted: list[str]) -> str:
    """S / `E MAX` around each start call: MAX the deepest nesting of the
    counted functions inside it (1 = a counted call directly under it)."""
    entries = ",\n".join(f"uprobe:{path}:{name}" for name in counted)
    returns = ",\n".join(f"uretprobe:{path}:{name}" for name in counted)
    return (f"uprobe:{path}:{start} /pid == {pid} && @in[tid] == 0/ {{ @d[tid] = 0; @max[tid] = 0; }}\n"
            f"uprobe:{path}:{start} /pid == {pid}/ {{ @in[tid] = @in[tid] + 1; printf(\"S\\n\"); }}\n"
            f"uretprobe:{path}:{start} /pid == {pid}/ {{ @in[tid] = @in[tid] - 1; printf(\"E %d\\n\", @max[tid]); }}\n"
            f"{entries} /pid == {pid} && @in[tid]/ {{ @d[tid] = @d[tid] + 1; "
            f"if (@d[tid] > @max[tid]) {{ @max[tid] = @d[tid]; }} }}\n"
            f"{returns} /pid == {pid} && @in[tid]/ {{ @d[tid] = @d[tid] - 1; }}\n")


@dataclass
class PeerCall:
    counts: Counter = field(default_factory=Counter)
    callers: Counter = field(default_factory=Counter)  # (function, return address)
    nesting: int | None = None


def peer_calls(lines: list[str]) -> list[PeerCall]:
    """The outermost start calls (a recursive one is inside its caller's, as
    in xref's window)."""
    calls, current, level = [], None, 0
    for line in lines:
        if line == "S":
            level += 1
            if level == 1:
                current = PeerCall()
        elif line.startswith("E") and current is not None:
            level -= 1
            if level > 0:
                continue
            words = line.split()
            if len(words) == 2:
                current.nesting = int(words[1])
            calls.append(current)
            current = None
        elif line.startswith("C ") and current is not None:
            _, probe, return_address = line.split()
            name = probe.rsplit(":", 1)[1]
            current.counts[name] += 1
            current.callers[(name, int(return_address, 16))] += 1
    return calls


@dataclass
class XrefWindow:
    window_id: int
    status: str
    counts: Counter
    max_depth: int  # the deepest nesting of counted functions (the start's frames not counted)
    tail_entries: list[str]  # entries marked [tail] that follow no tail exit to them
    events: list[dict]


def xref_windows(document: dict) -> list[XrefWindow]:
    windows = []
    for window in document.get("windows", []):
        events = window.get("events", [])
        counts, depth, tails = Counter(), 0, []
        start = events[0].get("symbol") if events else None
        frames: dict[int, str] = {}  # depth -> function, of the frames open
        for index, event in enumerate(events):
            if event.get("kind") != "entry":
                continue
            frames = {level: name for level, name in frames.items() if level < event["depth"]}
            frames[event["depth"]] = event["symbol"]
            # The start's own entries (a recursive call is inside the window)
            # are not counted, nor are they counted nesting.
            if event.get("symbol") == start:
                continue
            counts[event["symbol"]] += 1
            depth = max(depth, sum(1 for level, name in frames.items() if level > 0 and name != start))
            if event.get("tail_call"):
                before = events[index - 1] if index > 0 else {}
                if before.get("kind") != "tail_exit" or before.get("depth") != event.get("depth"):
                    tails.append(f"seq {event.get('seq')} {event['symbol']} at depth {event['depth']}")
        status = window["status"] + (" (events lost)" if window.get("possible_loss") or window.get("lost_events")
                                     else "")
        windows.append(XrefWindow(window.get("window_id"), status, counts, depth, tails, events))
    return windows


def render_window(window: XrefWindow) -> str:
    lines = []
    for event in window.events:
        mark = {"entry": ">", "return": "<", "tail_exit": "< [tail]", "unwound": "< [unwound]"}.get(event["kind"],
                                                                                                  event["kind"])
        flags = (" [tail]" if event.get("tail_call") and event["kind"] == "entry" else "") + \
                (" [inferred]" if event.get("inferred") else "")
        lines.append(f"    {event['depth']:3d} {mark} {event['symbol']}{flags}")
    return "\n".join(lines)


def settled_calls(output) -> int:
    """The start calls bpftrace has reported once its output stops growing
    (a LineReader of its stdout)."""
    while True:
        seen = len(output.lines)
        output.read_available(0.3)
        if len(output.lines) == seen:
            return len(peer_calls(output.lines))


def interrupt(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
    process.wait()


def mapped_path(pid: int, file_name_prefix: str) -> tuple[str, int]:
    """The file a process maps whose name starts with `file_name_prefix`,
    and its load bias (the start of its first mapping)."""
    with open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) >= 6 and os.path.basename(fields[5]).startswith(file_name_prefix):
                return fields[5], int(fields[0].split("-")[0], 16)
    raise RuntimeError(f"process {pid} maps no {file_name_prefix}")


def call_length(code: bytes) -> int | None:
    """The length of the call instruction `code` starts with (`call rel32`,
    or `call r/m64` with an optional REX prefix), None for anything else."""
    at = 0
    if code and 0x40 <= code[0] <= 0x4f:
        at = 1
    if len(code) < at + 2:
        return None
    if code[at] == 0xE8 and at == 0:
        return 5
    if code[at] != 0xFF or (code[at + 1] >> 3) & 7 != 2:
        return None
    modrm = code[at + 1]
    mod, rm = modrm >> 6, modrm & 7
    length = at + 2
    if mod == 3:
        return length
    if rm == 4:
        base = code[length] & 7 if len(code) > length else 0
        length += 1
        if mod == 0 and base == 5:
            length += 4
    elif mod == 0 and rm == 5:
        length += 4
    return length + {0: 0, 1: 1, 2: 4}[mod]


class ReturnAddresses:
    """Where xref's entries return to: the verified call instruction it
    names (call_site_live), plus that instruction's length, read from the
    live process; bpftrace's entries record the return address itself."""

    def __init__(self, pid: int):
        self.pid = pid
        self.known: dict[int, int | None] = {}

    def of(self, event: dict) -> int | None:
        live = event.get("call_site_live")
        if live is None or not event.get("call_site_verified"):
            return None
        site = int(live, 16)
        if site not in self.known:
            try:
                with open(f"/proc/{self.pid}/mem", "rb") as memory:
                    memory.seek(site)
                    length = call_length(memory.read(16))
            except OSError:
                length = None
            self.known[site] = site + length if length else None
        return self.known[site]


def compare(calls: list[PeerCall], windows: list[XrefWindow], nesting: int,
            return_addresses: ReturnAddresses) -> list[str]:
    """Per start call: the same counts, the same callers (return addresses),
    depth within the nesting bpftrace measured, no [tail] entry without a
    tail exit right before it at its depth."""
    problems = []
    if len(calls) != len(windows):
        problems.append(f"bpftrace saw {len(calls)} start calls, xref {len(windows)} windows")
    for index, (call, window) in enumerate(zip(calls, windows)):
        where = f"window {window.window_id} (start call {index})"
        if window.status != "complete":
            problems.append(f"{where}: status {window.status}")
        if call.counts != window.counts:
            problems.append(f"{where}: xref counted {dict(window.counts)}, bpftrace {dict(call.counts)}")
        if window.max_depth > nesting:
            problems.append(f"{where}: depth {window.max_depth}, deeper than the nesting bpftrace measured "
                            f"({nesting}):\n{render_window(window)}")
        if window.tail_entries:
            problems.append(f"{where}: [tail] entries that no tail exit handed a frame to: {window.tail_entries}\n"
                            f"{render_window(window)}")
        # An entry by a tail jump returns where its frame's first entry does.
        callers, frame_returns = Counter(), {}
        for event in window.events:
            if event.get("kind") != "entry":
                continue
            depth = event.get("depth", 0)
            if not event.get("tail_call") or depth not in frame_returns:
                frame_returns[depth] = return_addresses.of(event)
            if event["symbol"] != window.events[0]["symbol"]:
                callers[(event["symbol"], frame_returns[depth])] += 1
        if callers != call.callers:
            problems.append(f"{where}: callers (function, return address) differ: xref "
                            f"{sorted((n, hex(a) if a else '?', c) for (n, a), c in callers.items())}, bpftrace "
                            f"{sorted((n, hex(a), c) for (n, a), c in call.callers.items())}")
    return problems


def start_bpftrace(program: str, poke: Callable[[], None]) -> tuple[subprocess.Popen, LineReader]:
    """bpftrace, once it has reported a start call that `poke` (one unit of
    the workload) caused."""
    bpftrace = subprocess.Popen(["bpftrace", "-B", "line", "-e", program], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, preexec_fn=die_with_parent)
    output = LineReader(bpftrace.stdout.fileno())
    while not any(line.startswith("E") for line in output.lines):
        if bpftrace.poll() is not None:
            raise RuntimeError("bpftrace ended: " + bpftrace.stderr.read().decode())
        poke()
        output.read_available(0.1)
    return bpftrace, output


def measured_nesting(path: str, pid: int, start: str, counted: list[str], poke: Callable[[], None],
                     drive: Callable[[], None]) -> int:
    """The deepest nesting of `counted` inside any call of `start` while
    `drive` runs the workload (bpftrace alone on the process)."""
    bpftrace, output = start_bpftrace(nesting_program(path, pid, start, counted), poke)
    try:
        drive()
    finally:
        interrupt(bpftrace)
    output.read_to_end()
    return max(call.nesting for call in peer_calls(output.lines) if call.nesting is not None)


@dataclass
class TracedRun:
    calls: list[PeerCall]
    windows: list[XrefWindow]
    problems: list[str]


def traced_run(xref: str, path: str, pid: int, start: str, counted: list[str], trace_args: list[str],
               poke: Callable[[], None], drive: Callable[[], None], nesting: int, work: str) -> TracedRun:
    """bpftrace counting, then `xref trace PID trace_args --json`, then the
    workload (`drive`); both stopped, the windows compared with the calls
    bpftrace saw once xref was attached."""
    bpftrace, output = start_bpftrace(counting_program(path, pid, start, counted), poke)
    tracer = None
    try:
        before = settled_calls(output)
        trace_path = os.path.join(work, "trace.json")
        with open(trace_path, "w") as trace_output:
            tracer = subprocess.Popen([xref, "trace", "--pid", str(pid), *trace_args, "--json"], stdout=trace_output,
                                      stderr=subprocess.PIPE, text=True)
        while not tracer.stderr.readline().startswith("xref: tracing PID"):
            if tracer.poll() is not None:
                with open(trace_path) as trace_output:
                    return TracedRun([], [], ["xref did not attach: " + trace_output.read()])
        drive()
        # The last start call may return after its answer went out: stop
        # xref once bpftrace has seen every call end.
        settled_calls(output)
        interrupt(tracer)
        interrupt(bpftrace)
        output.read_to_end()
        with open(trace_path) as trace_output:
            document = json.load(trace_output)
        calls = peer_calls(output.lines)[before:]
        windows = xref_windows(document)
        return TracedRun(calls, windows, compare(calls, windows, nesting, ReturnAddresses(pid)))
    finally:
        for process in (tracer, bpftrace):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()


def summary(run: TracedRun, name: str, start: str, nesting: int) -> str:
    total = sum((call.counts for call in run.calls), start=Counter())
    depth = max((window.max_depth for window in run.windows), default=0)
    tails = sum(1 for window in run.windows for event in window.events
                if event.get("kind") == "entry" and event.get("tail_call"))
    return (f"{name}: {len(run.calls)} {start} calls; bpftrace counted {dict(total)}; nesting measured by bpftrace "
            f"at most {nesting}, xref's deepest window {depth}; [tail] entries {tails}")


def verdict(problems: list[str]) -> int:
    for problem in problems[:10]:
        print("wrong:", problem)
    print("equal" if not problems else f"{len(problems)} differences")
    return 0 if not problems else 1
