"""A program's record (see rc_record.h) turned into what the machine did.

The record says what the source did, in order. Which of its `return f(x)`
became jumps, which frames a thunk or a std::function call added, and where
a call went is the binary's business; this module settles it with the
return address each entry recorded and with objdump, and yields per request
the real frame events:

  ("call",   level, callee, caller)   a new frame at stack level `level`
  ("tail",   level, from_fn, to_fn)   the frame at `level` jumps to to_fn
  ("return", level, fn)               the frame returns through fn's ret
  ("unwind", level, fn)               the frame is left by unwinding

Functions are static VAs (BinaryFacts keys); `caller` is the function whose
call instruction made the call, None when no function of the binary is known
to have made it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .binary_facts import BinaryFacts

_STD_FUNCTION_CALL = re.compile(r"std::function<.*>::operator\(\)")


class ModelError(Exception):
    """The record and the binary do not fit together: a defect of this test."""


@dataclass
class Request:
    tid: int
    request_id: int
    idiom: str = ""
    lines: list[tuple[str, str, str]] = field(default_factory=list)  # kind, name, extra


def parse_record(text: str) -> dict[tuple[int, int], Request]:
    requests: dict[tuple[int, int], Request] = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) != 6:
            continue
        tid, request_id, kind, name, _depth, extra = fields
        key = (int(tid), int(request_id))
        request = requests.setdefault(key, Request(tid=key[0], request_id=key[1]))
        if kind == "E":
            raise ModelError(f"request {request_id}: the program's record overflowed")
        if kind == "@":
            request.idiom = name
        else:
            request.lines.append((kind, name, extra))
    return requests


@dataclass
class _Frame:
    fn: int
    call_event: int                    # index of the "call" event that opened it
    pseudo: str | None = None          # opened by a "[" line of its caller
    tail_pending: str | None = None    # "~": the source left by `return callee(...)`
    returns_after_child: bool = False  # that tail call was compiled as a call
    external_tail: bool = False        # jumped to a function outside the record (PLT)
    hidden: bool = False               # a frame no record line names (std::function internals)


class FrameBuilder:
    """Turns one request's record lines into real frame events."""

    def __init__(self, facts: BinaryFacts, slide: int, function_va: dict[str, int]):
        self.facts = facts
        self.slide = slide
        self.function_va = function_va  # record name -> static VA

    def build(self, request: Request) -> list[tuple]:
        self.events: list[tuple] = []
        self.stack: list[_Frame] = []
        for kind, name, extra in request.lines:
            handler = {">": self._entry, "<": self._return, "~": self._tail, "[": self._pseudo_call,
                       "]": self._pseudo_return, "*": self._caught}.get(kind)
            if handler is not None:
                handler(name, extra)
        self._close_implicit(None)
        if self.stack:
            raise ModelError(f"request {request.request_id}: frames still open at its end: "
                             f"{[self._name(f.fn) for f in self.stack]}")
        return self.events

    # --- helpers ---------------------------------------------------------------

    def _name(self, va: int | None) -> str:
        if va is None:
            return "?"
        function = self.facts.functions.get(va)
        return function.name if function else hex(va)

    def _va(self, name: str) -> int:
        if name in self.function_va:
            return self.function_va[name]
        if name.endswith("@plt"):
            stub = self.facts.plt_stub(name)
            if stub is not None:
                return stub
        raise ModelError(f"no function for record name {name!r}")

    def _static(self, live: str) -> int:
        return int(live, 16) - self.slide

    def _close_implicit(self, entering_from: int | None) -> None:
        """Frames that end without a record line of their own: a jump into a
        PLT stub (its library function returns to our caller) and hidden
        frames, both closed by the next event that is not made inside them."""
        while self.stack and (self.stack[-1].external_tail or
                              (self.stack[-1].hidden and self.stack[-1].fn != entering_from)):
            frame = self.stack.pop()
            self.events.append(("return", len(self.stack), frame.fn))
            self._finish_parents()

    def _finish_parents(self) -> None:
        """A tail call compiled as call + ret: the caller returns right after."""
        while self.stack and self.stack[-1].returns_after_child:
            frame = self.stack.pop()
            self.events.append(("return", len(self.stack), frame.fn))

    def _push_call(self, callee: int, caller: int | None, **frame_fields) -> None:
        self.events.append(("call", len(self.stack), callee, caller))
        self.stack.append(_Frame(fn=callee, call_event=len(self.events) - 1, **frame_fields))

    # --- record lines ------------------------------------------------------------

    def _entry(self, name: str, extra: str) -> None:
        va = self._va(name)
        return_address = self._static(extra)
        # The byte before the return address is the call's own: after a
        # call of a noreturn function the return address may already be the
        # next function's first byte.
        caller = self.facts.owner(return_address - 1)
        # What that call instruction called, when it is direct: va itself, or
        # a function that jumped on to va (a thunk, a tail call).
        called = self.facts.direct_call_target(return_address)
        self._close_implicit(caller)
        if not self.stack:
            self._push_call(called or va, caller)
            if called not in (None, va):
                self._jump(va)
            return
        top = self.stack[-1]
        parent = self.stack[-2].fn if len(self.stack) >= 2 else None
        if caller == top.fn:
            if top.tail_pending is not None:
                top.tail_pending = None
                top.returns_after_child = True
            self._push_call(called or va, caller)
            if called not in (None, va):
                self._jump(va)
        elif caller is not None and caller == parent and (top.tail_pending is not None or top.pseudo):
            if top.pseudo and called is not None and called != top.fn:
                # The caller's note named the function its vtable slot holds,
                # but the compiler called another directly (speculative
                # devirtualization): the frame is that function's.
                self.events[top.call_event] = ("call", len(self.stack) - 1, called, caller)
                top.fn = called
            if top.pseudo and top.fn == va:
                top.pseudo = None  # the caller's note was this very call
                return
            self._jump(va)
        elif top.pseudo or top.hidden:
            # Called from inside a function the record does not follow
            # (std::function's invoker chain at -O0): one hidden frame stands
            # for the unknown ones in between.
            self._push_call(caller, None, hidden=True)
            self._push_call(va, caller)
        else:
            raise ModelError(f"entry of {name} returns to {self._name(caller)}, but the open frame is "
                             f"{self._name(top.fn)} (below it {self._name(parent)})")

    def _jump(self, va: int) -> None:
        """The top frame's function jumps to va."""
        top = self.stack[-1]
        self.events.append(("tail", len(self.stack) - 1, top.fn, va))
        top.fn, top.tail_pending, top.pseudo = va, None, None

    def _return(self, name: str, _extra: str) -> None:
        self._close_implicit(None)
        va = self._va(name)
        if not self.stack or self.stack[-1].fn != va:
            raise ModelError(f"return of {name} while the open frame is "
                             f"{self._name(self.stack[-1].fn) if self.stack else 'none'}")
        self.stack.pop()
        self.events.append(("return", len(self.stack), va))
        self._finish_parents()

    def _tail(self, name: str, callee: str) -> None:
        self._close_implicit(None)
        va = self._va(name)
        top = self.stack[-1]
        if top.fn != va:
            raise ModelError(f"tail exit of {name} while the open frame is {self._name(top.fn)}")
        if callee in self.function_va:
            top.tail_pending = callee  # the callee's return address will tell
            return
        stub = self._va(callee)
        level = len(self.stack) - 1
        if self.facts.jumps_to(va, stub):
            self.events.append(("tail", level, va, stub))
            top.fn, top.external_tail = stub, True
        else:  # call + ret
            self.events.append(("call", level + 1, stub, va))
            self.events.append(("return", level + 1, stub))
            self.stack.pop()
            self.events.append(("return", level, va))
            self._finish_parents()

    def _pseudo_call(self, name: str, extra: str) -> None:
        self._close_implicit(None)
        caller = self.stack[-1].fn if self.stack else None
        if name == "std_function" and caller is not None:
            # Without inlining, the caller calls std::function::operator()
            # itself, which calls the invoker.
            direct = [owner for instruction, owner in self.facts.branch_targets(caller, jumps=False)
                      if _STD_FUNCTION_CALL.match(self.facts.functions[owner].name)]
            callee = direct[0] if direct else self.facts.owner(self._static(extra))
        elif int(extra, 16) != 0:
            callee = self.facts.owner(self._static(extra))
            if callee != self._static(extra):
                raise ModelError(f"{name} at {extra} is not the start of a function")
        else:
            callee = self._va(name)
        self._push_call(callee, caller, pseudo=name)

    def _pseudo_return(self, name: str, _extra: str) -> None:
        self._close_implicit(None)
        if self.stack and self.stack[-1].pseudo == name:
            frame = self.stack.pop()
            self.events.append(("return", len(self.stack), frame.fn))
            self._finish_parents()
        # Otherwise the callee jumped on to a recorded function whose return
        # already closed the frame.

    def _caught(self, name: str, _extra: str) -> None:
        va = self._va(name)
        while self.stack and self.stack[-1].fn != va:
            frame = self.stack.pop()
            self.events.append(("unwind", len(self.stack), frame.fn))
        if not self.stack:
            raise ModelError(f"{name} caught, but no frame of it is open")
