"""gdb breakpoints a session turns off while its probes are in. A uprobe
and a gdb breakpoint at one address do not mix: the uprobe swallows the
breakpoint, and gdb removing its int3 after the uprobe went in writes the
original byte over the uprobe's. So a breakpoint whose locations the
session probes (`--start bp:N` of trace, `bp:N` of probe) goes off before
the session starts, and comes back when the start fails (here) or the
session ends (state.py)."""

import gdb


def breakpoints_at(address):
    """The enabled breakpoints with an enabled location at `address` (at
    --here's pc: the one the thread stopped at)."""
    return [breakpoint.number for breakpoint in gdb.breakpoints()
            if breakpoint.enabled and any(location.enabled and location.address == address
                                          for location in getattr(breakpoint, "locations", None) or [])]


def find_breakpoint(number):
    return next((breakpoint for breakpoint in gdb.breakpoints() if breakpoint.number == number), None)


class DisabledForStart:
    """The breakpoints disabled before one session.start, by number."""

    def __init__(self):
        self.numbers = []
        self.quiet = []  # held for --here: back on silently unless the helper names them

    def disable_quietly(self, numbers):
        """Turns off `numbers` in case the helper probes their location (the
        --here pc); those it does not name come back without a word."""
        before = list(self.numbers)
        self.disable(numbers)
        self.quiet += [number for number in self.numbers if number not in before]

    def disable(self, numbers):
        """Turns off those of `numbers` that are on (the others are not ours to turn back on)."""
        for number in numbers:
            breakpoint = find_breakpoint(number)
            if breakpoint is not None and breakpoint.enabled and number not in self.numbers:
                breakpoint.enabled = False
                self.numbers.append(number)

    def undo(self):
        for number in self.numbers:
            breakpoint = find_breakpoint(number)
            if breakpoint is not None:
                breakpoint.enabled = True

    def hand_over(self, session, named, lines, reason, probes):
        """The start answer's `breakpoints_to_disable` (`named`): the
        breakpoints whose locations now carry probes. Those disabled before
        the start stay off until the session ends; one the helper names that
        was not is turned off now; one disabled before that the helper does
        not name comes back at once. `reason` ends the line that says a
        breakpoint is off; `probes` names what the helper put there."""
        named = [number for number in named if isinstance(number, int)] if isinstance(named, list) else []
        for number in named:
            if number in self.numbers:
                continue
            breakpoint = find_breakpoint(number)
            if breakpoint is None or not breakpoint.enabled:
                continue
            breakpoint.enabled = False
            session.disabled_breakpoints.append(number)
            lines.append("xref: warning: breakpoint %d%s (disabled after the probes went in: if its location is a "
                         "probe, that probe may be lost)" % (number, reason))
        for number in self.numbers:
            if number in named:
                session.disabled_breakpoints.append(number)
                lines.append("xref: breakpoint %d%s" % (number, reason))
                continue
            breakpoint = find_breakpoint(number)
            if breakpoint is not None:
                breakpoint.enabled = True
            if number not in self.quiet:
                lines.append("xref: warning: the helper did not put %s on breakpoint %d's locations; it stays "
                             "enabled" % (probes, number))
        self.numbers = []
        self.quiet = []
