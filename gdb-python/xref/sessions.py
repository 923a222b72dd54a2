"""xref sessions: the sessions of this gdb, running ones with the helper's
counts. A probe session has no windows or events: its counts are `xref show`'s."""

from .commands import Subcommand, wants_help
from .state import QUICK_TIMEOUT, XrefError
from .session_start import reply_failure


class SessionsCommand(Subcommand):
    """List the sessions started from this gdb.

xref sessions"""

    name = "sessions"
    FLAGS = ("--help",)

    def run(self, words, state, lines):
        if wants_help(words):
            lines.append(self.__doc__)
            return
        if words:
            raise XrefError("xref: `xref sessions` takes no arguments")
        live = {}
        helper = state.running_helper()
        if helper is not None:
            reply = helper.request("sessions", {}, QUICK_TIMEOUT)
            if not reply.ok:
                raise reply_failure(reply)
            for entry in reply.result.get("sessions") or []:
                live[entry.get("session", 0)] = entry
        if not state.sessions:
            lines.append("xref: no sessions; start one with `xref trace` or `xref probe`")
            return
        row = "%-8s %-24s %-8s %-13s %8s %8s  %s"
        lines.append(row % ("session", "state", "pid", "backend", "windows", "events", "command"))
        for session in state.sessions.values():
            status = "ended (%s)" % session.stop_reason if session.ended else "running"
            windows = len(session.windows) + session.windows_dropped
            events = 0
            if session.id in live:
                status = live[session.id].get("state", status)
                windows = live[session.id].get("windows", windows)
                events = live[session.id].get("events", 0)
            elif isinstance(session.summary, dict):
                events = session.summary.get("events", 0)
            if session.command == "probe":
                windows = events = "-"
            lines.append(row % (session.id, status, session.pid, session.backend, windows, events, session.words))
