"""What a real-code test does when something it needs is missing: fail when
XREF_REQUIRE_BPF=1 (CI), else skip with ctest's skip status."""
from __future__ import annotations

import os

SKIP = 77  # ctest's SKIP_RETURN_CODE


def missing_status(missing: str) -> int:
    """Prints why, and returns the test's exit status."""
    if os.environ.get("XREF_REQUIRE_BPF") == "1":
        print(f"required facility missing (XREF_REQUIRE_BPF=1): {missing}")
        return 1
    print(f"facility missing, skipped (set XREF_REQUIRE_BPF=1 to fail): {missing}")
    return SKIP
