"""The `xref` command: the user's words go to the helper as they are typed
(`run`), which parses them with the CLI's own definitions and answers with
the text to print; Tab completes from the same definitions. Only `xref
helper` (which helper to start) is gdb's own."""

import shlex

import gdb

from . import frontend
from .frontend import XrefError, write_lines
from .helper_client import display

HELPER_HELP = """xref helper                      show the command that starts the helper and whether it runs
xref helper COMMAND [ARG...]     start the helper with this command from now on,
                                 e.g. xref helper sudo -n /usr/local/bin/xref serve
xref helper --default            back to the default (build/helper/xref next to gdb-python/, then `xref` on
                                 PATH, with `serve`; or the XREF_HELPER environment variable)"""


def helper_command(words, state, lines):
    if words in (["--help"], ["-h"]):
        lines.append(HELPER_HELP)
        return
    if not words:
        argv, source = state.helper_command()
        lines.append("xref: helper command: " + display(argv) + source)
        helper = state.running_helper()
        if helper is not None:
            lines.append("xref: the helper runs as pid %d (xref %s)" % (helper.pid, helper.tool_version))
        else:
            lines.append("xref: the helper is not running; the next xref command that needs it starts it")
        return
    state.set_helper_command(None if words == ["--default"] else list(words))
    lines.append("xref: helper command: %s (starts at the next xref command that needs it)"
                 % display(state.helper_command()[0]))


def split_words(text):
    """The words as a POSIX shell splits them, as in the shell and in LLDB, so
    that a command from docs/probe.md means the same in gdb: inside '...' a
    backslash stays (gdb's own string_to_argv would take it, turning
    `'key == "a\\*"'`, exactly "a*", into the prefix "a*")."""
    try:
        return shlex.split(text) if text.strip() else []
    except ValueError as error:  # No closing quotation, No escaped character
        raise XrefError("xref: cannot split `xref %s` into words (%s); close each quote, as in a shell"
                        % (text.strip(), str(error)[0].lower() + str(error)[1:]))


def run_guarded(action):
    """Runs action(state, lines); prints its lines; raises XrefError with the failure's one line."""
    state = frontend.get()
    lines = []
    failure = None
    value = None
    try:
        value = action(state, lines)
    except XrefError as error:
        failure = error
    except gdb.error as error:
        failure = XrefError("xref: " + str(error))
    write_lines(lines)
    if failure is not None:
        raise failure
    return value


class XrefCommand(gdb.Command):
    """Live tracing with xref: what the process does next, in order, from eBPF uprobes, without stopping it.

xref trace --here          a window on this thread, until this call returns; it prints at the next stop
xref trace --start bp:N    a window at each hit of breakpoint N's locations
xref probe ADDRESS...      exact hit counts, callers and values of addresses; what changed prints at each stop
xref watch EXPR...         every write to a variable, field or buffer (-l, -s N, *buf@64); the writes print at each stop
xref profile [--duration 5s]   sample where the process spends its CPU until the next stop; the hottest functions print then
xref profile report|annotate|diff   the CLI's reports over the last capture (or a .xprof file)
xref show | sessions | stop [N] | break W:SEQ | maps | resolve | doctor | helper
`xref help` lists every command; `xref COMMAND --help` its options (docs/gdb.md)."""

    def __init__(self):
        super().__init__("xref", gdb.COMMAND_RUNNING)

    def invoke(self, argument, from_tty):
        self.dont_repeat()
        words = split_words(argument)
        if words and words[0] == "helper":
            run_guarded(lambda state, lines: helper_command(words[1:], state, lines))
            return
        run_guarded(lambda state, lines: state.run(words, lines))

    def complete(self, text, word):
        # gdb breaks words at '-' and ':' too: `word` may be the end of what is being typed.
        try:
            words = split_words(text)
        except XrefError:  # a quote still open while it is typed
            return gdb.COMPLETE_NONE
        partial = "" if not text or text[-1] == " " else words.pop()
        state = frontend.get()
        try:
            helper = state.helper([])
            reply = helper.request("complete", {"argv": words, "partial": partial,
                                                "context": {"pid": frontend.debugger_context.process_id() or 0}},
                                   frontend.QUICK_TIMEOUT)
        except XrefError:
            return gdb.COMPLETE_NONE
        candidates = reply.result.get("candidates") or [] if reply.ok else []
        if not words:
            candidates = sorted(set(candidates + ["helper"]))
            candidates = [candidate for candidate in candidates if candidate.startswith(partial)]
        cut = len(partial) - len(word or "")
        return [candidate[cut:] for candidate in candidates]


def run(*words):
    """Python API: runs `xref WORDS...`, prints its text, returns the helper's answer (a dict)."""
    return run_guarded(lambda state, lines: state.run([str(word) for word in words], lines))
