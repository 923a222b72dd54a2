"""xref in gdb: the `xref` command (docs/gdb.md) and a small API for gdb
scripts:

    import xref
    session = xref.trace("--here")        # like `xref trace --here`; raises xref.XrefError
    gdb.execute("continue")
    for window in xref.windows(session):  # every window kept, after a drain
        print(window.id, window.status, [event["kind"] for event in window.events])
    probe = xref.probe("svc::validate", "--callers", "--duration-ms", "0")  # like `xref probe ...`
"""

import json

from .command import run, run_guarded
from .frontend import XrefError

__all__ = ["XrefError", "Window", "run", "trace", "probe", "watch", "probe_document", "windows", "drain", "install"]


class Window:
    """One trace window: `json` is the live_trace window (docs/trace.md)."""

    def __init__(self, session, window):
        self.session = session
        self.json = window
        self.id = window.get("window_id")
        self.tid = window.get("tid")
        self.status = window.get("status")
        self.complete = self.status == "complete" and not window.get("possible_loss", False)
        self.events = window.get("events") or []

    def __repr__(self):
        return "<xref.Window %d:%s session %d, %d events, %s>" % (
            self.id or 0, self.tid, self.session, len(self.events), self.status)


def _start(command, words):
    result = run_guarded(lambda state, lines: state.run([command] + [str(word) for word in words], lines))
    session = result.get("session") if isinstance(result, dict) else None
    return session.get("id") if isinstance(session, dict) else None


def trace(*words):
    """Starts a session like `xref trace WORDS...`; returns its id (None for --help)."""
    return _start("trace", words)


def probe(*words):
    """Starts a session like `xref probe WORDS...`; returns its id (None for --help)."""
    return _start("probe", words)


def watch(*words):
    """Starts a session like `xref watch WORDS...` (gdb evaluates its expressions); returns its id."""
    return _start("watch", words)


def _kept(session, what):
    """The JSON lines of `xref show --all --json` (every session's, or one's), without marking them shown."""
    words = ["show", "--all", "--json"] + (["--session", str(session)] if session is not None else [])
    result = run_guarded(lambda state, lines: state.run(words, [], {"peek": True}))
    found = []
    for line in result.get("text") or []:
        entry = json.loads(line)
        if what in entry:
            found.append(entry)
    return found


def windows(session=None):
    """Every window kept (of one session, or of all), oldest first, after a drain."""
    return [Window(entry["session"], entry["window"]) for entry in _kept(session, "window")]


def probe_document(session):
    """The latest live_probe document of probe session `session` (docs/probe.md), after a drain; None before."""
    documents = _kept(session, "document")
    return documents[-1]["document"] if documents else None


def drain():
    """Asks every running session for what it found so far; returns how many windows are not shown yet."""
    return len(windows())


_installed = False


def install():
    """Adds the `xref` command and connects gdb's events; done once."""
    global _installed
    if _installed:
        return
    _installed = True
    from . import breakpoint_guard, command, events
    command.XrefCommand()
    events.connect()
    breakpoint_guard.connect()
