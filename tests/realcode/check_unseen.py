#!/usr/bin/env python3
"""Frames that end where no probe sees them (issue 23), against rc_unseen's
own record.

  check_unseen.py --xref XREF --binary BUILD [--backend auto|tracefs] [--requests N]

First checks with objdump that the build has what the test is about: `lock`
and `unlock` end in `jmp *` (through the table of function pointers),
`palloc` jumps to `palloc_large`, `chain_link` jumps to `palloc`, and the
callers call them. Then traces `--start serve --functions` every function
the program records, on two threads, and compares each window with what the
program recorded in that request:

  > NAME D      an entry at depth D
  < NAME D      a return at depth D
  ~ NAME D T    NAME hands its frame to untraced T: through a pointer
                (enter_impl, leave_impl) no probe sees the jump, so the
                frame's end is shown at the next event, `< NAME [inferred]`;
                by a direct jump, `< NAME [tail]` at the jump

Every window must be complete, lose nothing, and equal the record event for
event (kind, depth, function, tail, inferred), on either backend: a frame
left through a pointer ends where its caller runs again (the probe on the
return site of the call), which tracefs sees as the BPF program does.

Exit status 0 equal, 1 not, 77 (skip) when BPF or xref is missing and
XREF_REQUIRE_BPF is not 1.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from realcode.facility import missing_status  # noqa: E402
from realcode.xref_run import run_traced  # noqa: E402

TRACED = ["serve", "locked", "locked_deep", "tail_return", "stale_slot", "lock", "unlock", "small", "palloc"]
POINTER_TARGETS = {"enter_impl", "leave_impl"}
IDIOMS = ["pointer_tail", "pointer_tail_deep", "tail_return", "stale_slot"]

Event = tuple[str, int, str, bool, bool]  # kind, depth, function, tail_call, inferred


def disassembly(binary: str) -> dict[str, list[str]]:
    """objdump -d: each function's instructions, by name."""
    text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", binary], check=True, capture_output=True,
                          text=True).stdout
    functions: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        header = re.match(r"^[0-9a-f]+ <([^>]+)>:$", line)
        if header:
            current = functions.setdefault(header.group(1), [])
        elif current is not None and re.match(r"^\s+[0-9a-f]+:\t", line):
            current.append(line.split("\t", 1)[1].strip())
    return functions


def codegen_problems(binary: str) -> list[str]:
    """What the build must have for the test to test anything."""
    code = disassembly(binary)
    wanted = [
        ("lock", r"^jmp\s+\*", "a jump through a pointer"),
        ("unlock", r"^jmp\s+\*", "a jump through a pointer"),
        ("palloc", r"^jmp\s+[0-9a-f]+ <palloc_large>$", "jmp palloc_large"),
        ("chain_link", r"^jmp\s+[0-9a-f]+ <palloc>$", "jmp palloc"),
        ("locked", r"^call\s+[0-9a-f]+ <lock>$", "call lock"),
        ("locked_deep", r"^call\s+[0-9a-f]+ <helper>$", "call helper"),
        ("helper", r"^call\s+[0-9a-f]+ <small>$", "call small"),
        ("tail_return", r"^call\s+[0-9a-f]+ <chain_link>$", "call chain_link"),
        ("release", r"^call\s+[0-9a-f]+ <unlock>$", "call unlock"),
        ("wide", r"^call\s+[0-9a-f]+ <small>$", "call small"),
        ("stale_slot", r"^call\s+[0-9a-f]+ <wide>$", "call wide"),
    ]
    problems = []
    for function, pattern, what in wanted:
        if not any(re.search(pattern, instruction) for instruction in code.get(function, [])):
            problems.append(f"{function} has no {what} in {os.path.basename(binary)}")
    for function in ("lock", "unlock"):
        if any(re.match(r"^(call|ret)", instruction) for instruction in code.get(function, [])):
            problems.append(f"{function} calls or returns itself: its frame would not end unseen")
    return problems


def static_va(binary: str, name: str) -> int:
    for line in subprocess.run(["nm", binary], check=True, capture_output=True, text=True).stdout.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[2] == name:
            return int(fields[0], 16)
    raise RuntimeError(f"nm finds no {name} in {binary}")


def recorded_requests(record: str) -> dict[int, tuple[str, list[Event]]]:
    """Per request: its idiom and the window a correct xref shows."""
    requests: dict[int, tuple[str, list[Event]]] = {}
    events: dict[int, list[Event]] = defaultdict(list)
    idioms: dict[int, str] = {}
    for line in record.splitlines():
        fields = line.split()
        if len(fields) < 5:
            continue
        request, kind, name, depth = int(fields[1]), fields[2], fields[3], int(fields[4])
        if kind == "@":
            idioms[request] = name
        elif kind == ">":
            events[request].append(("entry", depth, name, False, False))
        elif kind == "<":
            events[request].append(("return", depth, name, False, False))
        elif kind == "~" and fields[5] in POINTER_TARGETS:
            events[request].append(("return", depth, name, False, True))
        elif kind == "~":
            events[request].append(("tail_exit", depth, name, True, False))
        else:
            raise RuntimeError(f"unexpected record line: {line}")
    for request, idiom in idioms.items():
        requests[request] = (idiom, events[request])
    return requests


def window_events(window: dict) -> list[Event]:
    return [(event["kind"], event["depth"], event["symbol"], bool(event.get("tail_call")), bool(event.get("inferred")))
            for event in window.get("events", []) if event.get("kind") != "stop"]


def render(events: list[Event]) -> str:
    marks = {"entry": ">", "return": "<", "tail_exit": "<", "unwound": "< [unwound]"}
    return "\n".join(f"    {depth} {marks.get(kind, kind)} {name}{' [tail]' if tail else ''}"
                     f"{' [inferred]' if inferred else ''}" for kind, depth, name, tail, inferred in events)


def compare(document: dict, requests: dict[int, tuple[str, list[Event]]]) -> list[str]:
    problems = []
    windows = {}
    for window in document.get("windows", []):
        fetch = next((f for f in window.get("start_fetches", []) if f.get("name") == "id"), None)
        if fetch is None or fetch.get("value") is None:
            problems.append(f"window {window.get('window_id')} has no request id")
            continue
        windows[int(fetch["value"], 16)] = window
    compared = defaultdict(int)
    for request, (idiom, expected) in sorted(requests.items()):
        window = windows.get(request)
        if window is None:
            problems.append(f"request {request} ({idiom}): no window")
            continue
        if window.get("status") != "complete" or window.get("possible_loss") or window.get("lost_events"):
            problems.append(f"request {request} ({idiom}): status {window.get('status')}, "
                            f"possible_loss {window.get('possible_loss')}")
        got = window_events(window)
        if got != expected:
            problems.append(f"request {request} ({idiom}): window {window.get('window_id')}\n  xref:\n{render(got)}\n"
                            f"  recorded:\n{render(expected)}")
        compared[idiom] += 1
    if len(windows) != len(requests):
        problems.append(f"{len(windows)} windows for {len(requests)} requests")
    for idiom in IDIOMS:
        if compared[idiom] == 0:
            problems.append(f"no request of {idiom} was compared")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--xref", required=True)
    parser.add_argument("--binary", required=True)
    parser.add_argument("--backend", default="auto", choices=["auto", "tracefs"])
    parser.add_argument("--requests", type=int, default=12, help="per thread (two threads)")
    options = parser.parse_args()
    if not os.access(options.xref, os.X_OK):
        return missing_status(f"the xref helper ({options.xref})")
    if os.geteuid() != 0:
        return missing_status("BPF (run as root)")

    problems = codegen_problems(options.binary)
    if problems:
        for problem in problems:
            print("codegen:", problem)
        return 1
    args = ["--start", "serve", "--fetch", "id=%di:u64", "--functions", ",".join(TRACED[1:]),
            "--backend", options.backend]
    result = run_traced(options.xref, options.binary, static_va(options.binary, "serve"), args, options.requests, 2)
    if result.refused is not None or result.document is None:
        print("xref did not trace:", result.refused, result.stderr)
        return 1
    requests = recorded_requests(result.record)
    problems = compare(result.document.get("data", result.document), requests)
    for problem in problems[:10]:
        print("wrong:", problem)
    print(f"{os.path.basename(options.binary)} --backend {options.backend}: {len(requests)} requests, "
          + ("equal" if not problems else f"{len(problems)} differences"))
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
