"""xref's windows against the expected ones, one verdict per window."""
from __future__ import annotations

from .binary_facts import BinaryFacts
from .expected import ExpectedWindow

Event = tuple[str, int, object, bool]  # kind, depth, function (VA, or "module:VA"), tail_call


def actual_events(window: dict) -> list[Event]:
    events = []
    for event in window.get("events", []):
        kind = event.get("kind")
        if kind == "stop":  # the window's end marker, not a call
            continue
        target = int(event["target_va"], 16)
        if event.get("module"):
            target = f"{event['module']}:{event['target_va']}"
        events.append((kind, event.get("depth"), target, kind == "entry" and event.get("tail_call") is True))
    return events


def window_request_id(window: dict) -> int | None:
    for fetch in window.get("start_fetches", []):
        if fetch.get("name") == "id" and fetch.get("value") is not None:
            return int(fetch["value"], 16)
    return None


def function_name(va: int, facts: BinaryFacts) -> str:
    """nm's name of the function starting at va, else the VA and where it lies."""
    function = facts.functions.get(va)
    if function is not None:
        return function.name
    owner = facts.owner(va)
    return f"{va:#x} (inside {facts.functions[owner].name})" if owner is not None else hex(va)


def describe(event: Event | None, facts: BinaryFacts) -> str:
    if event is None:
        return "(nothing)"
    kind, depth, target, tail = event
    name = function_name(target, facts) if isinstance(target, int) else target
    mark = {"entry": ">", "return": "<", "tail_exit": "< [tail]", "unwound": "< [unwound]"}.get(kind, kind)
    return f"{depth} {mark} {name}{' [tail call]' if tail else ''}"


def compare_window(expected: ExpectedWindow, window: dict | None, facts: BinaryFacts) -> str | None:
    """None when equal, else one line saying how the window is wrong."""
    if window is None:
        return "no window"
    problems = []
    if window.get("status") != expected.status:
        problems.append(f"status {window.get('status')} (expected {expected.status})")
    if window.get("possible_loss") or window.get("lost_events"):
        problems.append("events lost")
    got = actual_events(window)
    want = expected.events
    if got != want:
        index = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]), min(len(got), len(want)))
        problems.append(f"event {index}: got {describe(got[index] if index < len(got) else None, facts)}, "
                        f"expected {describe(want[index] if index < len(want) else None, facts)} "
                        f"({len(got)} events, expected {len(want)})")
    return "; ".join(problems) or None


def render_window(events: list[Event], facts: BinaryFacts) -> str:
    return "\n".join("    " + describe(event, facts) for event in events)
