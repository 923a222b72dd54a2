#!/usr/bin/env python3
"""One ctest of the real-code suite's `--here` part: one build of one
program in one debugger.

  check_here.py --debugger lldb|gdb --debugger-program PATH --front-end PATH
                --xref XREF --program rc_c|rc_cpp --binary BUILD [--symbols UNSTRIPPED]
                [--scenario here|unseen_end]

Runs the program under real lldb-19 or gdb in batch mode, types `xref trace
--here` at each planned breakpoint hit (tests/realcode/realcode/here.py) and
compares each window, printed at the next stop, with what the program
recorded of that call. Prints one line per session and, for a wrong window,
the expected and the actual events, then the debugger's output. Exit
status 0 when every window is equal, 1 otherwise, 77 (skip) when the
debugger, BPF or xref is missing and XREF_REQUIRE_BPF is not 1.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from realcode.here import Debugger, run_here  # noqa: E402
from realcode.programs import PROGRAMS  # noqa: E402
from realcode.record import ModelError  # noqa: E402

SKIP = 77  # ctest's SKIP_RETURN_CODE


def missing_facility(options) -> str | None:
    if not options.debugger_program or not os.access(options.debugger_program, os.X_OK):
        package = "lldb-19" if options.debugger == "lldb" else "gdb"
        return f"{options.debugger} (Debian package {package})"
    if not os.path.exists(options.front_end):
        return f"the {options.debugger} front end ({options.front_end})"
    if not os.access(options.xref, os.X_OK):
        return f"the xref helper ({options.xref})"
    if os.geteuid() != 0:
        return "BPF (run as root)"
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--debugger", required=True, choices=("lldb", "gdb"))
    parser.add_argument("--debugger-program", default="")
    parser.add_argument("--front-end", required=True, help="libxref_lldb.so or gdb-python/xref.py")
    parser.add_argument("--xref", required=True)
    parser.add_argument("--program", required=True, choices=sorted(PROGRAMS))
    parser.add_argument("--binary", required=True)
    parser.add_argument("--symbols", help="the unstripped twin of a stripped --binary")
    parser.add_argument("--scenario", default="here", choices=("here", "unseen_end"),
                        help="the plan of breakpoints and hits (realcode/here.py)")
    options = parser.parse_args()

    missing = missing_facility(options)
    if missing:
        if os.environ.get("XREF_REQUIRE_BPF") == "1":
            print(f"required facility missing (XREF_REQUIRE_BPF=1): {missing}")
            return 1
        print(f"facility missing, skipped (set XREF_REQUIRE_BPF=1 to fail): {missing}")
        return SKIP

    debugger = Debugger(options.debugger, options.debugger_program, options.front_end, options.xref)
    try:
        result = run_here(debugger, options.binary, options.symbols or options.binary, PROGRAMS[options.program],
                            options.scenario)
    except ModelError as error:
        print(f"the test's model does not fit this build: {error}")
        return 1
    for line in result.lines:
        print(line)
    print(f"\n{options.program} {os.path.basename(options.binary)} --here in {options.debugger}: "
          + ("every window equal" if not result.failures else f"{len(result.failures)} failures"))
    if result.failures:
        print(f"\n--- {options.debugger} output ---\n{result.output}")
    return 0 if not result.failures else 1


if __name__ == "__main__":
    sys.exit(main())
