"""xref trace WORDS...: starts a trace session in the helper with the
user's words and what gdb knows (process, executable, selected frame,
breakpoints), then returns at once; windows print at the next stop."""

import gdb

from . import debugger_context, gdb_symbols
from .commands import Subcommand, run_guarded, wants_help
from .disabled_breakpoints import DisabledForStart, breakpoints_at
from .session_start import check_process, help_text, new_session, reply_failure, warning_lines
from .state import SESSION_TIMEOUT, XrefError

DISABLED_REASON = (" disabled while the trace is armed: a uprobe at the same address would swallow it; "
                   "re-enabled when the trace ends")


def start_breakpoint(words):
    """N of `--start bp:N` (or --start=bp:N) in the words."""
    for index, word in enumerate(words):
        value = ""
        if word == "--start" and index + 1 < len(words):
            value = words[index + 1]
        elif word.startswith("--start="):
            value = word[len("--start="):]
        if value.startswith("bp:") and value[3:].isdigit() and 0 < int(value[3:]) <= 2 ** 31 - 1:
            return int(value[3:])
    return None


def window_limit(words):
    """The windows after which the session ends by itself: --max-windows N, else 1 with --here, else 0 (none)."""
    for index, word in enumerate(words):
        value = words[index + 1] if word == "--max-windows" and index + 1 < len(words) else (
            word[len("--max-windows="):] if word.startswith("--max-windows=") else None)
        if value is not None:
            return int(value) if value.isdigit() else 0
    return 1 if "--here" in words else 0


class Preparation:
    """What gdb changed for a session before starting it, undone when the start fails."""

    def __init__(self):
        self.disabled = DisabledForStart()  # --start bp:N's breakpoint
        self.stop_at_end = None  # gdb.Breakpoint
        self.stop_at_end_description = ""

    def undo(self):
        self.disabled.undo()
        if self.stop_at_end is not None and self.stop_at_end.is_valid():
            self.stop_at_end.delete()
        self.stop_at_end = None


def set_stop_at_end(here):
    """--stop-at-end: a temporary breakpoint on the selected thread at the
    selected frame's return address, taken only when the stack pointer is
    back at the frame's CFA, i.e. when this very frame returned (not a
    recursive call returning to the same address). Set before the session
    starts, so the helper's collision check sees it."""
    caller = debugger_context.caller_of(gdb.selected_frame())
    if caller is None:
        raise XrefError("xref: --stop-at-end: the selected frame has no caller to return to")
    return_address = caller.pc()
    try:
        breakpoint = gdb.Breakpoint("*%#x" % return_address, temporary=True)
    except (gdb.error, RuntimeError) as error:
        raise XrefError("xref: --stop-at-end: gdb could not set a breakpoint at %#x: %s" % (return_address, error))
    breakpoint.thread = here.thread_number
    breakpoint.condition = "$rsp == %#x" % here.cfa
    where = gdb_symbols.describe_address(return_address)
    description = ("xref: breakpoint %d (temporary, thread %d) at the return address %#x%s stops the process when "
                   "the window closes" % (breakpoint.number, here.thread_number, return_address,
                                          " (" + where + ")" if where else ""))
    return breakpoint, description


def start(words, state, lines):
    """Starts a session; returns its id (None for --help). Raises XrefError."""
    here = None
    if not wants_help(words):
        check_process(words)
        if "--here" in words:
            here = debugger_context.here_frame()
    helper = state.helper(lines)

    # Breakpoint N of --start bp:N goes off before the probes go in: a
    # debugger that removes its int3 after the uprobe's writes the original
    # byte over it.
    preparation = Preparation()
    number = start_breakpoint(words)
    if number is not None and not wants_help(words):
        preparation.disabled.disable([number])
    if here is not None:
        # The breakpoint stopped at, in case the trace probes its location.
        preparation.disabled.disable_quietly(breakpoints_at(here.pc))
    if here is not None and "--stop-at-end" in words:
        try:
            preparation.stop_at_end, preparation.stop_at_end_description = set_stop_at_end(here)
        except XrefError:
            preparation.undo()
            raise
    context = debugger_context.request_context(here)
    reply = helper.request("session.start", {"argv": ["trace"] + list(words), "context": context}, SESSION_TIMEOUT)
    stop_at_end_number = preparation.stop_at_end.number if preparation.stop_at_end is not None else 0
    if not reply.ok or "help" in reply.result:
        preparation.undo()
    if not reply.ok:
        if stop_at_end_number and ("breakpoint %d." % stop_at_end_number) in reply.message:
            reply.hint = ("breakpoint %d was --stop-at-end's stop at the return address, which this trace probes "
                          "(e.g. the return site of a recursive call): drop --stop-at-end; the window still prints "
                          "at the next stop" % stop_at_end_number)
        for disabled in preparation.disabled.numbers:
            lines.append("xref: breakpoint %d re-enabled: the trace did not start" % disabled)
        raise reply_failure(reply)
    if help_text(reply, lines):
        return None
    session = new_session(state, reply, "trace", words)
    session_id = session.id
    session.probes = reply.result.get("probes", 0)
    session.max_windows = window_limit(words)
    lines.append("xref: session %d tracing PID %d: %d probes (%s); windows print at the next stop (xref show)"
                 % (session_id, session.pid, session.probes, session.backend))
    if here is not None and isinstance(reply.result.get("here_window"), int):
        session.here_window = reply.result["here_window"]
        lines.append("xref: window %d is open on thread %d until the selected frame (CFA %#x) returns"
                     % (session.here_window, here.tid, here.cfa))
    warning_lines(reply, lines)
    preparation.disabled.hand_over(session, reply.result.get("breakpoints_to_disable") or [], lines, DISABLED_REASON,
                                   "start probes")
    if preparation.stop_at_end is not None:
        session.stop_at_end_breakpoint = stop_at_end_number
        lines.append(preparation.stop_at_end_description)
    return session_id


class TraceCommand(Subcommand):
    """Trace what happens next, in order, without stopping the process.

Ordered, thread-scoped windows of calls and returns from eBPF uprobes. Returns
at once; windows print at the next stop (or `xref show`).

xref trace --here [--stop-at-end] [OPTIONS]
xref trace --start FUNCTION|bp:N [--start-filter EXPR] [--fetch SPEC] [OPTIONS]
  --here          open a window on the selected thread now, until the selected frame returns
  --stop-at-end   with --here: stop the process when that window closes
  --start bp:N    open a window at each hit of breakpoint N's locations (N is disabled meanwhile)
  --functions, --callees-of FN --depth N, --all-calls-in FN, --fetch-at, --fetch-ret, --max-windows, ...
                  as in the shell's `xref trace` (docs/trace.md); `xref trace --help` lists every option"""

    name = "trace"
    FLAGS = ("--help", "--pid", "--bin", "--start", "--here", "--stop-at-end", "--allow-breakpoint-collision",
             "--start-filter", "--fetch", "--stop", "--stop-return", "--functions", "--callees-of", "--depth",
             "--all-calls-in", "--fetch-at", "--fetch-ret", "--max-windows", "--max-events", "--duration-ms",
             "--ringbuf-bytes", "--backend", "--uretprobes")

    def run(self, words, state, lines):
        start(words, state, lines)


def trace(*words):
    """Python API: starts a session like `xref trace WORDS...`; returns its id, raises xref.XrefError."""
    return run_guarded(lambda state, lines: start([str(word) for word in words], state, lines))
