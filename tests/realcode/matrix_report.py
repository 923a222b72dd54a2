#!/usr/bin/env python3
"""Runs the whole real-code matrix and prints one markdown table.

  tests/realcode/matrix_report.py [--build-dir build] [--requests N]

Rows: program/idiom and the builds that behave alike; columns: the three
modes; cells: equal, wrong (how: the first wrong event of the first wrong
window, and how many windows were wrong) or refused (xref's error). The
programs and xref are taken from the build directory, as ctest takes them.
Needs root (BPF) and takes about two minutes.
"""
from __future__ import annotations

import argparse
import itertools
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from realcode.check import check_build  # noqa: E402
from realcode.programs import MODES, PROGRAMS  # noqa: E402
from realcode.record import ModelError  # noqa: E402

COMPILERS = ("gcc", "clang")
LEVELS = ("O0", "O2")
LINKS = ("pie", "nopie")
STRIPS = ("", "-stripped")
MODE_HEADERS = {"functions": "`--functions`", "callees": "`--callees-of S --depth N`", "allcalls": "`--all-calls-in S`"}


def build_label(cube: tuple) -> str:
    """A set of builds given per dimension (None: every value)."""
    compiler, level, link, strip = cube
    words = [compiler or "", f"-{level}" if level else "", link or "",
             {"": "unstripped", "-stripped": "stripped"}.get(strip, "") if strip is not None else ""]
    text = " ".join(word for word in words if word)
    return text or "all builds"


def describe_builds(builds: set[tuple]) -> str:
    """The fewest cubes (a value or 'any' per dimension) that cover builds."""
    dims = (COMPILERS, LEVELS, LINKS, STRIPS)
    cubes = []
    for choice in itertools.product(*[(None, *values) for values in dims]):
        members = set(itertools.product(*[(value,) if value is not None else values
                                          for value, values in zip(choice, dims)]))
        if members <= builds:
            cubes.append((choice, members))
    cubes.sort(key=lambda cube: -len(cube[1]))
    left, chosen = set(builds), []
    for choice, members in cubes:
        if members & left:
            chosen.append(choice)
            left -= members
    return "; ".join(build_label(choice) for choice in chosen)


def cell(verdict: str) -> str:
    text = re.sub(r"request \d+: ", "", verdict)
    text = re.sub(r"0x[0-9a-f]+ \(", "(", text)  # addresses differ per build; the function is what matters
    return text.replace("|", "\\|")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--requests", type=int, default=20)
    options = parser.parse_args()
    xref = os.path.join(options.build_dir, "helper", "xref")
    programs_dir = os.path.join(options.build_dir, "tests", "realcode")

    # (program, row) -> build -> mode -> verdict
    verdicts: dict[tuple[str, str], dict[tuple, dict[str, str]]] = {}
    for program in PROGRAMS.values():
        for build in itertools.product(COMPILERS, LEVELS, LINKS, STRIPS):
            compiler, level, link, strip = build
            unstripped = os.path.join(programs_dir, f"{program.name}-{compiler}-{level}-{link}")
            for mode in MODES:
                print(f"{program.name} {build_label(build)} --{mode}", file=sys.stderr)
                try:
                    result = check_build(xref, unstripped + strip, unstripped, program, mode,
                                         requests=options.requests)
                except ModelError as error:  # a defect of this suite, shown rather than hidden
                    verdicts.setdefault((program.name, "(model error)"), {}).setdefault(build, {})[mode] = str(error)
                    continue
                for name, row in result.rows.items():
                    verdicts.setdefault((program.name, name), {}).setdefault(build, {})[mode] = cell(row.verdict())

    print("| program / idiom | builds | " + " | ".join(MODE_HEADERS[mode] for mode in MODES) + " |")
    print("|---|---|" + "---|" * len(MODES))
    for (program, row), by_build in sorted(verdicts.items()):
        groups: dict[tuple, set] = {}
        for build, by_mode in by_build.items():
            groups.setdefault(tuple(by_mode.get(mode, "(not run)") for mode in MODES), set()).add(build)
        for cells, builds in sorted(groups.items(), key=lambda item: (item[0] != ("equal",) * len(MODES), item[0])):
            print(f"| {program} / {row} | {describe_builds(builds)} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
