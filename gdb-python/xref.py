# The GDB front end of xref: `source /path/to/gdb-python/xref.py` in gdb
# (or in ~/.gdbinit) adds the `xref` command and the `xref` Python module
# (docs/gdb.md). The code lives in the package next to this file.
import os
import sys

_directory = os.path.dirname(os.path.realpath(__file__))
if _directory not in sys.path:
    sys.path.insert(0, _directory)

import xref  # noqa: E402  (the package gdb-python/xref/, which wins over this file)

xref.install()
