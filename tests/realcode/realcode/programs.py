"""The real-code programs: what they record and how each is traced.

Each program has a main scenario, start `serve` (one idiom per request),
and one more whose start is itself an idiom: start_tail (leaves by a jump
into untraced h) and throw_start (left by an exception caught in serve).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Scenario:
    start: str          # record name of the window start
    callees_depth: int  # --callees-of START --depth N
    rows: str           # the idiom rows its windows count for: "each" (the request's idiom) or a row name


@dataclass
class Program:
    name: str
    anchor: str  # record name of the function printed as "anchor serve"
    # record name -> the function's nm -C name without its parameter list
    # (a regular expression), when they differ
    symbol_patterns: dict[str, str] = field(default_factory=dict)
    # record names of the functions the program records (or notes around
    # their calls) that --functions traces
    traced: list[str] = field(default_factory=list)
    # record names of recorded functions --functions leaves out on purpose
    untraced: list[str] = field(default_factory=list)
    # what the requests run, in the order of request id % len(idioms)
    idioms: list[str] = field(default_factory=list)
    scenarios: list[Scenario] = field(default_factory=list)

    def pattern(self, record_name: str) -> re.Pattern[str]:
        return re.compile(self.symbol_patterns.get(record_name, re.escape(record_name)))


RC_C = Program(
    name="rc_c",
    anchor="serve",
    traced=["serve", "f", "g", "thunk", "start_tail", "is_even", "is_odd", "guarded", "checked", "bail", "dispatch",
            "op_add", "op_mul", "op_neg", "op_sq", "op_half", "op_inc3", "pid_user", "sum_to", "first_call", "g0",
            "h0", "via_pointer"],
    untraced=["h"],  # start_tail jumps into untraced code
    idioms=["tail", "thunk", "tail_untraced", "mutual", "noreturn_cold", "jump_table", "plt", "recursion",
            "first_call", "indirect"],
    scenarios=[Scenario("serve", 3, "each"), Scenario("start_tail", 2, "tail_untraced (start)")],
)

RC_CPP = Program(
    name="rc_cpp",
    anchor="rc::serve",
    symbol_patterns={
        # GCC names the lambda after the variable it initializes, clang $_N.
        "rc::lambda": r"rc::(lambda_fn::\{lambda\(int\)#1\}|\$_0)::operator\(\)",
        "mi_thunk": r"non-virtual thunk to rc::Both::second",
        "mi_thunk2": r"non-virtual thunk to rc::Pair::second",
    },
    traced=["rc::serve", "rc::catcher", "rc::mid", "rc::thrower", "rc::throw_start", "rc::mid2", "rc::thrower2",
            "rc::guard", "rc::checked2", "rc::bail2", "rc::twice", "rc::virt_user", "rc::Square::area", "rc::Circle::area",
            "rc::Triangle::area", "rc::mi_user", "mi_thunk", "rc::Both::second", "mi_thunk2", "rc::Pair::second",
            "rc::lam_user", "rc::lambda", "rc::len_user", "rc::walk"],
    idioms=["catch_end", "throw_out", "noreturn_throw", "virtual", "mi_thunk", "lambda", "plt", "recursion"],
    # Depth 2 for serve: at -O0, depth 3 would expand std::function's
    # operator(), whose calls (_M_empty, std::forward) no record line names.
    scenarios=[Scenario("rc::serve", 2, "each"), Scenario("rc::throw_start", 2, "throw_out (start)")],
)

PROGRAMS = {program.name: program for program in (RC_C, RC_CPP)}
MODES = ("functions", "callees", "allcalls")
