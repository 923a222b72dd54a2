"""Text of a probe session: what changed since the last stop (the `changes`
of a drain's probe_update), the whole result for `xref show` (the
live_probe document, docs/probe.md) and the line that ends it. The LLDB
plugin prints the same text. Addresses are named by a `describe(live) ->
str` the caller passes (gdb's symbols in gdb; "" when it knows none), so
this runs without gdb."""

from .window_render import fetches_text, number

SAMPLES_PER_STOP = 8  # new samples printed per address at a stop; `xref show` prints them all


def _count(value):
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def _list(value):
    return value if isinstance(value, list) else []


def _dict(value):
    return value if isinstance(value, dict) else {}


def _place(describe, live):
    return describe(live) or hex(live)


def came_from(entry, describe):
    """Where a caller or a sample came from: its call site, else its return
    address (no call instruction was found before it); None when unknown."""
    call_site = number(entry.get("call_site_live"))
    if call_site is not None:
        return _place(describe, call_site)
    returned = number(entry.get("return_live"))
    if returned is not None:
        return _place(describe, returned) + " (return address)"
    return None


def address_place(started, index, listed, describe):
    """Address `index` named by the debugger, from the live address the start
    answer gave (`started`: its addresses, in the documents' order); the
    helper's own name when there is none."""
    live = number(_dict(started[index] if index < len(started) else None).get("live"))
    if live is not None:
        return _place(describe, live)
    return str(listed.get("location") or listed.get("static_va") or "?")


def frame_lines(stack, describe):
    """The frames of a --stacks stack: its pc, or the call before each return address."""
    lines = []
    for frame in _list(_dict(stack).get("frames")):
        frame = _dict(frame)
        at = number(frame.get("call_site_live"))
        if at is None:
            at = number(frame.get("live"))
        lines.append("          " + (_place(describe, at) if at is not None else "?"))
    return lines


def group_key(by, key):
    """A group's key as the helper gave it (hex); a thread id in decimal."""
    if by == "tid":
        value = number(key)
        if value is not None:
            return str(value)
    return str(key)


def plural(count, word):
    return "%d %s%s" % (count, word, "" if count == 1 else ("es" if word.endswith("s") else "s"))


def sample_line(sample, describe):
    line = "    sample hit %d  tid %d" % (_count(sample.get("hit")), _count(sample.get("tid")))
    values = fetches_text(_list(sample.get("fetches")))
    if values:
        line += "  " + values
    where = came_from(sample, describe)
    if where is not None:
        line += "  from " + where
    return line


def _grown_lines(lines, heading, entries, name):
    """Callers or group keys that are new or grew since the last stop: the
    heading, then `+ADDED  NAME  (HITS in all)` and `new`; nothing when none grew."""
    if not _list(entries):
        return
    lines.append(heading)
    for entry in entries:
        entry = _dict(entry)
        lines.append("      +%d  %s  (%d in all)%s" % (_count(entry.get("hits_added")), name(entry),
                                                     _count(entry.get("hits")), "  new" if entry.get("new") else ""))


def ordinal(n):
    suffix = "th" if 11 <= n % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return "%d%s" % (n, suffix)


def stopped_lines(session_id, stop, started, describe):
    """--stop-when's stop: which hit, why, with its values, and where the
    thread really is (the signal is taken after the probed instruction ran)."""
    line = "xref: probe session %d stopped thread %d: hit %d of %s, the %s where --stop-when '%s' held" % (
        session_id, _count(stop.get("tid")), _count(stop.get("hit")), stop.get("address", "?"),
        ordinal(_count(stop.get("match"))), stop.get("filter", ""))
    values = fetches_text(_list(stop.get("fetches")))
    if values:
        line += ": " + values
    lines = [line]
    index = _count(stop.get("address_index"))
    probe = number(_dict(started[index] if index < len(started) else None).get("probe_live"))
    where = describe(probe) if probe is not None else ""
    if not stop.get("signal_sent"):
        lines.append("xref: the stop signal could not be sent (error %d): the thread did not stop"
                     % _count(stop.get("signal_error")))
        return lines
    lines.append("xref: (a signal from the probe: the thread stopped just after the probed instruction%s)"
                 % (" at " + where if where else ""))
    caller = came_from(stop, describe)
    if caller is not None:
        lines.append("xref: called from " + caller)
    return lines


def stop_lines(session_id, changes, started, describe):
    """What changed at this stop. `started` is the start answer's
    `addresses`, in the same order as changes["addresses"]."""
    elapsed = _count(changes.get("elapsed_ms"))
    since = _count(changes.get("since_ms"))
    lines = ["xref: probe session %d at %.2f s (+%.2f s): %s, %d lost" % (
        session_id, elapsed / 1000.0, max(elapsed - since, 0) / 1000.0, plural(_count(changes.get("hits_added")),
                                                                               "new hit"),
        _count(changes.get("lost_events")))]
    if isinstance(changes.get("stop"), dict):
        lines.extend(stopped_lines(session_id, changes["stop"], started, describe))
    for index, change in enumerate(_list(changes.get("addresses"))):
        change = _dict(change)
        hits, added = _count(change.get("hits")), _count(change.get("hits_added"))
        passed = _count(change.get("passed"))
        line = "  %s  %s  hits %d %s" % (change.get("address", "?"), address_place(started, index, change, describe),
                                         hits, "(+%d)" % added if added else "(no new hits)")
        if passed != hits:
            line += "  passed %d (+%d)" % (passed, _count(change.get("passed_added")))
        line += "  threads %d" % _count(change.get("threads"))
        new_threads = [str(_count(tid)) for tid in _list(change.get("new_threads"))]
        if new_threads:
            line += ", new " + " ".join(new_threads)
        lines.append(line)
        if not added:
            continue
        callers = _dict(change.get("callers"))
        _grown_lines(lines, "    callers (%s):" % callers.get("method", "?"), callers.get("sites"),
                     lambda caller: came_from(caller, describe) or "?")
        groups = _dict(change.get("groups"))
        _grown_lines(lines, "    by %s:" % groups.get("by", "?"), groups.get("values"),
                     lambda value: group_key(groups.get("by"), value.get("key")))
        stacks = _dict(change.get("stacks"))
        if _list(stacks.get("stacks")):
            lines.append("    stacks (%s):" % stacks.get("method", "?"))
            for stack in _list(stacks.get("stacks")):
                stack = _dict(stack)
                lines.append("      +%d  (%d in all)%s" % (_count(stack.get("hits_added")), _count(stack.get("hits")),
                                                          "  new" if stack.get("new") else ""))
                lines.extend(frame_lines(stack, describe))
        samples = _list(change.get("samples"))
        for sample in samples[:SAMPLES_PER_STOP]:
            lines.append(sample_line(_dict(sample), describe))
        if len(samples) > SAMPLES_PER_STOP:
            lines.append("    ... %s (xref show)" % plural(len(samples) - SAMPLES_PER_STOP, "more sample"))
        lost = _count(change.get("records_lost_added"))
        if lost:
            lines.append("    lost %s (ring buffer full)" % plural(lost, "sample"))
    return lines


def show_lines(session_id, document, state, started, describe):
    """`xref show`: the whole result so far. `state` is "running" or "ended REASON"."""
    lines = ["xref: probe session %d (%s), %d ms, backend %s" % (
        session_id, state, _count(_dict(document.get("summary")).get("duration_ms")), document.get("backend") or "?")]
    for index, listed in enumerate(_list(document.get("addresses"))):
        listed = _dict(listed)
        rate = listed.get("rate_per_s")
        lines.append("  %s  %s  hits %d  passed %d  threads %d  rate %.1f/s" % (
            listed.get("address", "?"), address_place(started, index, listed, describe),
            _count(listed.get("hits")), _count(listed.get("passed")), len(_list(listed.get("threads"))),
            rate if isinstance(rate, (int, float)) and not isinstance(rate, bool) else 0.0))
        released = _dict(listed.get("released"))
        if released:
            lines.append("    not observed since %d ms (%s): counted up to then" % (
                _count(released.get("at_ms")), released.get("reason") or "?"))
        callers = _dict(listed.get("callers"))
        if "sites" in callers:
            lines.append("    callers (%s):" % callers.get("method", "?"))
            for caller in _list(callers.get("sites")):
                caller = _dict(caller)
                lines.append("      %d  %s" % (_count(caller.get("hits")), came_from(caller, describe) or "?"))
        elif callers:
            lines.append("    callers unknown: %s" % callers.get("note", ""))
        groups = _dict(listed.get("groups"))
        if groups:
            lines.append("    by %s (%s):" % (groups.get("by", "?"), plural(_count(groups.get("keys")), "key")))
            for value in _list(groups.get("values")):
                value = _dict(value)
                lines.append("      %d  %s" % (_count(value.get("hits")),
                                                group_key(groups.get("by"), value.get("key"))))
        hist = _dict(listed.get("hist"))
        if _list(hist.get("buckets")):
            lines.append("    hist %s:" % hist.get("name", "?"))
            for bucket in _list(hist.get("buckets")):
                bucket = _dict(bucket)
                lines.append("      [%d, %d]  %d" % (_count(bucket.get("from")), _count(bucket.get("to")),
                                                      _count(bucket.get("hits"))))
        stacks = _dict(listed.get("stacks"))
        if stacks:
            lines.append("    stacks (%s, %s, %d unread):" % (stacks.get("method", "?"),
                                                            plural(_count(stacks.get("keys")), "distinct stack"),
                                                            _count(stacks.get("unread"))))
            for stack in _list(stacks.get("stacks")):
                lines.append("      %d" % _count(_dict(stack).get("hits")))
                lines.extend(frame_lines(stack, describe))
        for sample in _list(listed.get("samples")):
            lines.append(sample_line(_dict(sample), describe))
        lost = _count(listed.get("records_lost"))
        if lost:
            lines.append("    lost %s (ring buffer full)" % plural(lost, "sample"))
    return lines


def end_line(session_id, stop_reason, summary, error):
    """`xref: session S ended (REASON): H hits, P passed, R samples, lost L`, and the error's message."""
    line = "xref: session %d ended (%s)" % (session_id, stop_reason)
    if isinstance(summary, dict) and summary:
        line += ": %s, %d passed, %s, lost %d" % (
            plural(_count(summary.get("hits")), "hit"), _count(summary.get("passed")),
            plural(_count(summary.get("records_received")), "sample"), _count(summary.get("lost_events")))
    if isinstance(error, dict) and "message" in error:
        line += "; " + str(error["message"])
    return line
