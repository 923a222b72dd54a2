"""`--stop-when` on a :string fetch, the scenario GDB and LLDB share
(tests/gdb/string_stop_test.py, tests/lldb/string_stop_test.py).

string_target (tests/targets, gcc and clang -O2) passes KEYS once each to
lookup_key(const char *key), logging each key just before the call (--log)
and writing the count per key at its exit (--record). A probe session
`xref probe lookup_key --fetch 'key=+0(%di):string' --group-by key
--stop-when COND [--skip N]` must stop the thread once, in lookup_key, at
the first key COND admits after N of them; there the target's log (every
key passed so far, the one stopped at included) must be what the probe
counted, key by key and in order, and at the end the target's record what
the session counted.

The debugger's part (its stop reason and frame) is each test's; what the
helper writes is the same text in both, so it is read here."""

import os
import re
import tempfile
from collections import Counter

STRING_TARGET_DIR = os.environ.get("XREF_STRING_TARGET_DIR", "")

# Keys a wrong comparison would stop at first: a shorter "sto", a "Stop"
# that differs in case, "stop-her" (a prefix of the exact constant) and
# "stop-here-too" (which starts with it); "stop-here" comes twice, and
# "stop*" is a key (`"stop\*"` in a condition) as well as a prefix.
KEYS = ["get", "set", "sto", "Stop", "stop-her", "stop-here-too", "stop*", "set", "stop-here", "get", "stop-here"]
# (--stop-when, the keys it admits, --skip: how many of them pass first)
CASES = {
    "exact": ('key == "stop-here"', lambda key: key == "stop-here", 0),
    "prefix": ('key == "stop*"', lambda key: key.startswith("stop"), 0),
    "skip": ('key == "stop-here"', lambda key: key == "stop-here", 1),
    # The escape as docs/probe.md writes it, in the same words as in a shell.
    "escaped": ('key == "stop\\*"', lambda key: key == "stop*", 0),
}
ORDINALS = ["1st", "2nd", "3rd", "4th"]


def probe_command(case):
    condition, _, skip = CASES[case]
    return ("xref probe lookup_key --fetch 'key=+0(%%di):string' --group-by key --first 0 --stop-when '%s' "
            "--skip %d --duration-ms 0" % (condition, skip))


def stop_key(case):
    """(hit number, key) of the key the case stops at: the first its
    condition admits after --skip of them."""
    _, admits, skip = CASES[case]
    index = [index for index, key in enumerate(KEYS) if admits(key)][skip]
    return index + 1, KEYS[index]


class Scenario:
    """A scratch directory with string_target's go file, log and record."""

    def __init__(self, compiler):
        self.binary = os.path.join(STRING_TARGET_DIR, "string_target-" + compiler)

    def __enter__(self):
        self.directory = tempfile.TemporaryDirectory(prefix="xref-string-stop-")
        path = self.directory.name
        self.go, self.log, self.record = (os.path.join(path, name) for name in ("go", "log", "record"))
        open(self.go, "w").close()  # the keys are passed as soon as main runs
        return self

    def __exit__(self, *exception):
        self.directory.cleanup()

    def target(self):
        return [self.binary, "--record", self.record, "--go-file", self.go, "--rounds", "1", "--keys", ",".join(KEYS),
                "--log", self.log]

    def print_log(self):
        """A Python statement for the debugger's interpreter that prints the
        log as it is at the stop."""
        return "print('log at the stop: ' + ' '.join(open(%r).read().split()))" % self.log

    def recorded(self):
        with open(self.record) as lines:
            return Counter({key_of(word): int(count) for word, count in (line.split() for line in lines)})


def key_of(word):
    """string_target writes keys in hex, "-" for the empty key."""
    return "" if word == "-" else bytes.fromhex(word).decode("latin-1")


def logged_at_stop(output):
    match = re.search(r"\nlog at the stop: ([0-9a-f -]*)\n", output)
    return None if match is None else [key_of(word) for word in match.group(1).split()]


def shown_probe(text):
    """lookup_key's hits, its groups by key and its samples' keys (in hit
    order) in an `xref show` text."""
    hits = re.search(r"\n  lookup_key at \S+  hits (\d+)  passed (\d+)  ", text)
    groups = Counter({key: int(count) for count, key in re.findall(r"\n +(\d+)  \"([^\"]*)\"(?=\n)", text)})
    samples = re.findall(r"\n    sample hit (\d+)  thread \d+  key=\"([^\"]*)\"(?=\n)", text)
    return (None if hits is None else int(hits.group(1))), groups, samples


def check_helper_text(case, output, stopped_text, show_at_stop, show_at_end, recorded, check):
    """What the helper wrote, against the target's log and record.
    `stopped_text`: from `continue` to the first command after the stop;
    `check(condition, message)` raises with the debugger's output."""
    condition, _, skip = CASES[case]
    hit, key = stop_key(case)
    stop_line = (r"\nxref: probe session 1 stopped thread \d+: hit %d of lookup_key, the %s where --stop-when "
                 r"'%s' held: key=\"%s\"\n" % (hit, ORDINALS[skip], re.escape(condition), re.escape(key)))
    check(re.search(stop_line, stopped_text) is not None, "no stop line for hit %d (key %r)" % (hit, key))
    check(stopped_text.count("stopped thread") == 1, "not one stop")
    check(output.count(" stopped thread ") == output.count("(gdb) xref show") + output.count("(lldb) xref show") + 1,
          "the session stopped a thread more than once")

    logged = logged_at_stop(output)
    check(logged == KEYS[:hit], "the target's log at the stop is %r, not the first %d keys" % (logged, hit))
    hits, groups, samples = shown_probe(show_at_stop)
    check(hits == hit, "xref show at the stop: %s hits, the target passed %d keys" % (hits, hit))
    check(groups == Counter(logged), "xref show at the stop counts %s, the target logged %s" % (dict(groups),
                                                                                             dict(Counter(logged))))
    check(samples == [(str(number), key) for number, key in enumerate(logged, 1)],
          "the samples at the stop %s are not the logged keys in order" % samples)

    hits, groups, samples = shown_probe(show_at_end)
    check(hits == len(KEYS), "xref show at the end: %s hits, the target passed %d keys" % (hits, len(KEYS)))
    check(groups == recorded, "xref show at the end counts %s, the target recorded %s" % (dict(groups),
                                                                                       dict(recorded)))
    check([sample for _, sample in samples] == KEYS, "the samples at the end are not the keys in order")
