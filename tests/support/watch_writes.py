"""What a watch recorded against what watch_target recorded, for the gdb and
lldb watch tests: the record's writes of the watched ranges and the
live_watch document's writes in one shape, per thread, and their exact
comparison; and the document a front end's `xref show --all --json` printed."""

import json

import watch_target_record as wt


def expected_writes(record, ranges):
    """The record's writes of `ranges` ([(object, offset, length)], in the
    watch's range order), per thread in order: (range, offset in the range,
    old hex, new hex, function). Kernel writes are the watch's unobserved
    changes, not writes."""
    threads = {}
    for write in record:
        if write.by_kernel:
            continue
        for index, (obj, offset, length) in enumerate(ranges):
            part = wt.clip(write, obj, offset, length)
            if part is not None:
                threads.setdefault(write.tid, []).append(
                    (index, part.offset - offset, part.old.hex(), part.new.hex(), part.function))
    return threads


def watched_writes(document):
    """The document's writes in the same shape; a libc writer by contract is
    named by its caller, as the record names it."""
    threads = {}
    for write in sorted(document["result"]["writes"], key=lambda w: w["seq"]):
        writer = write["writer"] or {}
        function = writer.get("function", "?")
        if writer.get("by_contract") and writer.get("caller"):
            function = writer["caller"]["function"]
        threads.setdefault(write["tid"], []).append(
            (write["range"], write["offset"], write["old_bytes"], write["new_bytes"], function))
    return threads


def expect_equal(expected, watched, output):
    """Raises AssertionError (with the debugger's output) at the first
    difference: a write missed, one the target did not make, one differing,
    per thread in order."""
    def check(condition, message):
        if not condition:
            raise AssertionError(message + ("\n--- output ---\n" + output if output else ""))

    check(sum(len(writes) for writes in expected.values()) > 0, "the target recorded no write of the ranges")
    for tid, writes in expected.items():
        seen = watched.get(tid, [])
        for i in range(max(len(writes), len(seen))):
            check(i < len(seen), "thread %d: the watch missed write %d: %r" % (tid, i + 1, writes[i]))
            check(i < len(writes), "thread %d: the watch saw a write the target did not record: %r" % (tid, seen[i]))
            check(writes[i] == seen[i], "thread %d write %d: recorded %r, watched %r" % (tid, i + 1, writes[i], seen[i]))
    for tid in watched:
        check(tid in expected, "the watch saw writes of thread %d, which recorded none" % tid)


def last_document(output):
    """The live_watch document of the last `xref show --all --json` line in
    `output` ({"session", "document"}: one session's), or None."""
    found = None
    for line in output.split("\n"):
        if line.startswith("{") and '"live_watch"' in line:
            found = json.loads(line)
    return None if found is None else found.get("document", found)
