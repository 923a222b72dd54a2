"""trace_target's own record (--record) and the probe reports of its
svc::validate, as the interactive debugger tests read them."""


def recorded(record, kind, function):
    """Lines of the target's record: `kind` is ">" (entries) or "<" (returns)."""
    try:
        with open(record) as lines:
            return sum(1 for line in lines if (" %s %s " % (kind, function)) in line)
    except FileNotFoundError:
        return 0


def probe_block(terminal):
    """The next probe report of session 1: the hits of svc::validate so far."""
    terminal.expect(r"xref: probe session 1 at ")
    return int(terminal.expect(r"\n  svc::validate[^\n]*  hits (\d+)").group(1))
