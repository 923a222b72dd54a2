"""What the front end keeps per gdb: the helper (started on first use) and,
per session, only what gdb did for it (breakpoints it turned off, the
--stop-at-end breakpoint, the stop signal's catchpoint, its probe sites).
Everything a user reads comes from the helper (`run`, docs/protocol.md,
"Protocol 2"); this file asks, does what the answer says gdb must do, and
prints. Used on gdb's thread only."""

import os
import shlex
import time

import gdb

from . import debugger_context, gdb_symbols, stop_signal
from .errors import XrefError
from .helper_client import HelperClient, HelperStartError, display

CLIENT_NAME = "xref-gdb 0.2.0"
HANDSHAKE_TIMEOUT = 20
SESSION_TIMEOUT = 300  # attaching/detaching many probes
QUICK_TIMEOUT = 30
NAME_ROUNDS = 3  # a text that still lacks names after this is printed with the helper's own


class SessionRecord:
    def __init__(self, answer):
        self.id = answer.get("id", 0)
        self.command = answer.get("command", "")
        self.pid = answer.get("pid", 0)
        self.inferior = gdb.selected_inferior().num
        self.probe_sites = {int(live, 16) for live in answer.get("probe_sites") or [] if isinstance(live, str)}
        self.disabled = []  # breakpoint numbers, enabled again when the session ends
        self.stop_at_end = 0  # --stop-at-end's breakpoint, deleted when the session ends
        self.catches_signal = bool(answer.get("stop_signal"))
        # the breakpoints whose locations carry its probes: off until it ends
        self.kept_breakpoints = [n for n in answer.get("breakpoints_to_disable") or [] if isinstance(n, int)]
        self.ended = False


def write_lines(lines):
    if lines:
        gdb.write("".join(line + "\n" for line in lines))
        gdb.flush()


def installed_helper():
    """The helper `cmake --install` (or the Debian package) put in place; the
    installed copy of this package has its path in installed.py, a checkout none."""
    try:
        from .installed import HELPER
    except ImportError:
        return None
    return HELPER


def default_helper_command(installed=None):
    """build/helper/xref relative to gdb-python/, then the installed helper,
    then `xref` on PATH; with `serve`."""
    package = os.path.dirname(os.path.realpath(__file__))
    candidates = [os.path.normpath(os.path.join(package, "..", "..", "build", "helper", "xref")),
                  installed if installed is not None else installed_helper()]
    for candidate in candidates:
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return [candidate, "serve"]
    return ["xref", "serve"]


def process_running():
    """True when gdb cannot touch breakpoints now: all-stop with the selected inferior's threads running."""
    if gdb.parameter("non-stop"):
        return False
    inferior = gdb.selected_inferior()
    if inferior is None or inferior.pid == 0:
        return False
    return any(thread.is_running() for thread in inferior.threads())


def print_notification(event):
    """A notification (a trace's --heartbeat-ms), from the reader thread:
    printed on gdb's thread as it comes while the process runs; at the prompt
    it is left out, the stop just printed what the sessions found."""
    lines = [line for line in event.get("text") or [] if isinstance(line, str)]

    def show():
        inferior = gdb.selected_inferior()
        if inferior is not None and inferior.pid != 0 and any(t.is_running() for t in inferior.threads()):
            write_lines(lines)

    if lines:
        gdb.post_event(show)


def find_breakpoint(number):
    return next((breakpoint for breakpoint in gdb.breakpoints() if breakpoint.number == number), None)


class Frontend:
    def __init__(self):
        self.configured_command = None
        self.helper_ = None
        self.sessions = {}  # id -> SessionRecord
        self.pending_restores = []  # sessions that ended while gdb could not touch breakpoints
        self.shutting_down = False
        self.stopped_at = None  # CLOCK_MONOTONIC ns of the last stop while the process is stopped

    # The helper.

    def helper_command(self):
        """(argv, where it came from)."""
        if self.configured_command:
            return self.configured_command, ""
        text = os.environ.get("XREF_HELPER", "")
        try:
            words = shlex.split(text) if text.strip() else []
        except ValueError:
            words = []
        if words:
            return words, " (from XREF_HELPER)"
        return default_helper_command(), " (default)"

    def running_helper(self):
        return self.helper_ if self.helper_ is not None and self.helper_.alive() else None

    def helper(self, lines):
        """The running helper, started when needed; raises XrefError."""
        if self.running_helper():
            return self.helper_
        if self.helper_ is not None:
            self.helper_died(lines)
        argv, _ = self.helper_command()
        try:
            self.helper_ = HelperClient.start(argv, CLIENT_NAME, HANDSHAKE_TIMEOUT)
        except HelperStartError as error:
            raise XrefError("xref: " + str(error))
        self.helper_.on_event = print_notification
        return self.helper_

    def set_helper_command(self, argv):
        if self.running_helper() and any(not session.ended for session in self.sessions.values()):
            raise XrefError("xref: sessions run in the current helper: `xref stop --all` first")
        if self.helper_ is not None:
            self.helper_.close(3.0)
        self.helper_ = None
        self.configured_command = argv

    def helper_died(self, lines):
        """Says once how the helper ended; its sessions are over."""
        helper, self.helper_ = self.helper_, None
        line = "xref: the helper '%s' (pid %d) %s" % (display(helper.argv), helper.pid, helper.ending())
        ended = [session.id for session in self.sessions.values() if not session.ended]
        if ended:
            line += "; its probes are gone and session%s %s ended" % (
                "" if len(ended) == 1 else "s", ", ".join(str(number) for number in ended))
        last_words = helper.recent_stderr()
        if last_words:
            line += "; its last message: " + last_words[-1]
        lines.append(line)
        for number in ended:
            self.end_session(number)
        self.apply_restores(lines)
        lines.append("xref: the process is untouched; the next xref command starts a new helper")

    # Requests.

    def request(self, method, params, timeout, lines):
        helper = self.helper(lines)
        reply = helper.request(method, params, timeout)
        if not reply.ok and not helper.alive():
            self.helper_died(lines)
            raise XrefError("xref: " + reply.message)
        return reply

    def run(self, words, lines, extra=None, timeout=SESSION_TIMEOUT):
        """`run` with the user's words: names what the helper asks gdb to
        name, prepares what it asks gdb to prepare, prints its text, and does
        what the answer says gdb must do. Returns the result; raises XrefError."""
        params = {"argv": list(words), "context": debugger_context.request_context()}
        if self.stopped_at is not None:
            params["stopped_at_ns"] = self.stopped_at  # since when the process sits at gdb's prompt
        params.update(extra or {})
        preparation = None
        for _ in range(NAME_ROUNDS + 2):
            reply = self.request("run", params, timeout, lines)
            if not reply.ok:
                if preparation is not None:
                    preparation.undo(lines)
                raise XrefError(reply.error.get("text") or "xref: " + reply.message)
            result = reply.result
            if "names_needed" in result:
                self.name(result["names_needed"], lines)
                if result.get("next_argv"):
                    lines.extend(result.get("text") or [])
                    self.after(result, lines)
                    params["argv"] = result["next_argv"]
                params["named"] = True  # a show renders what it drained, without draining again
                continue
            if "prepare" in result and preparation is None:
                preparation = Preparation(result["prepare"])
                params["prepared"] = preparation.run(lines)
                params["context"] = debugger_context.request_context()  # with --stop-at-end's breakpoint
                continue
            break
        else:
            params["names"] = "helper"
            result = self.request("run", params, timeout, lines).result
        lines.extend(result.get("text") or [])
        session = result.get("session")
        if isinstance(session, dict):
            record = self.sessions[session.get("id", 0)] = SessionRecord(session)
            if preparation is not None:
                preparation.hand_over(record, lines)
        elif preparation is not None:
            preparation.undo(lines)
        self.after(result, lines)
        return result

    def name(self, needed, lines):
        """Names the addresses the helper asks about, with gdb's symbols."""
        for entry in needed if isinstance(needed, list) else []:
            addresses = [int(live, 16) for live in entry.get("addresses") or [] if isinstance(live, str)]
            names = [gdb_symbols.name_of(address) for address in addresses]
            self.request("names", {"pid": entry.get("pid", 0), "names": names}, QUICK_TIMEOUT, lines)

    def after(self, result, lines):
        """What the answer says gdb does now: breakpoints of ended sessions back, `xref break`'s."""
        for ended in result.get("ended") or []:
            self.end_session(ended.get("session", 0))
        self.apply_restores(lines)
        wanted = result.get("set_breakpoint")
        if isinstance(wanted, dict):
            try:
                breakpoint = gdb.Breakpoint("*" + wanted.get("address", "0"))
            except (gdb.error, RuntimeError) as error:
                raise XrefError("xref: gdb could not set a breakpoint at %s: %s" % (wanted.get("address"), error))
            lines.extend(line.replace("{number}", str(breakpoint.number)) for line in result.get("text_after") or [])

    # Sessions ending.

    def end_session(self, session_id):
        session = self.sessions.get(session_id)
        if session is None or session.ended:
            return
        session.ended = True
        if session.catches_signal:
            stop_signal.ended(session.id)
        if session.disabled or session.stop_at_end:
            self.pending_restores.append(session)

    def apply_restores(self, lines):
        """Breakpoints the ended sessions disabled come back; --stop-at-end's
        goes. In all-stop mode gdb changes breakpoints only while stopped."""
        stop_signal.release(lines, process_running())
        if not self.pending_restores or process_running():
            return
        restores, self.pending_restores = self.pending_restores, []
        for session in restores:
            enabled = []
            for number in session.disabled:
                breakpoint = find_breakpoint(number)
                if breakpoint is not None and breakpoint.is_valid():
                    breakpoint.enabled = True
                    enabled.append(number)
            if enabled:
                lines.append("xref: breakpoint%s %s re-enabled: session %d ended" % (
                    "" if len(enabled) == 1 else "s", ", ".join(str(number) for number in enabled), session.id))
            breakpoint = find_breakpoint(session.stop_at_end) if session.stop_at_end else None
            if breakpoint is not None and breakpoint.is_valid():
                breakpoint.delete()

    def running_sessions(self):
        return [session for session in self.sessions.values() if not session.ended]

    # gdb's events.

    def on_stop(self, lines):
        """At a stop: what the sessions found since the last one."""
        self.stopped_at = time.monotonic_ns()
        if self.running_helper() is None:
            if self.helper_ is not None:
                self.helper_died(lines)
            return
        self.run(["show"], lines, {"at_stop": True}, QUICK_TIMEOUT)

    def on_resume(self):
        self.stopped_at = None
        helper = self.running_helper()
        if helper is not None:
            helper.notify("resumed", {"pid": debugger_context.process_id() or 0, "at_ns": time.monotonic_ns()})

    def on_exited(self, lines):
        """The process exited: the helper ends its sessions (target_exited)
        with their last windows; give it a moment, then print them."""
        if self.running_helper() is None or not self.running_sessions():
            return
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            answer = self.request("sessions", {}, QUICK_TIMEOUT, lines)
            if not answer.ok or not answer.result.get("sessions"):
                break
            time.sleep(0.05)
        self.run(["show"], lines, {"at_stop": True}, QUICK_TIMEOUT)

    def shutdown(self):
        """gdb exits: every session stops and prints what it found last."""
        self.shutting_down = True
        if self.running_helper() is None:
            return
        lines = []
        try:
            if self.running_sessions():
                self.run(["stop", "--all"], lines, {"names": "helper"}, 10)
        except Exception:  # gdb may be too far gone
            pass
        self.helper_.close(3.0)
        self.helper_ = None
        try:
            write_lines(lines)
        except Exception:
            pass


class Preparation:
    """What gdb does before the probes go in, as the helper's `prepare` says
    (docs/protocol.md): watch's expressions evaluated, breakpoints off (a
    uprobe and an int3 at one address do not mix), --stop-when's catchpoint,
    --stop-at-end's breakpoint."""

    def __init__(self, prepare):
        self.prepare = prepare
        self.disabled = []
        self.quiet = []
        self.catchpoint = 0
        self.stop_at_end = None

    def run(self, lines):
        prepared = {}
        if self.prepare.get("evaluate"):
            # watch: gdb evaluates each expression in the selected frame.
            prepared["evaluated"] = [debugger_context.evaluate(entry) for entry in self.prepare["evaluate"]]
        named = self.prepare.get("disable_breakpoints") or []
        if named and process_running():
            raise XrefError("xref: bp:%d: stop the process first: gdb turns a breakpoint off only while it is stopped"
                            % named[0])
        for number in named + (self.prepare.get("disable_quietly") or []):
            breakpoint = find_breakpoint(number)
            if breakpoint is not None and breakpoint.enabled and number not in self.disabled:
                breakpoint.enabled = False
                self.disabled.append(number)
                if number not in named:
                    self.quiet.append(number)
        prepared["disabled"] = list(self.disabled)
        if self.prepare.get("stop_signal"):
            try:
                self.catchpoint = stop_signal.arm()
            except gdb.error as error:
                self.undo(lines)
                raise XrefError("xref: --stop-when: gdb would not catch %s: %s" % (stop_signal.SIGNAL, error))
            prepared["stop_signal"] = {"by": "catchpoint %d" % self.catchpoint,
                                       "own": "the program's own %s go as `handle %s` says" % (
                                           stop_signal.SIGNAL, stop_signal.SIGNAL)}
        if self.prepare.get("stop_at_end"):
            try:
                self.stop_at_end, prepared["stop_at_end"] = set_stop_at_end()
            except XrefError:
                self.undo(lines)
                raise
        return prepared

    def undo(self, lines):
        for number in self.disabled:
            breakpoint = find_breakpoint(number)
            if breakpoint is not None:
                breakpoint.enabled = True
            if number not in self.quiet:
                lines.append("xref: breakpoint %d re-enabled: the session did not start" % number)
        self.disabled = []
        if self.catchpoint:
            stop_signal.start_failed(lines)
            self.catchpoint = 0
        if self.stop_at_end is not None and self.stop_at_end.is_valid():
            self.stop_at_end.delete()
        self.stop_at_end = None

    def hand_over(self, session, lines):
        """The session keeps off the breakpoints the helper put probes on;
        the others come back at once."""
        kept = set(session.kept_breakpoints)
        for number in self.disabled:
            if number in kept:
                session.disabled.append(number)
                continue
            breakpoint = find_breakpoint(number)
            if breakpoint is not None:
                breakpoint.enabled = True
        if self.catchpoint:
            stop_signal.started(session.id)
        if self.stop_at_end is not None:
            session.stop_at_end = self.stop_at_end.number


def set_stop_at_end():
    """--stop-at-end: a temporary breakpoint on the selected thread at the
    selected frame's return address, taken only when the stack pointer is
    back at the frame's CFA (this very frame returned, not a recursive call)."""
    here = debugger_context.here_frame()
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
    return breakpoint, {"breakpoint": breakpoint.number, "address": "%#x" % return_address,
                        "thread": here.thread_number}


_frontend = None


def get():
    global _frontend
    if _frontend is None:
        _frontend = Frontend()
    return _frontend
