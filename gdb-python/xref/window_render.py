"""Text of one trace window (the `live_trace` window schema, docs/trace.md),
named with the debugger's symbols: one line per event, indented by depth,
each prefixed by `W:SEQ` so `xref break W:SEQ` can refer to it. The same
shape as lldb-plugin/window_render.cpp. The debugger is reached only through
a symbols object (live, describe, breakpoints_at), so this runs without gdb."""

import json


class EventAddress:
    """One address of an event: live when the window has a `*_live` field,
    static VA and module always ("" = the main executable)."""

    def __init__(self, live=None, static_va=None, module=""):
        self.live = live
        self.static_va = static_va
        self.module = module

    def known(self):
        return self.live is not None or self.static_va is not None


class CodePlace:
    def __init__(self, function="", offset=0, file_line=""):
        self.function = function  # demangled name, "" when unknown
        self.offset = offset  # from the function's start
        self.file_line = file_line  # "sample_service.c:172", "" without line info


def number(value):
    """An address as the helper writes it: "0x..." or decimal string, or an integer."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str):
        try:
            return int(value, 0)
        except ValueError:
            return None
    return None


def event_address(event, role):
    """`role` is "target", "call_site" or "probe"."""
    module = event.get("module") or ""
    if role == "call_site" and "call_site_module" in event:
        module = event.get("call_site_module") or ""
    return EventAddress(number(event.get(role + "_live")), number(event.get(role + "_va")), module)


def fetched_value_text(fetch):
    """One fetched value: signed ones in decimal, others as the helper wrote
    them (hex); None when the read failed (each caller says that its own way)."""
    signed = fetch.get("signed_value")
    if isinstance(signed, int) and not isinstance(signed, bool):
        return str(signed)
    if isinstance(fetch.get("value"), str):
        return fetch["value"]
    return None


def fetches_text(fetches):
    """"name=0x3e80 bps=25" (signed values in decimal, unreadable ones named)."""
    parts = []
    for fetch in fetches if isinstance(fetches, list) else []:
        value = fetched_value_text(fetch)
        if value is None:
            # The helper's error already says "unreadable: EFAULT (14)".
            error = fetch.get("error")
            if not isinstance(error, str):
                value = "<unreadable>"
            elif error.startswith("unreadable"):
                value = "<" + error + ">"
            else:
                value = "<unreadable: " + error + ">"
        parts.append(str(fetch.get("name", "")) + "=" + value)
    return " ".join(parts)


def _static_text(address):
    return (address.module + ":" if address.module else "") + hex(address.static_va)


def function_name(place, event, address):
    if place.function:
        return place.function
    if isinstance(event.get("symbol"), str) and event["symbol"]:
        return event["symbol"]
    if address.static_va is not None:
        return _static_text(address)
    if address.live is not None:
        return hex(address.live)
    return "?"


def place_text(place, address):
    """"handle_request+0x18 sample_service.c:172" for a place inside a function."""
    text = ""
    if place.function:
        text = place.function + ("+" + hex(place.offset) if place.offset else "")
    elif address.static_va is not None:
        text = _static_text(address)
    elif address.live is not None:
        text = hex(address.live)
    if place.file_line:
        text += (" " if text else "") + place.file_line
    return text


def _add_breakpoints(symbols, address, ids):
    live = symbols.live(address)
    if live is None:
        return
    for breakpoint_id in symbols.breakpoints_at(live):
        if breakpoint_id not in ids:
            ids.append(breakpoint_id)


def event_line(event, symbols):
    kind = event.get("kind", "")
    target = event_address(event, "target")
    call_site = event_address(event, "call_site")
    probe = event_address(event, "probe")
    depth = event.get("depth", 0)
    line = "  " * max(depth if isinstance(depth, int) else 0, 0)
    breakpoints = []
    target_place = symbols.describe(target)
    name = function_name(target_place, event, target)
    if kind == "entry":
        line += "> " + name
        if event.get("tail_call"):
            line += " [tail]"
        if event.get("indirect"):
            line += " [indirect]"
        if call_site.known():
            line += "  from " + place_text(symbols.describe(call_site), call_site)
            if event.get("call_site_verified") is False:
                line += " (unverified)"
        elif target_place.file_line:
            line += "  " + target_place.file_line
        _add_breakpoints(symbols, target, breakpoints)
        _add_breakpoints(symbols, call_site, breakpoints)
    elif kind in ("return", "tail_exit"):
        line += "< " + name + (" [tail]" if kind == "tail_exit" else "")
        if event.get("inferred"):
            line += " [inferred]"
        _add_breakpoints(symbols, probe, breakpoints)
    elif kind == "unwound":
        line += "~ " + name + " [unwound]"
    elif kind == "stop":
        where = probe if probe.known() else target
        line += "| stop at " + place_text(symbols.describe(where), where)
        _add_breakpoints(symbols, probe, breakpoints)
    else:
        line += "? " + str(kind) + " " + name
    values = fetches_text(event.get("fetches", []))
    if values:
        line += "  " + values
    for breakpoint_id in breakpoints:
        line += "  [bp %d]" % breakpoint_id
    return line


def window_status_text(window):
    """"complete", "incomplete (the process exited)", ..."""
    status = window.get("status", "")
    possible_loss = bool(window.get("possible_loss", False))
    if status == "complete" and not possible_loss:
        return "complete"
    why = {
        "truncated": "truncated: the start function was called again before it returned",
        "unwound": "unwound: the start frame was left by unwinding",
        "open_at_stop": "still open when the trace stopped",
        "target_exited": "the process exited",
        "unknown": "ended, but its end record was lost",
        "incomplete": "",
        "complete": "",
    }.get(status, status)
    if possible_loss:
        why += (", " if why else "") + "events may be missing"
    return "incomplete (" + why + ")"


def window_mark_text(window):
    """With --mark-file: 'mark "81"' ('?' after it when uncertain), 'mark (no match yet)', ...; else ''."""
    status = window.get("mark_status")
    if status is None:
        return ""
    if status == "matched":
        return "mark " + json.dumps(window.get("mark_match") or "", ensure_ascii=False) + (
            "" if window.get("mark_certain") else "?")
    if status == "no_match_yet":
        return "mark (no match yet)"
    if status == "unreadable":
        return "mark (unreadable: %s)" % window.get("mark_error", "")
    return "mark (%s)" % status


def _unsigned(value):
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def event_reference(window, event):
    """"W:SEQ" of an event."""
    return "%d:%d" % (_unsigned(window.get("window_id")) or 0, _unsigned(event.get("seq")) or 0)


def render_window(window, session, symbols):
    """The header line and one line per event."""
    events = window.get("events") or []
    lost = _unsigned(window.get("lost_events"))
    header = "window %d (session %d)  tid %d  %s  %d events  lost %s" % (
        _unsigned(window.get("window_id")) or 0, session, _unsigned(window.get("tid")) or 0,
        window_status_text(window), len(events), "?" if lost is None else str(lost))
    duration = _unsigned(window.get("duration_ns"))
    if duration is not None:
        header += "  %.3f ms" % (duration / 1e6)
    start_values = fetches_text(window.get("start_fetches", []))
    if start_values:
        header += "  " + start_values
    mark = window_mark_text(window)
    if mark:
        header += "  " + mark
    lines = [header]
    width = max((len(event_reference(window, event)) for event in events), default=0)
    for event in events:
        lines.append("  " + event_reference(window, event).ljust(width) + "  " + event_line(event, symbols))
    return lines
