"""xref break W:SEQ: a gdb breakpoint where event SEQ of window W happened:
the call site of an entry (its target when it has none), the probed
instruction of a return."""

import gdb

from . import gdb_symbols
from .commands import Subcommand, wants_help
from .show import parse_number
from .state import XrefError
from .window_render import event_address

USAGE = "xref: usage: xref break W:SEQ [--session N]"


def parse_reference(text):
    window, colon, seq = text.partition(":")
    if not colon:
        raise XrefError("xref: '%s' is not W:SEQ (window:event, as the first column of `xref show` prints it)" % text)
    return parse_number(window, "window"), parse_number(seq, "event")


def find_event(state, window_id, seq, only):
    for session in reversed(list(state.sessions.values())):
        if only is not None and session.id != only:
            continue
        for record in session.windows:
            if record.window.get("window_id") != window_id:
                continue
            for event in record.window.get("events") or []:
                if event.get("seq") == seq:
                    return session, record.window, event
    return None, None, None


def set_break(words, state, lines):
    only = None
    text = ""
    index = 0
    while index < len(words):
        if words[index] == "--session" and index + 1 < len(words):
            index += 1
            only = parse_number(words[index], "--session")
        elif not text:
            text = words[index]
        else:
            raise XrefError(USAGE)
        index += 1
    if not text:
        raise XrefError(USAGE)
    window_id, seq = parse_reference(text)
    session, window, event = find_event(state, window_id, seq, only)
    if event is None:
        raise XrefError("xref: no event %s%s; `xref show --all` lists the windows kept"
                        % (text, " in session %d" % only if only is not None else ""))
    kind = event.get("kind", "")
    if kind == "entry":
        address, what = event_address(event, "call_site"), "the call site of"
        if not address.known():
            address, what = event_address(event, "target"), "the entry of"
    else:
        address, what = event_address(event, "probe"), "the %s of" % kind
    symbols = gdb_symbols.GdbSymbols(window)
    live = symbols.live(address)
    if live is None:
        raise XrefError("xref: the address of event %s is not loaded in the process any more" % text)
    # A debugger int3 over a probe's would outlive the probe.
    probe = symbols.live(event_address(event, "probe"))
    if not session.ended and probe == live:
        state.await_finished_sessions(lines)
    if not session.ended and probe == live:
        raise XrefError("xref: session %d has a probe at %#x: a breakpoint there would be swallowed; "
                        "`xref stop %d` first" % (session.id, live, session.id))
    try:
        breakpoint = gdb.Breakpoint("*%#x" % live)
    except (gdb.error, RuntimeError) as error:
        raise XrefError("xref: gdb could not set a breakpoint at %#x: %s" % (live, error))
    function = symbols.describe(event_address(event, "target")).function or event.get("symbol") or "?"
    where = gdb_symbols.describe_address(live)
    lines.append("Breakpoint %d: %#x%s (%s %s, event %s)" % (breakpoint.number, live, " " + where if where else "",
                                                           what, function, text))
    return breakpoint.number


class BreakCommand(Subcommand):
    """Set a gdb breakpoint where a traced event happened: the call site of an entry.

xref break W:SEQ [--session N]
  W:SEQ        window W, event SEQ (the first column of `xref show`); an entry breaks at its
               call site (or its target when it has none), a return at the instruction it was seen at
  --session N  the session of window W (default: the newest session that has a window W)"""

    name = "break"
    FLAGS = ("--session", "--help")

    def run(self, words, state, lines):
        if wants_help(words):
            lines.append(self.__doc__)
            return
        set_break(words, state, lines)
