"""The one exception xref's gdb commands raise."""

import gdb


class XrefError(gdb.GdbError):
    """A failed xref command or API call: one line, no traceback."""
