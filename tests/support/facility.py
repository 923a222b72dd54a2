"""A facility a Python test needs (BPF, a debugger, a compiler): missing, the
test skips (ctest's SKIP_RETURN_CODE), or fails where XREF_REQUIRE_BPF=1 (CI)."""

import os

SKIP = 77  # ctest's SKIP_RETURN_CODE


class Skip(Exception):
    pass


def require(condition, what):
    """Fails when XREF_REQUIRE_BPF=1 (CI), skips otherwise."""
    if condition:
        return
    if os.environ.get("XREF_REQUIRE_BPF") == "1":
        raise AssertionError("required facility missing (XREF_REQUIRE_BPF=1): " + what)
    raise Skip("facility missing, skipped (set XREF_REQUIRE_BPF=1 to fail): " + what)


def run_named(tests, argv):
    """`python3 TEST.py NAME`: runs tests[NAME]; 0 passed, 1 failed, SKIP skipped, 2 unknown NAME."""
    name = argv[1] if len(argv) > 1 else ""
    if name not in tests:
        print("usage: %s {%s}" % (argv[0], "|".join(sorted(tests))))
        return 2
    try:
        tests[name]()
    except Skip as skip:
        print(skip)
        return SKIP
    print("passed")
    return 0
