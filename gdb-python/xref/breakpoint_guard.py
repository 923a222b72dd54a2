"""A breakpoint that comes to an address where a running session has a
uprobe: created, enabled, moved, or resolved again after a library load.
The two do not mix: the uprobe swallows the breakpoint, and gdb saves the
uprobe's int3 as the byte to put back, which kills the process later (with
SIGTRAP) once the uprobe is gone. The other order (probing where a
breakpoint is) is guarded when the session starts (disabled_breakpoints.py).

So the location goes off, the session takes its uprobes there out
(session.release, answered once they are out of the target), and the
location comes back: gdb then inserts its int3 over the file's own byte.
In all-stop mode gdb writes its breakpoints only when it resumes, so the
off-and-on changes nothing in the target then; it matters where a debugger
writes at once (always-inserted, non-stop, LLDB)."""

import gdb

from . import frontend
from .frontend import SESSION_TIMEOUT, write_lines

# Breakpoint kinds whose locations are code addresses (watchpoints have none).
CODE_KINDS = (gdb.BP_BREAKPOINT, gdb.BP_HARDWARE_BREAKPOINT)

_busy = False  # the guard's own enable/disable raises breakpoint_modified again


def enabled_locations(breakpoint):
    """The enabled locations of an enabled code breakpoint, with an address."""
    try:
        if not breakpoint.is_valid() or not breakpoint.enabled or breakpoint.type not in CODE_KINDS:
            return []
        return [location for location in breakpoint.locations
                if location.enabled and isinstance(location.address, int)]
    except (gdb.error, RuntimeError, AttributeError):
        return []


def guard(breakpoint, lines):
    global _busy
    state = frontend.get()
    helper = state.running_helper()
    if _busy or helper is None:
        return
    locations = enabled_locations(breakpoint)
    if not locations:
        return
    for session in state.running_sessions():
        taken = [location for location in locations if location.address in session.probe_sites]
        if not taken:
            continue
        addresses = sorted({location.address for location in taken})
        _busy = True
        try:
            for location in taken:
                location.enabled = False
            reply = helper.request("session.release", {"session": session.id,
                                                       "addresses": ["%#x" % address for address in addresses],
                                                       "reason": "breakpoint %d" % breakpoint.number},
                                   SESSION_TIMEOUT)
            for location in taken:
                location.enabled = True
        finally:
            _busy = False
        if not reply.ok:
            lines.append("xref: warning: session %d did not take its probes out of breakpoint %d's address %s: %s"
                         % (session.id, breakpoint.number, ", ".join(hex(a) for a in addresses), reply.message))
            continue
        session.probe_sites.difference_update(addresses)
        lines.extend(reply.result.get("text") or [])
        if reply.result.get("ended"):
            state.end_session(session.id)
            state.apply_restores(lines)


def _guarded(breakpoint):
    lines = []
    try:
        guard(breakpoint, lines)
    except Exception as error:  # an event handler must not break gdb's command
        lines.append("xref: internal error guarding breakpoint %s: %s" % (getattr(breakpoint, "number", "?"), error))
    write_lines(lines)


def connect():
    gdb.events.breakpoint_created.connect(_guarded)
    gdb.events.breakpoint_modified.connect(_guarded)
