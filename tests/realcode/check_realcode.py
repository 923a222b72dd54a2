#!/usr/bin/env python3
"""One ctest of the real-code suite: one build of one program in one mode.

  check_realcode.py --xref XREF --program rc_c --binary BUILD [--symbols UNSTRIPPED]
                    --mode functions|callees|allcalls [--requests N]

Traces every scenario of the program (tests/realcode/realcode/programs.py)
and compares each window with what the program recorded. Prints one line
per idiom (equal / wrong / refused) and, for each wrong window, the expected
and the actual events. Exit status 0 when every idiom is equal, 1 otherwise,
77 (skip) when BPF or xref is missing and XREF_REQUIRE_BPF is not 1.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from realcode.check import check_build  # noqa: E402
from realcode.facility import missing_status  # noqa: E402
from realcode.programs import MODES, PROGRAMS  # noqa: E402
from realcode.record import ModelError  # noqa: E402



def missing_facility(xref: str) -> str | None:
    if not os.access(xref, os.X_OK):
        return f"the xref helper ({xref})"
    if os.geteuid() != 0:
        return "BPF (run as root)"
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--xref", required=True)
    parser.add_argument("--program", required=True, choices=sorted(PROGRAMS))
    parser.add_argument("--binary", required=True)
    parser.add_argument("--symbols", help="the unstripped twin of a stripped --binary")
    parser.add_argument("--mode", required=True, choices=MODES)
    parser.add_argument("--requests", type=int, default=20, help="per thread (two threads)")
    options = parser.parse_args()

    missing = missing_facility(options.xref)
    if missing:
        return missing_status(missing)

    try:
        result = check_build(options.xref, options.binary, options.symbols or options.binary,
                             PROGRAMS[options.program], options.mode, requests=options.requests)
    except ModelError as error:
        print(f"the test's model does not fit this build: {error}")
        return 1
    for line in result.log:
        print(line)
    print(f"\n{options.program} {os.path.basename(options.binary)} --{options.mode}:")
    for name, row in sorted(result.rows.items()):
        print(f"  {name}: {row.verdict()}")
    return 0 if result.passed else 1


if __name__ == "__main__":
    sys.exit(main())
