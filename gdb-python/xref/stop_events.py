"""gdb's events: at each stop the windows that closed print (after a
`drain`); when the process exits, its last windows; when gdb exits, the
helper's stdin closes so it detaches everything."""

import traceback

import gdb

from . import state as state_module
from .state import write_lines


def _guarded(action):
    lines = []
    try:
        action(state_module.get(), lines)
    except Exception as error:  # an event handler must not break gdb's stop
        lines.append("xref: internal error: %s" % error)
        lines.extend(traceback.format_exc().rstrip("\n").split("\n"))
    write_lines(lines)


def on_cont(event):
    state_module.get().target_running = True


def on_stop(event):
    state_module.get().target_running = False
    _guarded(lambda state, lines: state.on_stop(lines))


def on_exited(event):
    state_module.get().target_running = False
    _guarded(lambda state, lines: state.on_exited(event.inferior.num, lines))


def on_gdb_exiting(event=None):
    state_module.get().shutdown()


def connect():
    gdb.events.cont.connect(on_cont)
    gdb.events.stop.connect(on_stop)
    gdb.events.exited.connect(on_exited)
    gdb.events.gdb_exiting.connect(on_gdb_exiting)
