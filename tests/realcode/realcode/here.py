"""`xref trace --here` in a real debugger (lldb-19 or gdb, batch mode) on a
real-code build, against the program's own record.

The program runs one worker thread, so its requests run one after another
and the breakpoints are hit in the order the requests call the functions
(the plan below names each hit's request; conditions on the registers at a
function's first instruction pick the variant). The debugger attaches to the
program before it starts its requests, sets the breakpoints, releases the
program, and at every hit types `xref trace --here` (`--stop-at-end` at
some) and `continue`. A breakpoint is by name where the debugger places it
(after the prologue), or by live address at the function's first
instruction: in a stripped build, where the plan says so, and in LLDB for a
GCC function with a .cold part (see below). A last breakpoint (serve's
entry, conditional on the request id) is the stop after the last window;
there `xref show --all --json` prints every window, and the debugger
detaches; the program then runs to its end and its record is read.

Each window is compared, with the suite's own model (record.py,
expected.py), with the window the record says a correct xref shows for
`--callees-of F --depth 2` opened on that call of F: the calls made from the
stopped frame on. The stop lies before the function's first call (checked),
so those are all of the frame's calls. Each window must also have printed
by itself at the stop right after its `continue`.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import tempfile
from dataclasses import dataclass, field

from .binary_facts import BinaryFacts, base_name
from .check import function_vas
from .compare import actual_events, compare_window, render_window
from .expected import call_site_window
from .programs import Program
from .record import FrameBuilder, ModelError, parse_record
from .xref_run import _read_until


@dataclass(frozen=True)
class Breakpoint:
    function: str                # record name
    at_entry: bool = False       # at the first instruction (b *ADDR) in every build, not by name
    condition: str | None = None  # on the registers at the first instruction (at_entry only)


@dataclass(frozen=True)
class Hit:
    request: int      # the request whose call stops here
    function: str     # record name of the function the breakpoint is in
    stop_at_end: bool = False


@dataclass(frozen=True)
class HerePlan:
    requests: int                  # run by one worker, ids 0 .. requests-1
    breakpoints: list[Breakpoint]  # set in this order, numbered from 1
    hits: list[Hit]                # every hit of those breakpoints, in order; none inside another's window
    sentinel: int                  # serve's entry for this request id: the last stop


# rc_c: start_tail (leaves by a jump into h, which returns for it) at
# requests 2 and 12; checked, whose GCC -O2 build has checked.cold, at its
# first instruction at request 4 (variant 0: it returns); guarded at 14
# (variant 1: setjmp, then checked's cold path calls bail, which longjmps
# back into guarded past two frames).
RC_C_PLAN = HerePlan(
    requests=16,
    breakpoints=[Breakpoint("start_tail"), Breakpoint("checked", at_entry=True, condition="$rdi == 0"),
                 Breakpoint("guarded", at_entry=True, condition="$rdi == 1")],
    hits=[Hit(2, "start_tail"), Hit(4, "checked"), Hit(12, "start_tail", stop_at_end=True), Hit(14, "guarded")],
    sentinel=15,
)

# rc_cpp: catcher (try/catch; no throw at variant 0) at request 0;
# throw_start (left by an exception on odd variants) at 1 and 9; guard
# (try/catch around checked2, whose cold path throws on odd variants, then
# `return twice(result)`, a tail jmp at -O2) at 2 and 10. Variants: requests
# 0-7 run 0, 8-15 run 1.
RC_CPP_PLAN = HerePlan(
    requests=12,
    breakpoints=[Breakpoint("rc::catcher", at_entry=True, condition="$rdi == 0"), Breakpoint("rc::throw_start"),
                 Breakpoint("rc::guard")],
    hits=[Hit(0, "rc::catcher"), Hit(1, "rc::throw_start"), Hit(2, "rc::guard"), Hit(9, "rc::throw_start"),
          Hit(10, "rc::guard", stop_at_end=True)],
    sentinel=11,
)

# The --here frame ends where no probe of its session sees it:
# rc_c: checked at request 14 (variant 1): bail, called from checked (from
# checked.cold in GCC -O2 builds), longjmps into guarded, and nothing of the
# session runs on the thread after the jump.
RC_C_UNSEEN_END_PLAN = HerePlan(
    requests=16,
    breakpoints=[Breakpoint("checked", at_entry=True, condition="$rdi == 1")],
    hits=[Hit(14, "checked")],
    sentinel=15,
)

# rc_cpp: catcher at request 8 (variant 1): the handler leaves by `jmp
# __cxa_end_catch@plt`, whose libstdc++ code leaves by `jmp
# _Unwind_DeleteException@plt`, whose libgcc_s code leaves by `jmp *%rax`:
# the chain of tail jumps that ends the frame cannot be followed.
RC_CPP_UNSEEN_END_PLAN = HerePlan(
    requests=10,
    breakpoints=[Breakpoint("rc::catcher", at_entry=True, condition="$rdi == 1")],
    hits=[Hit(8, "rc::catcher")],
    sentinel=9,
)

PLANS = {("rc_c", "here"): RC_C_PLAN, ("rc_cpp", "here"): RC_CPP_PLAN,
         ("rc_c", "unseen_end"): RC_C_UNSEEN_END_PLAN, ("rc_cpp", "unseen_end"): RC_CPP_UNSEEN_END_PLAN}


@dataclass
class Debugger:
    kind: str        # lldb | gdb
    program: str     # lldb-19 or gdb
    front_end: str   # libxref_lldb.so or gdb-python/xref.py
    helper: str      # the xref binary (gdb's XREF_HELPER; the plugin finds it next to itself)

    @property
    def prompt(self) -> str:
        return "(lldb) " if self.kind == "lldb" else "(gdb) "

    def argv(self, commands: list[str]) -> list[str]:
        if self.kind == "lldb":
            argv = [self.program, "--no-lldbinit", "-b", "-o", "plugin load " + self.front_end]
            for command in commands:
                argv += ["-o", command]
            return argv
        argv = [self.program, "-nx", "-batch", "-ex", "source " + self.front_end]
        for command in commands:  # echoed as a terminal shows them, like lldb -b does
            argv += ["-ex", "echo (gdb) " + command.replace("\\", "\\\\") + "\\n", "-ex", command]
        return argv

    def environment(self) -> dict[str, str]:
        env = dict(os.environ)
        env.pop("XREF_HELPER", None)
        if self.kind == "gdb":
            env["XREF_HELPER"] = shlex.quote(self.helper) + " serve"
        return env

    # --- commands ----------------------------------------------------------

    def attach(self, pid: int) -> str:
        return f"process attach -p {pid}" if self.kind == "lldb" else f"attach {pid}"

    def break_name(self, name: str) -> str:
        return f"breakpoint set -n {name}" if self.kind == "lldb" else f"break {name}"

    def break_address(self, address: int, condition: str | None = None) -> str:
        if self.kind == "lldb":
            return f"breakpoint set -a {address:#x}" + (f" -c '{condition}'" if condition else "")
        return f"break *{address:#x}" + (f" if {condition}" if condition else "")

    def touch(self, path: str) -> str:
        if self.kind == "lldb":
            return f"script open({path!r}, 'w').close()"
        return f"python open({path!r}, 'w').close()"

    def frame_report(self) -> str:
        """Prints `HERE-FRAME pc=.. cfa=.. sp=..` for the selected frame: the
        debugger's own CFA (LLDB's SBFrame::GetCFA(), gdb's as the front end
        takes it) next to its rsp."""
        if self.kind == "lldb":
            return ("script f = lldb.debugger.GetSelectedTarget().GetProcess().GetSelectedThread()"
                    ".GetSelectedFrame(); print('HERE-FRAME pc=%#x cfa=%#x sp=%#x' % "
                    "(f.GetPC(), f.GetCFA(), f.GetSP()))")
        return ("python import xref.debugger_context as c; f = gdb.selected_frame(); "
                "print('HERE-FRAME pc=%#x cfa=%#x sp=%#x' % (f.pc(), c.frame_cfa(f), "
                "int(f.read_register('rsp'))))")

    def detach(self) -> str:
        return "process detach" if self.kind == "lldb" else "detach"

    def at_stop_at_end(self, text: str) -> bool:
        """Whether the stop report in text is --stop-at-end's breakpoint."""
        if self.kind == "lldb":
            return re.search(r"stop reason = one-shot breakpoint \d+", text) is not None
        return re.search(r"hit Temporary breakpoint \d+, ", text) is not None


@dataclass
class HereResult:
    lines: list[str] = field(default_factory=list)   # the report
    failures: list[str] = field(default_factory=list)
    output: str = ""                                  # the debugger's

    def fail(self, message: str) -> None:
        self.failures.append(message)
        self.lines.append("FAIL " + message)


def _segments(output: str, prompt: str) -> list[tuple[str, str]]:
    """(command, what followed it) for each echoed command."""
    parts = re.split("^" + re.escape(prompt), output, flags=re.M)
    result = []
    for part in parts[1:]:
        command, _, rest = part.partition("\n")
        result.append((command, rest))
    return result


def run_here(debugger: Debugger, binary: str, symbols: str, program: Program, scenario: str = "here") -> HereResult:
    plan = PLANS[(program.name, scenario)]
    facts = BinaryFacts(symbols)
    vas = function_vas(program, facts)
    stripped = binary != symbols
    result = HereResult()
    with tempfile.TemporaryDirectory(prefix="xref-realcode-here-") as work:
        record_path = os.path.join(work, "record")
        go_file = os.path.join(work, "go")
        target = subprocess.Popen([binary, "--record", record_path, "--go-file", go_file, "--requests",
                                   str(plan.requests), "--threads", "1"], stdout=subprocess.PIPE, text=True)
        try:
            startup = _read_until(target.stdout, "ready")
            values = dict(line.rsplit(" ", 1) for line in startup if " " in line)
            slide = int(values["anchor serve"], 16) - vas[program.anchor]

            commands = [debugger.attach(target.pid)]
            for breakpoint in plan.breakpoints:
                va = vas[breakpoint.function]
                # LLDB 19 takes a GCC function with a .cold part to start at
                # the cold part: `breakpoint set -n` puts a location there, and
                # one at the symbol plus the cold part's prologue size, which
                # can be inside an instruction. Such a function gets its
                # breakpoint at its first instruction (where gdb puts `break
                # NAME` in optimized code anyway).
                split = len(facts.functions[va].ranges) > 1
                if stripped or breakpoint.at_entry or (debugger.kind == "lldb" and split):
                    commands.append(debugger.break_address(va + slide, breakpoint.condition))
                else:
                    commands.append(debugger.break_name(base_name(facts.functions[va].name)))
            commands.append(debugger.break_address(vas[program.anchor] + slide, f"$rdi == {plan.sentinel}"))
            commands += [debugger.touch(go_file), "continue"]
            for hit in plan.hits:
                commands.append(debugger.frame_report())
                commands.append("xref trace --here" + (" --stop-at-end" if hit.stop_at_end else ""))
                commands.append("continue")
                if hit.stop_at_end:
                    commands.append("continue")
            commands += ["xref sessions", "xref show --all --json", debugger.detach()]

            process = subprocess.run(debugger.argv(commands), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, env=debugger.environment())
            result.output = process.stdout.decode("utf-8", "replace")
            result.lines.append("$ " + " ".join(shlex.quote(word) for word in debugger.argv(commands)))
            if process.returncode != 0:
                result.fail(f"{debugger.kind} exited with status {process.returncode}")
            # The program runs its last requests once the debugger is gone.
            _read_until(target.stdout, "done")
            with open(record_path) as record:
                record_text = record.read()
        finally:
            target.kill()
            target.wait()
    _compare(debugger, plan, program, facts, vas, slide, record_text, result)
    return result


def _compare(debugger, plan, program, facts, vas, slide, record_text, result) -> None:
    segments = _segments(result.output, debugger.prompt)
    windows: dict[int, dict] = {}
    for command, text in segments:
        if command == "xref show --all --json":
            for line in text.splitlines():
                if line.startswith('{"session"'):
                    document = json.loads(line)
                    windows[document["session"]] = document["window"]
    frames = [text for command, text in segments if command == debugger.frame_report()]
    traces = [index for index, (command, _) in enumerate(segments) if command.startswith("xref trace --here")]
    requests = parse_record(record_text)
    builder = FrameBuilder(facts, slide, vas)
    if len(traces) != len(plan.hits):
        result.fail(f"{len(traces)} `xref trace --here` commands ran, the plan has {len(plan.hits)} hits")
    for session, hit in enumerate(plan.hits, start=1):
        va = vas[hit.function]
        label = f"session {session}: --here in {hit.function} (request {hit.request})"
        report = re.search(r"HERE-FRAME pc=(0x[0-9a-f]+) cfa=(0x[0-9a-f]+) sp=(0x[0-9a-f]+)",
                           frames[session - 1] if session <= len(frames) else "")
        if report is None:
            result.fail(f"{label}: the debugger did not report the frame")
            continue
        pc, cfa, sp = (int(report.group(i), 16) for i in (1, 2, 3))
        static_pc = pc - slide
        if facts.owner(static_pc) != va:
            result.fail(f"{label}: stopped at {static_pc:#x}, not in {hit.function}")
            continue
        before = [i for i in facts.functions[va].instructions if va <= i.va < static_pc and i.is_call]
        if before:
            raise ModelError(f"{label}: the stop at +{static_pc - va:#x} is after a call (+{before[0].va - va:#x})")
        where = "the first instruction" if static_pc == va else f"+{static_pc - va:#x}"
        cfa_note = "" if static_pc != va else (
            f"; {debugger.kind}'s CFA {cfa:#x} " + ("= rsp+8" if cfa == sp + 8 else f"!= rsp+8 = {sp + 8:#x}"))
        trace_text = segments[traces[session - 1]][1] if session <= len(traces) else ""
        warned = "disagrees with the .eh_frame rule" in trace_text
        if warned:
            cfa_note += " (the helper warned and used the .eh_frame rule)"
        result.lines.append(f"{label} at {where}{cfa_note}")
        if "tracing PID" not in trace_text:
            result.fail(f"{label}: xref trace --here failed: {trace_text.strip()}")
            continue
        # The window printed by itself at the next stop (the stop hook, gdb's stop event).
        after = segments[traces[session - 1] + 1][1] if traces[session - 1] + 1 < len(segments) else ""
        if f"window 1 (session {session})" not in after:
            result.fail(f"{label}: the window did not print at the next stop")
        if hit.stop_at_end and not debugger.at_stop_at_end(after):
            result.fail(f"{label}: --stop-at-end did not stop the process at the frame's return")
        window = windows.get(session)
        tid = window.get("tid") if window else None
        tids = {key[0] for key in requests}
        request = requests.get((tid if tid is not None else next(iter(tids), None), hit.request))
        if request is None:
            result.fail(f"{label}: no record of request {hit.request} on thread {tid}")
            continue
        want = call_site_window(builder.build(request), va, facts.expanded(va, 2))
        if want is None:
            raise ModelError(f"{label}: request {hit.request} ({request.idiom}) does not call {hit.function}")
        expected_text = f"  expected ({want.status}):\n{render_window(want.events, facts)}"
        if window is None:
            later = re.search(rf"^window 1 \(session {session}\).*\n(?:  \d.*\n)*", result.output, flags=re.M)
            result.fail(f"{label} ({request.idiom}): no window by the last stop (`xref show --all --json`)\n"
                        f"{expected_text}\n  xref printed later: " + (later.group(0) if later else "nothing"))
            continue
        problem = compare_window(want, window, facts)
        if problem:
            result.fail(f"{label} ({request.idiom}): {problem}\n{expected_text}\n  xref ({window.get('status')}):\n"
                        f"{render_window(actual_events(window), facts)}")
        else:
            result.lines.append(f"  equal: {len(want.events)} events, {want.status} ({request.idiom})")
