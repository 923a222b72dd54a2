"""gdb's events: at each stop what the sessions found prints; the helper
hears when the process runs again (a window's time without the stops);
when the process exits, its sessions' last results; when gdb exits, every
session stops."""

import traceback

import gdb

from . import frontend
from .frontend import write_lines


def _guarded(action):
    lines = []
    try:
        action(frontend.get(), lines)
    except frontend.XrefError as error:
        lines.append(str(error))
    except Exception as error:  # an event handler must not break gdb's stop
        lines.append("xref: internal error: %s" % error)
        lines.extend(traceback.format_exc().rstrip("\n").split("\n"))
    write_lines(lines)


def on_cont(event):
    _guarded(lambda state, lines: state.on_resume())


def on_stop(event):
    _guarded(lambda state, lines: state.on_stop(lines))


def on_exited(event):
    _guarded(lambda state, lines: state.on_exited(lines))


def on_gdb_exiting(event=None):
    frontend.get().shutdown()


def connect():
    gdb.events.cont.connect(on_cont)
    gdb.events.stop.connect(on_stop)
    gdb.events.exited.connect(on_exited)
    gdb.events.gdb_exiting.connect(on_gdb_exiting)
