"""xref probe WORDS...: starts a probe session in the helper with the user's
words and what gdb knows (process, executable, breakpoints), then returns at
once; what changed prints at each stop (state.py, probe_render.py)."""

import gdb

from . import debugger_context, probe_render, stop_signal
from .commands import Subcommand, run_guarded, wants_help
from .disabled_breakpoints import DisabledForStart
from .session_start import check_process, help_text, new_session, reply_failure, warning_lines
from .state import SESSION_TIMEOUT, XrefError, process_running

DISABLED_REASON = (" disabled while the probe is armed: a uprobe at the same address would swallow it; "
                   "re-enabled when the probe ends")


def stops_when(words):
    return any(word == "--stop-when" or word.startswith("--stop-when=") for word in words)


def catch_stop_signal():
    """A catchpoint tells --stop-when's SIG63 from the program's own (stop_signal.py)."""
    try:
        return stop_signal.arm()
    except gdb.error as error:
        raise XrefError("xref: --stop-when: gdb would not catch %s: %s" % (stop_signal.SIGNAL, error))


# The options of `xref probe` that take a value: a word after one is not an address.
VALUE_OPTIONS = ("--pid", "-p", "--bin", "-b", "--backend", "--fetch", "--filter", "--every", "--first",
                 "--until-hits", "--max-events", "--duration-ms", "--stop-when", "--skip", "--group-by", "--hist",
                 "--stacks", "--heartbeat-ms", "--mark-file", "--mark-regex", "--ringbuf-bytes")


def breakpoint_addresses(words):
    """N of each address that is `bp:N`: the helper probes breakpoint N's locations."""
    numbers = []
    after_option = False
    for word in words:
        if after_option:
            after_option = False
        elif word in VALUE_OPTIONS:
            after_option = True
        elif word.startswith("bp:") and word[3:].isdigit() and 0 < int(word[3:]) <= 2 ** 32 - 1:
            numbers.append(int(word[3:]))
    return numbers


def start(words, state, lines):
    """Starts a probe session; returns its id (None for --help). Raises XrefError."""
    numbers = []
    if not wants_help(words):
        check_process(words)
        numbers = breakpoint_addresses(words)
        if numbers and process_running():
            raise XrefError("xref: bp:%d: stop the process first: gdb turns a breakpoint off only while it is stopped"
                            % numbers[0])
    helper = state.helper(lines)
    catchpoint = catch_stop_signal() if not wants_help(words) and stops_when(words) else 0
    # Off before the probes go in (disabled_breakpoints.py says why).
    disabled = DisabledForStart()
    disabled.disable(numbers)
    reply = helper.request("session.start", {"argv": ["probe"] + list(words),
                                             "context": debugger_context.request_context()}, SESSION_TIMEOUT)
    if not reply.ok or "help" in reply.result:
        disabled.undo()
        if catchpoint:
            stop_signal.start_failed(lines)
    if not reply.ok:
        for number in disabled.numbers:
            lines.append("xref: breakpoint %d re-enabled: the probe did not start" % number)
        raise reply_failure(reply)
    if help_text(reply, lines):
        return None
    session = new_session(state, reply, "probe", words)
    session.probes = reply.result.get("sites", 0)
    addresses = reply.result.get("addresses")
    session.addresses = addresses if isinstance(addresses, list) else []
    lines.append("xref: session %d probing PID %d: %s (%s); counts print at each stop (xref show)"
                 % (session.id, session.pid, probe_render.plural(len(session.addresses), "address"), session.backend))
    warning_lines(reply, lines)
    disabled.hand_over(session, reply.result.get("breakpoints_to_disable") or [], lines, DISABLED_REASON, "probes")
    if catchpoint:
        stop_signal.started(session.id)
        lines.append("xref: the first hit where --stop-when holds stops its thread with %s: catchpoint %d stops "
                     "there and keeps it from the process; the program's own %s go as `handle %s` says"
                     % (stop_signal.SIGNAL, catchpoint, stop_signal.SIGNAL, stop_signal.SIGNAL))
    return session.id


class ProbeCommand(Subcommand):
    """Count hits of addresses, their callers and values, without stopping the process.

Exact hit counts from eBPF uprobes, kept in the kernel; callers, groups, histograms and a
few samples per address. Returns at once; what changed prints at each stop (or `xref show`).

xref probe ADDRESS... [--callers] [--fetch SPEC] [--filter EXPR] [--group-by ret|caller|tid|NAME]
                      [--hist NAME] [--until-hits N] [--duration-ms MS] [OPTIONS]
  ADDRESS           a function (sym, module:sym), an instruction (0xVA, module:0xVA: static VAs, as nm
                    prints them), or bp:N: breakpoint N's locations (N is disabled meanwhile)
  --callers         count the call sites the hits came from
  --until-hits N    end after N passing hits in all
  --stop-when EXPR [--skip N]
                    stop the thread of the first (N+1th) hit where EXPR holds over the --fetch values
  --stacks N        count hits by user stack (frame pointers), up to N frames
  --duration-ms MS  end after this long (default: until a bound, `xref stop` or the process's exit)
  --every, --first, --max-events, --regs, --mark-file, ...
                    as in the shell's `xref probe` (docs/probe.md); `xref probe --help` lists every option"""

    name = "probe"
    # `xref probe --help`'s options but --json and --jsonl: a session's output is this text.
    FLAGS = ("--help", "--pid", "--bin", "--backend", "--count", "--callers", "--regs", "--fetch", "--filter",
             "--every", "--first", "--until-hits", "--max-events", "--duration-ms", "--stop-when", "--skip",
             "--group-by", "--hist", "--stacks", "--heartbeat-ms", "--mark-file", "--mark-regex",
             "--allow-breakpoint-collision", "--ringbuf-bytes")

    def run(self, words, state, lines):
        start(words, state, lines)


def probe(*words):
    """Python API: starts a session like `xref probe WORDS...`; returns its id, raises xref.XrefError."""
    return run_guarded(lambda state, lines: start([str(word) for word in words], state, lines))
