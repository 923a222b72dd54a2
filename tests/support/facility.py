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
