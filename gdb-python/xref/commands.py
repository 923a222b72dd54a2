"""The `xref` prefix command and what every subcommand does around its own
work: split the words, take what the helper sent, print, turn failures into
one gdb error line."""

import gdb

from . import state as state_module
from .state import XrefError, write_lines


def wants_help(words):
    return "--help" in words or "-h" in words


def show_gone_processes(state, lines):
    # The windows of a session whose process is gone get no stop to print at:
    # whatever xref command comes next shows them.
    state.absorb(lines)
    state.show_gone_processes(lines)


def run_guarded(action):
    """Runs action(state, lines) -> value with the usual framing; prints its
    lines; raises XrefError with the failure's one line."""
    state = state_module.get()
    lines = []
    state.absorb(lines)
    failure = None
    value = None
    try:
        value = action(state, lines)
    except XrefError as error:
        failure = error
    except gdb.error as error:
        failure = XrefError("xref: " + str(error))
    show_gone_processes(state, lines)
    write_lines(lines)
    if failure is not None:
        raise failure
    return value


class Subcommand(gdb.Command):
    """Base of `xref NAME`: the class docstring is gdb's help text, FLAGS
    the completion list."""

    name = ""
    FLAGS = ()

    def __init__(self):
        super().__init__("xref " + self.name, gdb.COMMAND_RUNNING)

    def invoke(self, argument, from_tty):
        self.dont_repeat()
        words = gdb.string_to_argv(argument)
        run_guarded(lambda state, lines: self.run(words, state, lines))

    def run(self, words, state, lines):
        raise NotImplementedError

    def complete(self, text, word):
        # gdb breaks words at '-' too: `word` may be the end of the flag being typed.
        token = text.split(" ")[-1]
        if word is None or not token.startswith("-"):
            return gdb.COMPLETE_NONE
        typed = token[:len(token) - len(word)]
        return [flag[len(typed):] for flag in self.FLAGS if flag.startswith(token)]


class XrefCommand(gdb.Command):
    """Live tracing with xref: ordered windows of what the process does next, from eBPF uprobes, without stopping it.

xref trace --here          a window on this thread, until this call returns; it prints at the next stop
xref trace --start bp:N    a window at each hit of breakpoint N's locations
xref probe ADDRESS...      exact hit counts, callers and values of addresses; what changed prints at each stop
See docs/gdb.md; `help xref SUBCOMMAND` for each subcommand."""

    def __init__(self):
        super().__init__("xref", gdb.COMMAND_RUNNING, gdb.COMPLETE_NONE, True)

    def invoke(self, argument, from_tty):
        self.dont_repeat()
        if argument.strip():
            raise XrefError("xref: unknown subcommand '%s'; `help xref` lists them" % gdb.string_to_argv(argument)[0])
        gdb.execute("help xref", from_tty)
