"""`--stop-when` on a :string fetch in real gdb (batch mode) with the real
helper: string_target (gcc and clang -O2) passes its keys to lookup_key;
`--stop-when 'key == "stop-here"'` (exact), `'key == "stop*"'` (prefix)
and the exact one with `--skip 1` must stop the thread once, at the key
that matches (the first; the second with --skip 1), with gdb at
catchpoint 2 in lookup_key and %rdi pointing at that key; the keys the
target logged up to the stop must be what the probe counted there, and its
record at exit what the session counted (tests/support/string_stop.py).
One test per run: `python3 string_stop_test.py CASE_COMPILER`."""

import re
import sys

from gdb_batch import main, require_bpf, run_gdb
from string_stop import CASES, Scenario, check_helper_text, probe_command, stop_key


# The words are split as in a shell (and in LLDB): a quote left open is
# refused before anything starts, the session after it is session 1.
UNCLOSED = "xref probe lookup_key --fetch 'key=+0(%di):string' --stop-when 'key == \"stop"


def string_stop(case, compiler):
    require_bpf()
    with Scenario(compiler) as scenario:
        refused = [UNCLOSED] if case == "escaped" else []
        run = run_gdb(["break main", "run", "delete 1"] + refused +
                      [probe_command(case), "continue", "bt 1", "x/s $rdi", "python " + scenario.print_log(),
                       "xref show", "continue", "xref show"], scenario.target())

        def check(condition, message):
            if not condition:
                raise AssertionError(message + "\n--- gdb output ---\n" + run.output)

        check(run.exit_status == 0, "gdb failed")
        if refused:
            check(run.has("\nxref: cannot split `%s` into words (no closing quotation); close each quote, as in a "
                          "shell\n" % UNCLOSED), "no error for the quote left open")
        _, key = stop_key(case)
        stopped = run.between("(gdb) continue", "(gdb) bt 1")
        check(re.search(r"\nCatchpoint 2 \(signal SIG63\), (?:0x[0-9a-f]+ in )?lookup_key \(", stopped) is not None,
              "gdb did not stop at catchpoint 2 in lookup_key")
        check(re.match(r"\(gdb\) bt 1\n#0  (?:0x[0-9a-f]+ in )?lookup_key \(", run.between("(gdb) bt 1", "(gdb) x/s"))
              is not None, "frame 0 is not lookup_key")
        check(re.search(r"\n0x[0-9a-f]+:\s+\"%s\"\n" % re.escape(key), run.between("(gdb) x/s", "(gdb) python"))
              is not None, "%%rdi does not point at %r" % key)
        check(re.search(r"\[Inferior 1 \(process \d+\) exited normally\]", run.output) is not None,
              "the program did not exit 0")
        check_helper_text(case, run.output, stopped, run.between("(gdb) xref show", "(gdb) continue"),
                          run.output.rsplit("(gdb) xref show", 1)[-1], scenario.recorded(), check)


TESTS = {"%s_%s" % (case, compiler): (lambda case=case, compiler=compiler: string_stop(case, compiler))
         for case in CASES for compiler in ("gcc", "clang")}

if __name__ == "__main__":
    sys.exit(main(TESTS))
