"""xref show [--session N] [--all] [--json]: the windows the helper sent,
rendered with gdb's symbols, and the counts of probe sessions. They also
print by themselves at each stop."""

import json

from . import gdb_symbols, probe_render
from .commands import Subcommand, wants_help
from .state import XrefError


def parse_number(text, what):
    if not text.isdigit():
        raise XrefError("xref: %s: '%s' is not a number (column %d)" % (
            what, text, next((index + 1 for index, char in enumerate(text) if not char.isdigit()), 1)))
    return int(text)


def parse_show_options(words):
    options = {"session": None, "all": False, "json": False}
    index = 0
    while index < len(words):
        word = words[index]
        if word in ("--all", "--json"):
            options[word[2:]] = True
        elif word == "--session" and index + 1 < len(words):
            index += 1
            options["session"] = parse_number(words[index], "--session")
        else:
            raise XrefError("xref: unexpected word '%s'; usage: xref show [--session N] [--all] [--json]" % word)
        index += 1
    return options


def print_window(state, session, record, as_json, lines):
    if as_json:
        lines.append(json.dumps({"session": session.id, "window": record.window}))
        record.shown = True
    else:
        state.render(session, record, lines)


def show_probe_sessions(state, options, lines):
    """Each probe session's latest document: running ones always, an ended
    one's final document once (every one with --all). Returns how many printed."""
    describe = gdb_symbols.describer()
    printed = 0
    for session in state.sessions.values():
        if session.command != "probe" or session.document is None:
            continue
        if options["session"] is not None and session.id != options["session"]:
            continue
        if session.ended and session.document_shown and not options["all"]:
            continue
        if options["json"]:
            lines.append(json.dumps({"session": session.id, "document": session.document}))
        else:
            lines.extend(probe_render.show_lines(
                session.id, session.document, "ended " + session.stop_reason if session.ended else "running",
                session.addresses, describe))
        session.document_shown = True
        session.probe_updates = []  # this shows all they would say at the next stop
        printed += 1
    return printed


def show(words, state, lines):
    options = parse_show_options(words)
    only = options["session"]
    if only is not None and state.find_session(only) is None:
        raise XrefError("xref: no session %d; `xref sessions` lists them" % only)
    state.await_pending_windows(lines)
    if options["all"]:
        for session in state.sessions.values():
            if only is not None and session.id != only:
                continue
            if session.windows_dropped:
                lines.append("xref: session %d: the %d oldest windows are no longer kept"
                             % (session.id, session.windows_dropped))
            for record in session.windows:
                print_window(state, session, record, options["json"], lines)
        show_probe_sessions(state, options, lines)
        state.print_end_lines(lines, only, again=True)
        return
    windows = state.unshown_windows(only)
    for session, record in windows:
        print_window(state, session, record, options["json"], lines)
    probes = show_probe_sessions(state, options, lines)
    state.print_end_lines(lines, only)
    if not windows and not probes and not options["json"]:
        running = len(state.running_sessions())
        lines.append("xref: no new windows (%d session%s running; `xref show --all` prints the earlier ones)"
                     % (running, "" if running == 1 else "s"))


class ShowCommand(Subcommand):
    """Print the trace windows that closed since they were last shown, and the counts of probe sessions.

Windows, and what changed in a probe session, also print by themselves when the process stops.

xref show [--session N] [--all] [--json]
  --session N   only session N's windows or counts
  --all         every window kept, shown before or not; the final counts of every ended probe session
  --json        one JSON line per window ({"session", "window"}, the live_trace window schema)
                and per probe session ({"session", "document"}, the live_probe document)
Each event line starts with W:SEQ (window:event) for `xref break W:SEQ`."""

    name = "show"
    FLAGS = ("--session", "--all", "--json", "--help")

    def run(self, words, state, lines):
        if wants_help(words):
            lines.append(self.__doc__)
            return
        show(words, state, lines)
