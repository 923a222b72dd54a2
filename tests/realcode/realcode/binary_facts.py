"""What a binary holds, from nm and objdump alone (never from xref).

Functions are keyed by the static VA of their start; a compiler's split-off
part (`f.cold`, `f(int) [clone .cold]`) belongs to its function. PLT stubs
are functions of their own (`getpid@plt`), the leaves of every static
callee tree.
"""
from __future__ import annotations

import bisect
import re
import subprocess
from dataclasses import dataclass, field

_COLD = re.compile(r"(\.cold(\.\d+)?| \[clone \.cold(\.\d+)?\])$")
_LABEL = re.compile(r"^([0-9a-f]+) <(.*)>:$")
_INSN = re.compile(r"^\s+([0-9a-f]+):\t(.*)$")
_DIRECT = re.compile(r"^([0-9a-f]+) <")
_PREFIXES = {"bnd", "notrack", "rep", "repz", "repe", "repnz", "repne", "data16", "cs", "ds", "lock"}


@dataclass
class Instruction:
    va: int
    mnemonic: str  # without prefixes: call, jmp, jne, ret, mov, ...
    operands: str
    target: int | None  # direct branch target
    prefixes: tuple[str, ...] = ()  # as objdump prints them: lock, rep, notrack, bnd, ...

    @property
    def is_call(self) -> bool:
        return self.mnemonic.startswith("call")

    @property
    def is_jmp(self) -> bool:
        return self.mnemonic.startswith("jmp")

    @property
    def is_conditional_jump(self) -> bool:
        return self.mnemonic.startswith("j") and not self.is_jmp

    @property
    def is_indirect(self) -> bool:
        return self.operands.startswith("*")


@dataclass
class Function:
    va: int
    name: str  # as nm -C prints it, with the parameter list
    ranges: list[tuple[int, int]] = field(default_factory=list)  # [start, end) incl. .cold parts
    plt: bool = False
    instructions: list[Instruction] = field(default_factory=list)

    def contains(self, va: int) -> bool:
        return any(start <= va < end for start, end in self.ranges)


def base_name(demangled: str) -> str:
    """`rc::Square::area(int) const` -> `rc::Square::area`: the name without
    its last parameter list (and what follows it)."""
    text = demangled
    for suffix in (" const", " volatile", " &", " &&"):
        if text.endswith(suffix):
            text = text[: -len(suffix)]
    if not text.endswith(")"):
        return text
    depth = 0
    for index in range(len(text) - 1, -1, -1):
        if text[index] == ")":
            depth += 1
        elif text[index] == "(":
            depth -= 1
            if depth == 0:
                return text[:index]
    return text


class BinaryFacts:
    def __init__(self, path: str):
        self.path = path
        self.functions: dict[int, Function] = {}
        self._range_starts: list[int] = []
        self._range_table: list[tuple[int, int, int]] = []  # (start, end, owner va)
        self._load_symbols()
        self._load_disassembly()

    # --- loading -------------------------------------------------------------

    def _load_symbols(self) -> None:
        output = subprocess.run(["nm", "-S", "-C", "--defined-only", self.path], check=True,
                                capture_output=True, text=True).stdout
        parts = []  # (va, size, name)
        for line in output.splitlines():
            fields = line.split(" ", 3)
            if len(fields) != 4 or fields[2] not in ("t", "T", "w", "W", "i"):
                continue
            va, size = int(fields[0], 16), int(fields[1], 16)
            if size > 0:
                parts.append((va, size, fields[3]))
        by_name: dict[str, Function] = {}
        for va, size, name in sorted(parts):
            if _COLD.search(name):
                continue
            if va in self.functions:  # an alias: keep the first name
                continue
            function = Function(va=va, name=name, ranges=[(va, va + size)])
            self.functions[va] = function
            by_name.setdefault(name, function)
        for va, size, name in parts:
            match = _COLD.search(name)
            if match:
                parent = by_name.get(name[: match.start()])
                if parent is None:  # C: `checked.cold` names `checked`
                    parent = next((f for f in self.functions.values() if base_name(f.name) == name[: match.start()]),
                                  None)
                if parent is not None:
                    parent.ranges.append((va, va + size))

    def _load_disassembly(self) -> None:
        output = subprocess.run(["objdump", "-d", "-C", "-w", "--no-show-raw-insn", self.path], check=True,
                                capture_output=True, text=True).stdout
        section = ""
        plt_labels: list[tuple[int, str]] = []
        instructions: list[Instruction] = []
        for line in output.splitlines():
            if line.startswith("Disassembly of section "):
                section = line[len("Disassembly of section "):].rstrip(":")
                continue
            label = _LABEL.match(line)
            if label:
                if section.startswith(".plt") and label.group(2).endswith("@plt"):
                    plt_labels.append((int(label.group(1), 16), label.group(2)))
                continue
            insn = _INSN.match(line)
            if not insn:
                continue
            words = insn.group(2).split()
            prefixes = []
            while words and words[0] in _PREFIXES:
                prefixes.append(words.pop(0))
            if not words:
                continue
            operands = " ".join(words[1:])
            direct = _DIRECT.match(operands)
            instructions.append(Instruction(va=int(insn.group(1), 16), mnemonic=words[0], operands=operands,
                                            target=int(direct.group(1), 16) if direct else None,
                                            prefixes=tuple(prefixes)))
        for va, name in plt_labels:
            self.functions.setdefault(va, Function(va=va, name=name, ranges=[(va, va + 16)], plt=True))
        for function in self.functions.values():
            for start, end in function.ranges:
                self._range_table.append((start, end, function.va))
        self._range_table.sort()
        self._range_starts = [start for start, _, _ in self._range_table]
        instructions.sort(key=lambda i: i.va)
        # The instruction that ends where the next one starts: for a return
        # address, the call that pushed it.
        self.instruction_before = {after.va: before for before, after in zip(instructions, instructions[1:])}
        for instruction in instructions:
            owner = self.owner(instruction.va)
            if owner is not None:
                self.functions[owner].instructions.append(instruction)

    # --- queries ---------------------------------------------------------------

    def owner(self, va: int) -> int | None:
        """The start VA of the function whose code holds va."""
        index = bisect.bisect_right(self._range_starts, va) - 1
        if index >= 0:
            start, end, owner = self._range_table[index]
            if start <= va < end:
                return owner
        return None

    def direct_call_target(self, return_address: int) -> int | None:
        """The function a direct call that returns to return_address calls;
        None for an indirect call (or no call)."""
        instruction = self.instruction_before.get(return_address)
        if instruction is None or not instruction.is_call or instruction.target is None:
            return None
        return self.owner(instruction.target)

    def plt_stub(self, name: str) -> int | None:
        for function in self.functions.values():
            if function.plt and function.name == name:
                return function.va
        return None

    def find(self, pattern: re.Pattern[str]) -> list[Function]:
        """Non-PLT functions whose base name (no parameter list) matches."""
        return [f for f in self.functions.values() if not f.plt and pattern.fullmatch(base_name(f.name))]

    def branch_targets(self, va: int, *, calls: bool = True, jumps: bool = True) -> list[tuple[Instruction, int]]:
        """Direct calls and jumps of function va that leave it: (instruction, target owner)."""
        result = []
        for instruction in self.functions[va].instructions:
            if instruction.target is None:
                continue
            if not ((calls and instruction.is_call) or
                    (jumps and (instruction.is_jmp or instruction.is_conditional_jump))):
                continue
            owner = self.owner(instruction.target)
            if owner is not None and owner != va:
                result.append((instruction, owner))
        return result

    def jumps_to(self, va: int, target: int) -> bool:
        """Whether function va leaves by an unconditional `jmp target`."""
        return any(i.is_jmp and owner == target for i, owner in self.branch_targets(va, calls=False))

    def expanded(self, root: int, depth: int) -> set[int]:
        """The functions of root's static callee tree above depth `depth`:
        root at tree depth 0, its direct call and jump targets at 1, ...
        PLT stubs are leaves, never expanded."""
        expanded: set[int] = set()
        level = {root}
        seen = {root}
        for _ in range(depth):
            next_level = set()
            for va in level:
                if self.functions[va].plt:
                    continue
                expanded.add(va)
                for _, owner in self.branch_targets(va):
                    if owner not in seen:
                        seen.add(owner)
                        next_level.add(owner)
            level = next_level
        return expanded
