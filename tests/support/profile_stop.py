"""`xref profile` in a debugger, read back (tests/gdb/gdb_profile_test.py,
tests/lldb/profile_test.py): profile_target's record (its header comment in
tests/targets/profile_target.c is the contract) and the table of hottest
functions a stop prints, compared with each other; the source lines of each
leaf's code, from the source itself, for the file:line a debugger names."""

import os
import re

LEAVES = ("leaf_a", "leaf_b", "leaf_c", "leaf_r")
SOURCE = os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "targets", "profile_target.c")

# "  40.12%     1203   41.00%     1230  leaf_a at profile_target.c:187  profile_target"
_ROW = re.compile(r"^ *([0-9.]+)% +(\d+) +([0-9.]+)% +(\d+)  (.+?)(?: at ([^ :]+):(\d+))?  (\S*)$")


class Row:
    def __init__(self, match):
        self.self_share = float(match.group(1))
        self.self_samples = int(match.group(2))
        self.total_share = float(match.group(3))
        self.total_samples = int(match.group(4))
        self.function = match.group(5)
        self.file = match.group(6)
        self.line = int(match.group(7)) if match.group(7) else 0
        self.module = match.group(8)


def top_table(text):
    """The rows of the first table of hottest functions in `text`."""
    rows = []
    inside = False
    for line in text.replace("\r", "").split("\n"):
        if line.startswith("    Self  Samples    Total  Samples  Function  Module"):
            if rows:
                break
            inside = True
            continue
        if inside:
            match = _ROW.match(line)
            if not match:
                break
            rows.append(Row(match))
    return rows


def read_record(path):
    """{"cpu": {(tid, phase): ns}, "leaf": {(tid, phase, leaf): ns}, "threads": {tid: name}}."""
    record = {"cpu": {}, "leaf": {}, "threads": {}}
    with open(path) as lines:
        for line in lines:
            fields = line.split()
            if fields[:1] == ["cpu"]:
                record["cpu"][(int(fields[1]), int(fields[2]))] = int(fields[3])
            elif fields[:1] == ["leaf"]:
                record["leaf"][(int(fields[1]), int(fields[2]), fields[3])] = int(fields[4])
            elif fields[:1] == ["thread"]:
                record["threads"][int(fields[1])] = fields[2]
    return record


def recorded_shares(record, phase):
    """Each leaf's share (percent) of the CPU every recorded thread spent in `phase`."""
    cpu = sum(ns for (tid, at), ns in record["cpu"].items() if at == phase)
    shares = {}
    for leaf in LEAVES:
        ns = sum(value for (tid, at, name), value in record["leaf"].items() if at == phase and name == leaf)
        shares[leaf] = 100.0 * ns / cpu if cpu else 0.0
    return shares


def leaf_lines(leaf):
    """The source lines of `leaf`'s code: its own line, spend()'s body and its spin loop's (both inlined into it)."""
    text = open(SOURCE).read().split("\n")
    spin = "spin_" + leaf[-1]

    def body(opening):
        start = next(i for i, line in enumerate(text) if line.startswith(opening))
        end = next(i for i in range(start, len(text)) if text[i] == "}")
        return set(range(start + 1, end + 2))  # 1-based, the braces included

    own = {i + 1 for i, line in enumerate(text) if line.startswith("FRAME void %s(" % leaf)}
    return own | body("ALWAYS_INLINE void spend(") | body("ALWAYS_INLINE uint64_t %s(" % spin)


def compare(rows, record, phase, check):
    """The top function is the leaf the record says is hottest; each leaf of 5 % or more has its recorded
    share within 3 points (Total: the leaf and what it calls, as the record measures it); each names its
    file:line inside that leaf's code."""
    shares = recorded_shares(record, phase)
    by_name = {row.function: row for row in rows}
    hottest = max(shares, key=shares.get)
    check(rows and rows[0].function == hottest,
          "the top function is %s, the record's hottest is %s (%s)" % (rows[0].function if rows else None, hottest,
                                                                        shares))
    compared = 0
    for leaf, share in shares.items():
        if share < 5.0:
            continue
        row = by_name.get(leaf)
        check(row is not None, "%s (recorded %.2f%%) is not in the table" % (leaf, share))
        check(abs(row.total_share - share) <= 3.0,
              "%s: %.2f%% reported, %.2f%% recorded" % (leaf, row.total_share, share))
        check(row.file == "profile_target.c" and row.line in leaf_lines(leaf),
              "%s is named at %s:%d, not in its code" % (leaf, row.file, row.line))
        compared += 1
    check(compared >= 3, "only %d leaves of 5 %% or more (%s)" % (compared, shares))
    return shares


def helper_perf_events(helper):
    """perf event descriptors held by every `HELPER serve` running (a debugger test starts one)."""
    count = 0
    for pid in [entry for entry in os.listdir("/proc") if entry.isdigit()]:
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as cmdline:
                words = cmdline.read().split(b"\0")
            if len(words) < 2 or os.path.realpath(words[0].decode()) != os.path.realpath(helper) or words[1] != b"serve":
                continue
            for fd in os.listdir("/proc/%s/fd" % pid):
                if os.readlink("/proc/%s/fd/%s" % (pid, fd)) == "anon_inode:[perf_event]":
                    count += 1
        except OSError:
            continue
    return count


def check_interrupted_capture(output, helper, check):
    """What a debugger prints when Ctrl-C ends a capture of profile_target:
    the capture's summary and its table of hottest functions, a leaf named
    with its file:line; and by the time the end line prints, the helper
    holds none of the capture's perf events (it closes them before it sends
    the session's end)."""
    check("    Self  Samples    Total  Samples  Function  Module" in output and "ended by until_stop" in output,
          "the interrupt did not print the capture's hottest functions")
    check(re.search(r"leaf_[abcr] at profile_target\.c:\d+  profile_target", output) is not None,
          "no leaf named with its file:line")
    check(helper_perf_events(helper) == 0, "the capture's perf events are still open at its end line")
