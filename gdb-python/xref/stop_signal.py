"""--stop-when's signal in gdb: tell xref's SIG63 from the program's own.

The probe stops a thread with SIGRTMAX-1 (gdb's SIG63) from BPF
(bpf_send_signal_thread), which arrives with si_code SI_KERNEL and no
sender; a program's own raise, kill, tgkill and sigqueue arrive with
SI_TKILL, SI_USER or SI_QUEUE and its pid. While a --stop-when session runs,
one catchpoint (`catch signal SIG63`) with a condition sees every SIG63:

- xref's stops there, and is taken away from the thread (`queue-signal 0`)
  so the process never receives it (its default action ends the process);
- the program's own go as `handle SIG63` says: a catchpoint overrides
  `handle`'s stop and print but not its pass, so the condition stops, or
  prints, where `handle` would; a passed signal is delivered with its
  siginfo (payload, si_code, sender), as gdb resumes with the same signal.

`handle SIG63` itself is never changed; the catchpoint goes when the last
such session ends (or did not start)."""

import gdb

SIGNAL = "SIG63"  # shared/probe_abi.h: XREF_PROBE_STOP_SIGNAL, SIGRTMAX-1
SI_KERNEL = 0x80
CONDITION_FUNCTION = "_xref_stop_signal"


class _Catch:
    number = 0           # the catchpoint's number, 0: none
    sessions = set()     # the --stop-when sessions it serves
    arming = False       # a session.start under way
    release_pending = False
    connected = False


def _signal_settings():
    """(stop, print, pass) of `info signals SIG63`."""
    text = gdb.execute("info signals " + SIGNAL, to_string=True)
    for line in text.split("\n"):
        words = line.split()
        if len(words) >= 4 and words[0] == SIGNAL:
            return tuple(word == "Yes" for word in words[1:4])
    return (True, True, True)


def _siginfo():
    """(si_code, si_pid) of the selected thread's last signal, None when unreadable."""
    try:
        info = gdb.parse_and_eval("$_siginfo")
        return int(info["si_code"]), int(info["_sifields"]["_kill"]["si_pid"])
    except gdb.error:
        return None


def from_xref(siginfo):
    """A SIG63 the probe sent: from the kernel (BPF), no sending process."""
    return siginfo is not None and siginfo[0] == SI_KERNEL and siginfo[1] == 0


def _code_name(code):
    return {0: "SI_USER", -1: "SI_QUEUE", -6: "SI_TKILL", SI_KERNEL: "SI_KERNEL"}.get(code, "si_code %d" % code)


class _StopCondition(gdb.Function):
    """The catchpoint's condition: true for xref's SIG63, and for the
    program's own where `handle SIG63` says stop."""

    def __init__(self):
        super().__init__(CONDITION_FUNCTION)

    def invoke(self):
        siginfo = _siginfo()
        if from_xref(siginfo):
            return 1
        stop, show, passed = _signal_settings()
        if stop:
            return 1
        if show and siginfo is not None:
            thread = gdb.selected_thread()
            gdb.write("Thread %d received signal %s (the program's own: %s from pid %d)%s.\n" % (
                thread.num if thread else 0, SIGNAL, _code_name(siginfo[0]), siginfo[1],
                "" if passed else ", not passed (handle SIG63 nopass)"))
        return 0


def _at_catchpoint(event):
    """gdb reports the catchpoint's stop as a SignalEvent (no breakpoint object)."""
    if isinstance(event, gdb.BreakpointEvent):
        return any(breakpoint.number == _Catch.number for breakpoint in event.breakpoints)
    return isinstance(event, gdb.SignalEvent) and event.stop_signal == SIGNAL


def _on_stop(event):
    """At the catchpoint's stop by xref's signal: the thread never receives it."""
    if not _Catch.number or not _at_catchpoint(event):
        return
    previous = gdb.selected_thread()
    thread = getattr(event, "inferior_thread", None) or previous
    try:
        if thread is not None and thread != previous:
            thread.switch()
        siginfo = _siginfo()
        if from_xref(siginfo):
            gdb.execute("queue-signal 0", to_string=True)
        elif siginfo is not None:
            stop, show, passed = _signal_settings()
            gdb.write("xref: this %s is the program's own (%s from pid %d), not xref's: `continue` %s it\n" % (
                SIGNAL, _code_name(siginfo[0]), siginfo[1], "passes" if passed else "discards (handle SIG63 nopass)"))
    finally:
        if previous is not None and thread != previous and previous.is_valid():
            previous.switch()


def arm():
    """Before a --stop-when session starts: the catchpoint, once. Returns
    its number; raises gdb.error when gdb refuses it."""
    if not _Catch.connected:
        _StopCondition()
        gdb.events.stop.connect(_on_stop)
        _Catch.connected = True
    _Catch.arming = True
    _Catch.release_pending = False
    if _Catch.number and any(breakpoint.number == _Catch.number for breakpoint in gdb.breakpoints()):
        return _Catch.number
    before = {breakpoint.number for breakpoint in gdb.breakpoints()}
    gdb.execute("catch signal " + SIGNAL, to_string=True)
    added = [breakpoint for breakpoint in gdb.breakpoints() if breakpoint.number not in before]
    if not added:
        _Catch.arming = False
        raise gdb.error("gdb made no catchpoint for " + SIGNAL)
    added[-1].condition = "$%s()" % CONDITION_FUNCTION
    _Catch.number = added[-1].number
    return _Catch.number


def started(session_id):
    """The session started: the catchpoint serves it until it ends."""
    _Catch.arming = False
    _Catch.sessions.add(session_id)


def start_failed(lines):
    """The session did not start: the catchpoint goes unless another session needs it."""
    _Catch.arming = False
    if not _Catch.sessions:
        _Catch.release_pending = True
        release(lines)


def ended(session_id):
    """A session ended (no gdb calls: it may be a reader's notice)."""
    if session_id in _Catch.sessions:
        _Catch.sessions.discard(session_id)
        if not _Catch.sessions and not _Catch.arming:
            _Catch.release_pending = True


def release(lines, running=False):
    """Deletes the catchpoint once no session needs it and the process is
    stopped (gdb changes what it catches only then)."""
    if not _Catch.release_pending or running:
        return
    _Catch.release_pending = False
    number, _Catch.number = _Catch.number, 0
    for breakpoint in gdb.breakpoints():
        if breakpoint.number == number and breakpoint.is_valid():
            breakpoint.delete()
            lines.append("xref: catchpoint %d (%s) deleted: no --stop-when session left" % (number, SIGNAL))
