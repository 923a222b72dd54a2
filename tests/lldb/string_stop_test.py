"""`--stop-when` on a :string fetch in real lldb-19 (batch mode) with the
plugin and the real helper: string_target (gcc and clang -O2) passes its
keys to lookup_key; `--stop-when 'key == "stop-here"'` (exact),
`'key == "stop*"'` (prefix) and the exact one with `--skip 1` must stop
the thread once, at the key that matches (the first; the second with
--skip 1), LLDB reporting signal SIGRTMAX-1 in lookup_key with %rdi
pointing at that key; the keys the target logged up to the stop must be
what the probe counted there, and its record at exit what the session
counted (tests/support/string_stop.py). Batch mode ends its -o commands at
a stop by a signal; what follows the stop is given with -k.
One test per run: `python3 string_stop_test.py CASE_COMPILER`."""

import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "support"))
from facility import require, run_named  # noqa: E402
from lldb_batch import between, lldb_available, run_lldb  # noqa: E402
from string_stop import CASES, Scenario, check_helper_text, probe_command, stop_key  # noqa: E402


def string_stop(case, compiler):
    require(lldb_available(), "lldb-19 (Debian package lldb-19)")
    require(os.geteuid() == 0, "BPF (run as root)")
    with Scenario(compiler) as scenario:
        status, output = run_lldb(["breakpoint set -n main", "run", "breakpoint delete 1", probe_command(case),
                                   "continue"], scenario.target(),
                                  ["bt 1", "x/s $rdi", "script " + scenario.print_log(), "xref show", "continue",
                                   "xref show"])

        def check(condition, message):
            if not condition:
                raise AssertionError(message + "\n--- lldb output ---\n" + output)

        check(status == 0, "lldb failed (%d)" % status)
        _, key = stop_key(case)
        stopped = between(output, "(lldb) continue", "(lldb) bt 1")
        frame = r"stop reason = signal SIGRTMAX-1\n +frame #0: 0x[0-9a-f]+ string_target-%s`lookup_key\(" % compiler
        check(re.search(frame, stopped) is not None, "LLDB did not stop by SIGRTMAX-1 in lookup_key")
        check(re.search(frame, between(output, "(lldb) bt 1", "(lldb) x/s")) is not None, "frame 0 is not lookup_key")
        check(re.search(r"\n0x[0-9a-f]+: \"%s\"\n" % re.escape(key), between(output, "(lldb) x/s", "(lldb) script"))
              is not None, "%%rdi does not point at %r" % key)
        check(re.search(r"Process \d+ exited with status = 0 ", output) is not None, "the program did not exit 0")
        check_helper_text(case, output, stopped, between(output, "(lldb) xref show", "(lldb) continue"),
                          output.rsplit("(lldb) xref show", 1)[-1], scenario.recorded(), check)


TESTS = {"%s_%s" % (case, compiler): (lambda case=case, compiler=compiler: string_stop(case, compiler))
         for case in CASES for compiler in ("gcc", "clang")}

if __name__ == "__main__":
    sys.exit(run_named(TESTS, sys.argv))
