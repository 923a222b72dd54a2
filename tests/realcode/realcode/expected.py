"""What a correct xref window shows, derived from the real frame events.

An expected event is (kind, depth, function VA, tail_call): kind `entry`,
`return`, `tail_exit` or `unwound`; depth the number of frames below it that
the trace has seen open; tail_call is compared for entries only.

--functions (traced set T, the start among them):
  a call of a function in T is an entry; a ret of a function in T a return;
  a jump out of a function in T a tail_exit, followed, when the target is in
  T too, by its entry marked tail_call at the same depth. A frame counts
  towards depth from the first traced entry on it until it really returns,
  also after it jumped on into untraced code; unwinding shows it as unwound
  (named after the last traced function seen on it).

--callees-of / --all-calls-in (expanded set E, start S):
  S's entry; every call made from a function in E is an entry (indirect ones
  named after the function entered); a jump from a function in E is an entry
  marked tail_call at the jumping frame's depth; a seen frame's return is a
  return named after the last function seen on it; unwinding as above.

A window begins with the start's entry and ends when that frame returns
(status complete) or is unwound (status unwound).
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ExpectedWindow:
    status: str
    events: list[tuple[str, int, int, bool]] = field(default_factory=list)


def _window_slice(events: list[tuple], start: int) -> list[tuple] | None:
    """The events from the first call of start to the end of its frame."""
    begin = next((i for i, e in enumerate(events) if e[0] == "call" and e[2] == start), None)
    if begin is None:
        return None
    level = events[begin][1]
    for index in range(begin + 1, len(events)):
        event = events[index]
        if event[0] in ("return", "unwind") and event[1] == level:
            return events[begin:index + 1]
    raise ValueError("the start frame never ends")


class _Frames:
    """Per stack level inside the window: seen or not, and under which name."""

    def __init__(self, base: int):
        self.base = base
        self.seen: dict[int, bool] = {}
        self.name: dict[int, int] = {}

    def depth(self, level: int) -> int:
        return sum(1 for lvl, seen in self.seen.items() if seen and self.base <= lvl < level)

    def close(self, level: int) -> None:
        self.seen.pop(level, None)
        self.name.pop(level, None)


def functions_window(events: list[tuple], start: int, traced: set[int]) -> ExpectedWindow | None:
    window = _window_slice(events, start)
    if window is None:
        return None
    frames = _Frames(window[0][1])
    result = ExpectedWindow(status="complete")
    for event in window:
        kind, level = event[0], event[1]
        if kind == "call":
            callee = event[2]
            frames.seen[level] = callee in traced
            if callee in traced:
                frames.name[level] = callee
                result.events.append(("entry", frames.depth(level), callee, False))
        elif kind == "tail":
            source, target = event[2], event[3]
            seen = frames.seen.get(level, False)
            if seen and source in traced:
                result.events.append(("tail_exit", frames.depth(level), source, False))
            if target in traced:
                result.events.append(("entry", frames.depth(level), target, seen))
                frames.seen[level] = True
                frames.name[level] = target
        elif kind == "return":
            if event[2] in traced:
                result.events.append(("return", frames.depth(level), event[2], False))
            frames.close(level)
        elif kind == "unwind":
            if frames.seen.get(level):
                result.events.append(("unwound", frames.depth(level), frames.name[level], False))
            frames.close(level)
            if level == frames.base:
                result.status = "unwound"
    return result


def call_site_window(events: list[tuple], start: int, expanded: set[int]) -> ExpectedWindow | None:
    window = _window_slice(events, start)
    if window is None:
        return None
    frames = _Frames(window[0][1])
    result = ExpectedWindow(status="complete")
    for event in window:
        kind, level = event[0], event[1]
        if kind == "call":
            callee, caller = event[2], event[3]
            seen = level == frames.base or callee == start or (caller in expanded and level > frames.base)
            frames.seen[level] = seen
            if seen:
                frames.name[level] = callee
                result.events.append(("entry", frames.depth(level), callee, False))
        elif kind == "tail":
            source, target = event[2], event[3]
            if source in expanded:
                result.events.append(("entry", frames.depth(level), target, True))
                frames.seen[level] = True
                frames.name[level] = target
        elif kind in ("return", "unwind"):
            if frames.seen.get(level):
                name = "return" if kind == "return" else "unwound"
                result.events.append((name, frames.depth(level), frames.name[level], False))
            frames.close(level)
            if kind == "unwind" and level == frames.base:
                result.status = "unwound"
    return result
