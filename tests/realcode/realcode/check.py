"""One build in one mode: every scenario traced, every window compared.

The verdict is per row (an idiom, or a scenario whose start is an idiom):
`equal`, `wrong: how` (the first wrong window, and how many were wrong), or
`refused: xref's error`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from . import expected as expected_windows
from .binary_facts import BinaryFacts, base_name
from .compare import actual_events, compare_window, render_window, window_request_id
from .programs import Program, Scenario
from .record import FrameBuilder, ModelError, parse_record
from .xref_run import run_traced


@dataclass
class Row:
    name: str
    windows: int = 0
    wrong: list[str] = field(default_factory=list)
    refused: str | None = None

    def verdict(self) -> str:
        if self.refused is not None:
            return f"refused: {self.refused}"
        if self.wrong:
            return f"wrong ({len(self.wrong)}/{self.windows} windows): {self.wrong[0]}"
        if self.windows == 0:
            return "no window expected"
        return "equal"


@dataclass
class BuildResult:
    rows: dict[str, Row] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)

    def row(self, name: str) -> Row:
        return self.rows.setdefault(name, Row(name))

    @property
    def passed(self) -> bool:
        return all(row.verdict() == "equal" for row in self.rows.values())


def function_vas(program: Program, facts: BinaryFacts) -> dict[str, int]:
    vas = {}
    for name in program.traced + program.untraced:
        found = facts.find(program.pattern(name))
        if len(found) != 1:
            raise ModelError(f"{name}: {len(found)} functions match {program.pattern(name).pattern!r}")
        vas[name] = found[0].va
    return vas


def _trace_args(scenario: Scenario, mode: str, program: Program, facts: BinaryFacts, vas: dict[str, int],
                stripped: bool, traced: list[str]) -> list[str]:
    def spec(name: str) -> str:
        return hex(vas[name]) if stripped else facts.functions[vas[name]].name

    start = spec(scenario.start)
    args = ["--start", start, "--fetch", "id=%di:u64"]
    if mode == "functions":
        args += ["--functions", ",".join(spec(name) for name in traced if name != scenario.start)]
    elif mode == "callees":
        args += ["--callees-of", start, "--depth", str(scenario.callees_depth)]
    else:
        args += ["--all-calls-in", start]
    return args


_HEX = re.compile(r"0x[0-9a-f]+")


def _annotate(message: str, facts: BinaryFacts) -> str:
    """xref's first error line with each address followed by its function."""
    def name(match: re.Match[str]) -> str:
        owner = facts.owner(int(match.group(0), 16))
        return match.group(0) + (f" ({base_name(facts.functions[owner].name)})" if owner is not None else "")

    return _HEX.sub(name, message.splitlines()[0])


def _refused_function(message: str, names: list[str], vas: dict[str, int], facts: BinaryFacts) -> str | None:
    """The traced function a refusal names (by an address in it), if any."""
    for text in _HEX.findall(message):
        owner = facts.owner(int(text, 16))
        for name in names:
            if vas[name] == owner:
                return name
    return None


def check_build(xref: str, binary: str, symbols: str, program: Program, mode: str, requests: int = 20,
                threads: int = 2) -> BuildResult:
    """binary is traced; symbols is its unstripped twin (the same file when
    binary is not stripped), where nm and objdump find the ground truth."""
    facts = BinaryFacts(symbols)
    vas = function_vas(program, facts)
    result = BuildResult()
    for scenario in program.scenarios:
        _check_scenario(xref, binary, binary != symbols, program, scenario, mode, facts, vas, requests, threads,
                        result)
    return result


def _check_scenario(xref, binary, stripped, program, scenario, mode, facts, vas, requests, threads, result):
    # --functions refuses the whole trace for one function it cannot probe;
    # that function is left out and the trace run again, and every request
    # whose record names it counts as refused.
    traced = list(program.traced)
    left_out: dict[str, str] = {}
    while True:
        args = _trace_args(scenario, mode, program, facts, vas, stripped, traced)
        run = run_traced(xref, binary, vas[program.anchor], args, requests, threads)
        result.log.append("$ " + " ".join(run.xref_argv))
        if run.stderr:
            result.log.append(run.stderr)
        if run.refused is None or mode != "functions":
            break
        culprit = _refused_function(run.refused, traced, vas, facts)
        if culprit is None or culprit == scenario.start:
            break
        left_out[culprit] = _annotate(run.refused, facts)
        traced.remove(culprit)
    start = vas[scenario.start]
    if run.refused is not None:
        names = program.idioms if scenario.rows == "each" else [scenario.rows]
        for name in names:
            result.row(name).refused = _annotate(run.refused, facts)
        return
    expanded = facts.expanded(start, scenario.callees_depth) if mode == "callees" else {start}
    traced_vas = {vas[name] for name in traced}
    windows = {}
    extra = []
    for window in (run.document or {}).get("windows", []):
        key = (window.get("tid"), window_request_id(window))
        if key in windows:
            extra.append(window)
        else:
            windows[key] = window
    builder = FrameBuilder(facts, run.slide, vas)
    for key, request in sorted(parse_record(run.record).items()):
        events = builder.build(request)
        if mode == "functions":
            want = expected_windows.functions_window(events, start, traced_vas)
        else:
            want = expected_windows.call_site_window(events, start, expanded)
        window = windows.pop(key, None)
        row = result.row(request.idiom if scenario.rows == "each" else scenario.rows)
        if want is None:
            if window is not None:
                row.wrong.append(f"request {key[1]}: a window, but the start was not called")
            continue
        named = {name for _, name, _ in request.lines} & set(left_out)
        if named:
            row.refused = left_out[sorted(named)[0]]
            continue
        row.windows += 1
        problem = compare_window(want, window, facts)
        if problem:
            row.wrong.append(f"request {key[1]}: {problem}")
            result.log.append(f"request {key[1]} (tid {key[0]}, {request.idiom}) in mode {mode}: {problem}\n"
                              f"  expected ({want.status}):\n{render_window(want.events, facts)}\n"
                              f"  xref ({window.get('status') if window else 'none'}):\n"
                              f"{render_window(actual_events(window), facts) if window else ''}")
    for window in extra + list(windows.values()):
        result.row("(windows of no request)").wrong.append(
            f"window {window.get('window_id')} tid {window.get('tid')} id {window_request_id(window)}: no such request")
