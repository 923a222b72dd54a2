"""xref in gdb: the `xref` command (docs/gdb.md) and a small API for gdb
scripts:

    import xref
    session = xref.trace("--here")        # like `xref trace --here`; raises xref.XrefError
    gdb.execute("continue")
    for window in xref.windows(session):  # every window kept, after a drain
        print(window.id, window.status, [event["kind"] for event in window.events])
    probe = xref.probe("svc::validate", "--callers", "--duration-ms", "0")  # like `xref probe ...`
"""

from . import state as _state
from .probe import probe
from .state import XrefError
from .trace import trace
from .window_render import render_window, window_status_text

__all__ = ["XrefError", "Window", "trace", "probe", "probe_document", "windows", "drain", "install"]


class Window:
    """One trace window: `json` is the live_trace window (docs/trace.md)."""

    def __init__(self, session, window):
        self.session = session
        self.json = window
        self.id = window.get("window_id")
        self.tid = window.get("tid")
        self.status = window.get("status")
        self.complete = window_status_text(window) == "complete"
        self.events = window.get("events") or []

    def text(self):
        """The lines `xref show` prints for this window."""
        from .gdb_symbols import GdbSymbols
        return render_window(self.json, self.session, GdbSymbols(self.json))

    def __repr__(self):
        return "<xref.Window %d:%s session %d, %d events, %s>" % (
            self.id or 0, self.tid, self.session, len(self.events), window_status_text(self.json))


def drain():
    """Asks every running session for the windows that closed so far; returns how many are not shown yet."""
    from .commands import run_guarded

    def action(state, lines):
        state.await_pending_windows(lines)
        state.absorb(lines)
        return len(state.unshown_windows())
    return run_guarded(action)


def probe_document(session):
    """The latest live_probe document of probe session `session` (docs/probe.md; the
    final one once it ended), after a drain; None before its first drain."""
    drain()
    record = _state.get().find_session(session)
    return record.document if record is not None else None


def windows(session=None):
    """Every window kept (of one session, or of all), oldest first, after a drain."""
    drain()
    found = []
    for record_session in _state.get().sessions.values():
        if session is not None and record_session.id != session:
            continue
        found.extend((record.arrival, Window(record_session.id, record.window)) for record in record_session.windows)
    return [window for _, window in sorted(found, key=lambda pair: pair[0])]


_installed = False


def install():
    """Adds the `xref` commands and connects gdb's events; done once."""
    global _installed
    if _installed:
        return
    _installed = True
    from . import break_command, breakpoint_guard, commands, helper_command, one_shot, sessions, show, stop, stop_events
    from .probe import ProbeCommand
    from .trace import TraceCommand
    commands.XrefCommand()
    for command in (TraceCommand, ProbeCommand, sessions.SessionsCommand, show.ShowCommand, stop.StopCommand,
                    one_shot.DoctorCommand, one_shot.MapsCommand, one_shot.ResolveCommand,
                    break_command.BreakCommand, helper_command.HelperCommand):
        command()
    stop_events.connect()
    breakpoint_guard.connect()
