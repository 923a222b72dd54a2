"""The line a front end prints after session.release (docs/protocol.md):
which session stopped observing which site, when, and why. The LLDB plugin
prints the same text (lldb-plugin/breakpoint_guard.cpp). Pure, so it runs
without gdb."""


def _count(value):
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def release_lines(session_id, result, addresses):
    """`result`: the answer of session.release for `addresses` (live, ints)."""
    reason = str(result.get("reason") or "a breakpoint")
    if result.get("ended"):
        where = ", ".join(hex(address) for address in addresses)
        return ["xref: session %d ended (released): %s is at its probe site %s; what it recorded is kept"
                % (session_id, reason, where)]
    lines = []
    for site in result.get("released") or []:
        if not isinstance(site, dict):
            continue
        what = str(site.get("address") or "?")
        if site.get("ret_site"):
            what += "'s ret site"
        lines.append("xref: session %d no longer observes %s at %s since %d ms (%s there): %d hits counted up to then"
                     % (session_id, what, site.get("probe_live") or "?", _count(site.get("at_ms")), reason,
                        _count(site.get("hits"))))
    if lines and result.get("hits_may_be_lost"):
        lines.append("xref: warning: session %d's other sites were out for %d us while the process ran: hits then "
                     "were not counted" % (session_id, _count(result.get("gap_us"))))
    return lines
