"""What the front end keeps per gdb: the helper (started on first use), the
sessions it started with their windows (trace) or counts (probe), and what
is still to be shown.
Used on gdb's thread only: the helper's reader threads only queue, and ask
for gdb's thread with gdb.post_event."""

import os
import time

import gdb

from . import gdb_symbols, probe_render, stop_signal
from .helper_client import HelperClient, HelperStartError, display
from .window_render import render_window

CLIENT_NAME = "xref-gdb 0.1.0"
HANDSHAKE_TIMEOUT = 20
SESSION_TIMEOUT = 300  # attaching/detaching many probes
COMMAND_TIMEOUT = 120
QUICK_TIMEOUT = 15
# A bound for a helper that stopped answering, not a wait: drain is answered
# within one poll of each session.
DRAIN_TIMEOUT = 10
EXIT_WAIT = 2.0  # for the helper to end the sessions of a process that exited
WINDOWS_PER_STOP = 20
KEPT_WINDOWS_PER_SESSION = 1000
# Drain updates of a probe session not printed yet (drains without a stop,
# from the Python API): each is what changed since the one before.
KEPT_PROBE_UPDATES = 100


class XrefError(gdb.GdbError):
    """A failed xref command or API call: one line, no traceback."""


class WindowRecord:
    def __init__(self, window, arrival):
        self.window = window
        self.arrival = arrival
        self.shown = False


class SessionRecord:
    def __init__(self, session_id):
        self.id = session_id
        self.command = "trace"  # or "probe": the first word of session.start
        self.words = ""
        self.pid = 0
        self.inferior = 0  # gdb's inferior number
        self.backend = "?"
        self.probes = 0
        self.disabled_breakpoints = []  # numbers, re-enabled when the session ends
        self.stop_at_end_breakpoint = 0  # --stop-at-end's breakpoint number, 0 if none
        self.here_window = None
        self.max_windows = 0  # the windows after which it ends by itself, 0: no limit
        self.ended = False
        self.stop_reason = ""
        self.summary = None
        self.error = None
        self.end_shown = False
        self.windows = []
        self.windows_dropped = 0
        # A probe session: the start answer's addresses (with their live
        # addresses), the latest live_probe document (the final one once it
        # ended), and the changes of the drains not printed yet.
        self.addresses = []
        self.document = None
        self.document_shown = False
        self.probe_updates = []
        # Every live address where it has a uprobe (the start answer's
        # probe_sites): a breakpoint there is released (breakpoint_guard.py).
        self.probe_sites = set()


def plural(count, word):
    return "%d %s%s" % (count, word, "" if count == 1 else "s")


def default_helper_command():
    """build/helper/xref relative to gdb-python/, then `xref` on PATH; with `serve`."""
    package = os.path.dirname(os.path.realpath(__file__))
    candidate = os.path.normpath(os.path.join(package, "..", "..", "build", "helper", "xref"))
    if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
        return [candidate, "serve"]
    return ["xref", "serve"]


def session_end_line(session):
    if session.command == "probe":
        return probe_render.end_line(session.id, session.stop_reason, session.summary, session.error)
    line = "xref: session %d ended (%s)" % (session.id, session.stop_reason)
    summary = session.summary
    if isinstance(summary, dict) and summary:
        lost = summary.get("lost")
        line += ": %s (%d complete), %s, lost %s" % (
            plural(summary.get("windows", 0), "window"), summary.get("complete_windows", 0),
            plural(summary.get("events", 0), "event"), lost if isinstance(lost, int) else "?")
    if isinstance(session.error, dict) and "message" in session.error:
        line += "; " + str(session.error["message"])
    return line


def write_lines(lines):
    if lines:
        gdb.write("".join(line + "\n" for line in lines))
        gdb.flush()


def process_running():
    """True when gdb cannot touch breakpoints now: all-stop with the selected inferior's threads running."""
    if gdb.parameter("non-stop"):
        return False
    inferior = gdb.selected_inferior()
    if inferior is None or inferior.pid == 0:
        return False
    return any(thread.is_running() for thread in inferior.threads())


class State:
    def __init__(self):
        self.configured_command = None
        self.helper_ = None
        self.sessions = {}  # id -> SessionRecord, in id order
        self.pending_lines = []
        self.pending_restores = []  # (session id, [breakpoint numbers], stop_at_end number)
        self.arrivals = 0
        self.notice_posted = False
        self.target_running = False  # between gdb's cont and stop events
        self.shutting_down = False
        self.ending = set()  # session ids the last drain answered as ending

    # The helper.

    def helper_command(self):
        """(argv, where it came from)."""
        if self.configured_command:
            return self.configured_command, ""
        text = os.environ.get("XREF_HELPER", "")
        if text.strip():
            import shlex
            try:
                words = shlex.split(text)
            except ValueError:
                words = []
            if words:
                return words, " (from XREF_HELPER)"
        return default_helper_command(), " (default)"

    def set_helper_command(self, argv):
        if self.running_helper():
            for session in self.sessions.values():
                if not session.ended:
                    raise XrefError("xref: session %d is running in the current helper: `xref stop --all` first"
                                    % session.id)
            self.helper_.close(3.0)
        self.helper_ = None
        self.configured_command = argv

    def running_helper(self):
        return self.helper_ if self.helper_ is not None and self.helper_.alive() else None

    def helper(self, lines):
        """The running helper, started when needed; raises XrefError."""
        if self.running_helper():
            return self.helper_
        if self.helper_ is not None:
            self.absorb(lines)  # reports the death, ends its sessions
        argv, _ = self.helper_command()
        try:
            self.helper_ = HelperClient.start(argv, CLIENT_NAME, HANDSHAKE_TIMEOUT, self._post_notice)
        except HelperStartError as error:
            raise XrefError("xref: " + str(error))
        return self.helper_

    def _post_notice(self):
        """On a reader thread: asks gdb's thread to say at once that the helper
        died, while the process runs (a stop or a command says it otherwise).
        Nothing else is posted: gdb 13 crashes at exit when a posted event is
        still pending, and only a running process keeps gdb in its event loop."""
        helper = self.helper_
        if self.shutting_down or not self.target_running or self.notice_posted:
            return
        if helper is None or helper.alive():
            return
        self.notice_posted = True
        gdb.post_event(self.notice)

    def notice(self):
        """On gdb's thread, after the helper sent something or ended: say at
        once what cannot wait for a stop (the helper's death, the last
        windows of a process that is gone)."""
        self.notice_posted = False
        lines = []
        self.absorb(lines)
        self.show_gone_processes(lines)
        write_lines(lines)

    # Events and sessions.

    def find_session(self, session_id):
        return self.sessions.get(session_id)

    def add_session(self, session_id):
        session = self.sessions.get(session_id)
        if session is None:
            session = self.sessions[session_id] = SessionRecord(session_id)
        return session

    def record_window(self, session, window):
        self.arrivals += 1
        session.windows.append(WindowRecord(window, self.arrivals))
        if len(session.windows) > KEPT_WINDOWS_PER_SESSION:
            oldest = next((record for record in session.windows if record.shown), session.windows[0])
            session.windows.remove(oldest)
            session.windows_dropped += 1

    def absorb_events(self, lines):
        if self.helper_ is None:
            return
        for event in self.helper_.take_events():
            session_id = event.get("session")
            if not isinstance(session_id, int):
                continue
            session = self.add_session(session_id)
            name = event.get("event")
            if name == "window" and isinstance(event.get("window"), dict):
                self.record_window(session, event["window"])
            elif name == "probe_update" and isinstance(event.get("changes"), dict):
                # A drain's update (a heartbeat has no changes: nothing to print at a stop).
                session.probe_updates = (session.probe_updates + [event["changes"]])[-KEPT_PROBE_UPDATES:]
                self.keep_document(session, event.get("document"))
            elif name == "warning":
                lines.append("xref: session %d: warning: %s" % (session_id, event.get("message", "")))
            elif name == "session_ended":
                for window in event.get("windows") or []:
                    self.record_window(session, window)
                self.keep_document(session, event.get("document"))
                session.summary = event.get("summary") or {}
                session.error = event.get("error")
                self.end_session(session, event.get("stop_reason") or "stopped")
        for line in self.helper_.take_stderr():
            lines.append("xref: helper: " + line)

    def keep_document(self, session, document):
        if isinstance(document, dict):
            session.document = document
            session.document_shown = False

    def absorb(self, lines):
        """Takes what the helper sent; when it died, says so once and ends its sessions."""
        lines.extend(self.pending_lines)
        self.pending_lines = []
        self.absorb_events(lines)
        if self.helper_ is None or self.helper_.alive():
            self.apply_restores(lines)
            return
        helper = self.helper_
        line = "xref: the helper '%s' (pid %d) %s" % (display(helper.argv), helper.pid, helper.ending())
        ended = []
        for session in self.sessions.values():
            if session.ended:
                continue
            ended.append(session.id)
            self.end_session(session, "helper_exited")
            session.end_shown = True  # said in the line below
        if ended:
            line += "; its probes are gone and session%s %s ended" % (
                "" if len(ended) == 1 else "s", ", ".join(str(session_id) for session_id in ended))
        last_words = helper.recent_stderr()
        if last_words:
            line += "; its last message: " + last_words[-1]
        lines.append(line)
        self.helper_ = None
        self.apply_restores(lines)
        lines.append("xref: the process is untouched; the next xref command starts a new helper")

    def end_session(self, session, reason):
        if session.ended:
            return
        session.ended = True
        session.stop_reason = reason
        stop_signal.ended(session.id)
        if session.disabled_breakpoints or session.stop_at_end_breakpoint:
            self.pending_restores.append((session.id, session.disabled_breakpoints, session.stop_at_end_breakpoint))
        session.disabled_breakpoints = []
        session.stop_at_end_breakpoint = 0

    def apply_restores(self, lines):
        """Breakpoints the ended sessions disabled come back; --stop-at-end's goes.
        In all-stop mode gdb inserts breakpoints only while the process is
        stopped: while it runs they wait for the next stop."""
        stop_signal.release(lines, process_running())
        if not self.pending_restores or process_running():
            return
        restores, self.pending_restores = self.pending_restores, []
        by_number = {breakpoint.number: breakpoint for breakpoint in gdb.breakpoints()}
        for session_id, numbers, stop_at_end in restores:
            enabled = []
            for number in numbers:
                breakpoint = by_number.get(number)
                if breakpoint is None or not breakpoint.is_valid():
                    continue
                breakpoint.enabled = True
                enabled.append(number)
            if enabled:
                lines.append("xref: breakpoint%s %s re-enabled: session %d ended" % (
                    "" if len(enabled) == 1 else "s", ", ".join(str(number) for number in enabled), session_id))
            # --stop-at-end's breakpoint is still there when the window did not end by returning to it.
            breakpoint = by_number.get(stop_at_end)
            if stop_at_end and breakpoint is not None and breakpoint.is_valid():
                breakpoint.delete()

    def running_sessions(self):
        return [session for session in self.sessions.values() if not session.ended]

    def await_pending_windows(self, lines):
        """`drain`: every session sends the windows that closed so far; the events come before the answer."""
        if self.running_helper() is None or not self.running_sessions():
            return
        reply = self.helper_.request("drain", {}, DRAIN_TIMEOUT)
        if not reply.ok and self.helper_.alive():
            lines.append("xref: the helper did not drain its sessions: " + reply.message)
        # The sessions the helper says end by themselves now (a probe past
        # its --until-hits).
        self.ending = set(reply.result.get("ending") or []) if reply.ok else set()
        self.absorb_events(lines)

    def await_finished_sessions(self, lines):
        """A session that has all its windows (--max-windows, --here's one),
        or a probe session past its --until-hits, ends by itself a moment
        later, detaching its probes: wait for its session_ended, so that its
        end and the breakpoints it gives back come at this stop, and no probe
        is in the way of a breakpoint."""
        def done(session):
            if session.command == "probe":
                return session.id in self.ending
            return session.max_windows and len(session.windows) >= session.max_windows

        def finished():
            return [session for session in self.running_sessions() if done(session)]
        deadline = time.monotonic() + QUICK_TIMEOUT
        while finished() and self.running_helper() is not None and time.monotonic() < deadline:
            self.helper_.wait_for(lambda: False, max(0.0, deadline - time.monotonic()))
            self.absorb_events(lines)

    def unshown_windows(self, only=None):
        windows = []
        for session in self.sessions.values():
            if only is not None and session.id != only:
                continue
            windows.extend((session, record) for record in session.windows if not record.shown)
        windows.sort(key=lambda pair: pair[1].arrival)
        return windows

    def render(self, session, record, lines):
        lines.extend(render_window(record.window, session.id, gdb_symbols.GdbSymbols(record.window)))
        record.shown = True

    def show_session_windows(self, session, all_windows, lines):
        for record in session.windows:
            if record.shown and not all_windows:
                continue
            self.render(session, record, lines)
        self.print_probe_updates(lines, session.id)
        if session.ended and (not session.end_shown or all_windows):
            lines.append(session_end_line(session))
            session.end_shown = True

    def print_probe_updates(self, lines, only=None):
        """What changed in each probe session since the previous drain, for
        every drain not printed yet (one, at a stop)."""
        describe = gdb_symbols.describer()
        for session in self.sessions.values():
            if only is not None and session.id != only:
                continue
            for changes in session.probe_updates:
                lines.extend(probe_render.stop_lines(session.id, changes, session.addresses, describe))
            session.probe_updates = []

    def print_end_lines(self, lines, only=None, again=False):
        for session in self.sessions.values():
            if (only is not None and session.id != only) or not session.ended or (session.end_shown and not again):
                continue
            lines.append(session_end_line(session))
            session.end_shown = True

    def process_gone(self, session):
        return not any(inferior.pid == session.pid for inferior in gdb.inferiors())

    def show_gone_processes(self, lines):
        """The windows of a session whose process is gone get no stop to print at."""
        for session in self.sessions.values():
            if session.ended and self.process_gone(session):
                self.show_session_windows(session, False, lines)

    # gdb's events.

    def on_stop(self, lines):
        """At a stop: drain, then the new windows (at most WINDOWS_PER_STOP)."""
        if self.helper_ is None and not self.pending_lines and not self.pending_restores:
            return
        self.absorb(lines)
        self.await_pending_windows(lines)
        self.await_finished_sessions(lines)
        self.absorb(lines)
        windows = self.unshown_windows()
        for session, record in windows[:WINDOWS_PER_STOP]:
            self.render(session, record, lines)
        if len(windows) > WINDOWS_PER_STOP:
            lines.append("xref: %d more new windows: `xref show` prints them" % (len(windows) - WINDOWS_PER_STOP))
        self.print_probe_updates(lines)
        self.print_end_lines(lines)

    def on_exited(self, inferior_number, lines):
        """The process exited: the helper notices too and ends its sessions
        (target_exited) with their last windows; give it a moment."""
        mine = [session for session in self.sessions.values() if session.inferior == inferior_number]
        deadline = time.monotonic() + EXIT_WAIT
        while self.running_helper() is not None:
            self.absorb_events(lines)
            if all(session.ended for session in mine) or time.monotonic() >= deadline:
                break
            self.helper_.wait_for(lambda: False, max(0.0, deadline - time.monotonic()))
        self.absorb(lines)
        for session in mine:
            if session.ended:
                self.show_session_windows(session, False, lines)

    def shutdown(self):
        """gdb exits: closing its stdin makes the helper stop every session and
        detach; the sessions end with their last windows, printed here."""
        self.shutting_down = True
        if self.helper_ is None:
            return
        self.helper_.close(3.0)
        lines = []
        self.absorb_events(lines)
        for session in self.sessions.values():
            self.show_session_windows(session, False, lines)
        self.helper_ = None
        try:
            write_lines(lines)
        except Exception:  # gdb may be too far gone to print
            pass


_state = None


def get():
    global _state
    if _state is None:
        _state = State()
    return _state
