#!/usr/bin/env python3
"""The real-code programs are what they claim to be, by objdump and nm.

  check_codegen.py --build-dir DIR

For every unstripped build: the recorded functions call nothing but each
other and the library functions the source calls (recording adds no call).
For the -O2 builds: the idioms came out as real code has them: `jmp g` at
the end of f, a thunk that is one `jmp`, mutual tail jumps, a jump table, a
catch handler that leaves by `jmp __cxa_end_catch`, a function with a
try/catch that leaves by a tail `jmp` (rc::guard), a C++ thunk, an
indirect virtual call (no speculative direct call), GCC's .cold parts.
Prints each fact, and whether first_call's first instruction is the call.
Exit status 0 when every fact holds.
"""
from __future__ import annotations

import argparse
import itertools
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from realcode.binary_facts import BinaryFacts  # noqa: E402
from realcode.check import function_vas  # noqa: E402
from realcode.programs import PROGRAMS  # noqa: E402

# What the sources call besides their own functions (and what the compilers
# call for them: throw, catch, std::function at -O0).
LIBRARY_CALLS = re.compile(
    r"(getpid|longjmp|_setjmp|strlen|__cxa_begin_catch|__cxa_end_catch|_Unwind_Resume|__cxa_allocate_exception"
    r"|__cxa_throw|__cxa_free_exception|std::__throw_bad_function_call\(\)"
    r"|std::runtime_error::runtime_error\(char const\*\))@plt"
    r"|std::function<int \(int\)>::operator\(\)\(int\) const")


class Facts:
    def __init__(self, path: str, program):
        self.binary = BinaryFacts(path)
        self.vas = function_vas(program, self.binary)
        self.failures: list[str] = []

    def va(self, name: str) -> int:
        return self.vas[name] if name in self.vas else self.binary.find(re.compile(name))[0].va

    def check(self, what: str, holds: bool) -> None:
        print(f"  {'ok  ' if holds else 'FAIL'} {what}")
        if not holds:
            self.failures.append(what)

    def jumps(self, source: str, target: str) -> bool:
        return self.binary.jumps_to(self.va(source), self.va(target))

    def first_instruction(self, name: str):
        function = self.binary.functions[self.va(name)]
        return next((i for i in function.instructions if i.va == function.va), None)

    def has_cold_part_calling(self, name: str, callee: str) -> bool:
        function = self.binary.functions[self.va(name)]
        cold = function.ranges[1:]
        return any(i.is_call and i.target is not None and self.binary.owner(i.target) == self.va(callee) and
                   any(start <= i.va < end for start, end in cold) for i in function.instructions)

    def plt(self, name: str) -> int:
        return self.binary.plt_stub(name)


def check_calls(facts: Facts) -> None:
    own = set(facts.vas.values())
    for name, va in sorted(facts.vas.items()):
        for instruction, target in facts.binary.branch_targets(va, jumps=False):
            callee = facts.binary.functions[target]
            if target not in own and not LIBRARY_CALLS.fullmatch(callee.name):
                facts.check(f"{name} calls only recorded and library functions (calls {callee.name})", False)


def check_c(facts: Facts, compiler: str) -> None:
    facts.check("f ends in `jmp g`", facts.jumps("f", "g"))
    first = facts.first_instruction("thunk")
    facts.check("thunk is one `jmp g`", first is not None and first.is_jmp and
                facts.binary.owner(first.target or 0) == facts.va("g"))
    facts.check("start_tail ends in `jmp h`", facts.jumps("start_tail", "h"))
    facts.check("is_even and is_odd jump to each other", facts.jumps("is_even", "is_odd") and
                facts.jumps("is_odd", "is_even"))
    facts.check("dispatch has an indirect jmp (jump table)",
                any(i.is_jmp and i.is_indirect for i in facts.binary.functions[facts.va("dispatch")].instructions))
    facts.check("via_pointer calls indirectly",
                any(i.is_call and i.is_indirect for i in facts.binary.functions[facts.va("via_pointer")].instructions))
    if compiler == "gcc":
        facts.check("checked.cold calls bail", facts.has_cold_part_calling("checked", "bail"))
    # The return site of pid_user's getpid call is the `lock add` of its
    # counter: an instruction the kernel will not probe.
    code = facts.binary.functions[facts.va("pid_user")].instructions
    after = [code[i + 1] for i in range(len(code) - 1) if code[i].is_call and code[i].target is not None and
             facts.binary.owner(code[i].target) == facts.plt("getpid@plt")]
    facts.check("pid_user's getpid call returns to a `lock` instruction", len(after) == 1 and "lock" in after[0].prefixes)
    first = facts.first_instruction("first_call")
    print(f"  info first_call's first instruction: {first.mnemonic} {first.operands}"
          f"{'  (a call: the idiom holds)' if first.is_call else ''}")


def check_cpp(facts: Facts, compiler: str) -> None:
    catcher = facts.va("rc::catcher")
    facts.check("catcher leaves by `jmp __cxa_end_catch@plt`",
                facts.binary.jumps_to(catcher, facts.plt("__cxa_end_catch@plt")))
    facts.check("non-virtual thunk to rc::Both::second jumps to rc::Both::second",
                facts.jumps("mi_thunk", "rc::Both::second"))
    for user in ("rc::mi_user", "rc::virt_user", "rc::lam_user"):
        function = facts.binary.functions[facts.va(user)]
        facts.check(f"{user} calls indirectly", any(i.is_call and i.is_indirect for i in function.instructions))
    invoker = facts.binary.find(re.compile(r"std::_Function_handler<int \(int\), rc::.*>::_M_invoke"))
    facts.check("the std::function invoker jumps to the lambda",
                len(invoker) == 1 and facts.binary.jumps_to(invoker[0].va, facts.va("rc::lambda")))
    guard = facts.binary.functions[facts.va("rc::guard")]
    facts.check("rc::guard has a catch (its handler calls __cxa_begin_catch@plt)",
                any(i.is_call and i.target is not None and
                    facts.binary.owner(i.target) == facts.plt("__cxa_begin_catch@plt") for i in guard.instructions))
    facts.check("rc::guard leaves by `jmp rc::twice` (a tail call after the try/catch)",
                facts.jumps("rc::guard", "rc::twice"))
    if compiler == "gcc":
        facts.check("rc::checked2's .cold part calls bail2", facts.has_cold_part_calling("rc::checked2", "rc::bail2"))
        facts.check("rc::catcher's handler is in its .cold part", len(facts.binary.functions[catcher].ranges) > 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", required=True, help="the directory of the real-code builds")
    options = parser.parse_args()
    failures = 0
    for program, compiler, level, link in itertools.product(PROGRAMS.values(), ("gcc", "clang"), ("O0", "O2"),
                                                            ("pie", "nopie")):
        name = f"{program.name}-{compiler}-{level}-{link}"
        print(name)
        facts = Facts(os.path.join(options.build_dir, name), program)
        check_calls(facts)
        if level == "O2":
            (check_c if program.name == "rc_c" else check_cpp)(facts, compiler)
        failures += len(facts.failures)
    print("all facts hold" if not failures else f"{failures} facts do not hold")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
