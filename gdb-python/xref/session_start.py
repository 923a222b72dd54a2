"""What starting any session (trace, probe) shares: a process to start it
on, the helper's refusal as one line, and the record of a started session."""

import gdb

from . import debugger_context
from .state import XrefError


def check_process(words):
    """A session needs a process: gdb's (a program, run or attached) or --pid's. Raises XrefError."""
    if not debugger_context.executable() and "--pid" not in words:
        raise XrefError("xref: no program: load one with `file PATH` and run or attach")
    if debugger_context.process_id() is None and "--pid" not in words:
        raise XrefError("xref: no live process: `run` or `attach` first")


def reply_failure(reply):
    message = "xref: " + reply.message
    column = reply.error.get("column") if isinstance(reply.error, dict) else None
    if isinstance(column, int) and column > 0:
        message += " (column %d)" % column
    if reply.hint:
        message += "; " + reply.hint
    return XrefError(message)


def help_text(reply, lines):
    """True when the words asked for --help: the helper's text is in `lines`."""
    if "help" not in reply.result:
        return False
    lines.append(str(reply.result.get("help", "")).rstrip("\n"))
    return True


def warning_lines(reply, lines):
    for warning in reply.result.get("warnings") or []:
        if isinstance(warning, str):
            lines.append("xref: warning: " + warning)


def new_session(state, reply, command, words):
    """The record of a session session.start started: its words, process and backend."""
    session = state.add_session(reply.result.get("session", 0))
    session.command = command
    session.words = " ".join([command] + list(words))
    session.pid = debugger_context.process_id() or 0
    session.inferior = gdb.selected_inferior().num
    session.backend = reply.result.get("backend") or "?"
    for live in reply.result.get("probe_sites") or []:
        try:
            session.probe_sites.add(int(str(live), 16))
        except ValueError:
            pass
    return session
