"""What gdb knows and the helper needs (docs/protocol.md, session.start
`context`): the process, the main executable, the selected frame (pc, CFA),
every breakpoint with its locations and the debug registers gdb holds; and
watch's expressions evaluated in the selected frame."""

import re

import gdb

from .errors import XrefError

_FRAME_AT = re.compile(r"frame at (0x[0-9a-f]+)")


def process_id():
    """The selected inferior's pid, or None when it has no live process."""
    inferior = gdb.selected_inferior()
    return inferior.pid if inferior is not None and inferior.pid > 0 else None


def executable():
    return gdb.current_progspace().filename


def real_frame(frame):
    """The frame itself, or the one an inlined frame lives in."""
    while frame is not None and frame.type() == gdb.INLINE_FRAME:
        frame = frame.older()
    return frame


def caller_of(frame):
    """The frame the selected one returns to (past inlined frames), or None."""
    real = real_frame(frame)
    return real.older() if real is not None else None


def frame_cfa(frame):
    """The canonical frame address: the caller's stack pointer once this
    frame returned, which is also what `info frame` calls "frame at"."""
    caller = caller_of(frame)
    if caller is not None:
        return int(caller.read_register("rsp"))
    selected = gdb.selected_frame()
    try:
        frame.select()
        text = gdb.execute("info frame", to_string=True)
    finally:
        selected.select()
    match = _FRAME_AT.search(text)
    if match is None:
        raise XrefError("xref: gdb cannot tell the selected frame's CFA")
    return int(match.group(1), 16)


class HereFrame:
    def __init__(self, tid, pc, cfa, thread_number, sp=None, bp=None):
        self.tid = tid
        self.pc = pc
        self.cfa = cfa
        self.sp = sp  # the frame's rsp and rbp: the helper checks the CFA with them
        self.bp = bp
        self.thread_number = thread_number  # gdb's number of the thread, for thread-specific breakpoints


def here_frame():
    """The selected thread and frame for --here; raises XrefError."""
    thread = gdb.selected_thread()
    if thread is None or not thread.is_valid() or not thread.is_stopped():
        raise XrefError("xref: --here needs a stopped process: stop it at a breakpoint first")
    try:
        frame = gdb.selected_frame()
    except gdb.error:
        raise XrefError("xref: --here needs a selected thread and frame")
    return HereFrame(thread.ptid[1], frame.pc(), frame_cfa(frame), thread.num,
                     frame_register(frame, "rsp"), frame_register(frame, "rbp"))


def frame_register(frame, name):
    """The frame's value of a register, or None when gdb cannot tell."""
    try:
        return int(frame.read_register(name)) & 0xFFFFFFFFFFFFFFFF
    except (gdb.error, ValueError):
        return None


def breakpoints_json():
    listed = []
    for breakpoint in gdb.breakpoints():
        if breakpoint.type not in (gdb.BP_BREAKPOINT, gdb.BP_HARDWARE_BREAKPOINT) or breakpoint.number <= 0:
            continue
        locations = []
        for index, location in enumerate(getattr(breakpoint, "locations", None) or []):
            if location.address is None:
                continue  # not resolved in the process
            locations.append({"id": "%d.%d" % (breakpoint.number, index + 1), "address": hex(location.address),
                              "enabled": bool(location.enabled)})
        listed.append({"id": breakpoint.number, "enabled": bool(breakpoint.enabled), "locations": locations})
    return listed


HARDWARE_WATCHPOINTS = (gdb.BP_HARDWARE_WATCHPOINT, gdb.BP_READ_WATCHPOINT, gdb.BP_ACCESS_WATCHPOINT)


def watch_slots(breakpoint):
    """Debug registers a hardware watchpoint holds: one per aligned 8 bytes
    it covers (gdb splits a longer or unaligned one the same way)."""
    try:
        value = gdb.parse_and_eval(breakpoint.expression)
        start, length = int(value.address), value.type.sizeof
    except (gdb.error, TypeError, ValueError):
        return 1
    if length <= 0:
        return 1
    return ((start + length - 1) // 8) - (start // 8) + 1


def debug_registers_used():
    """The debug registers gdb itself holds now (docs/protocol.md,
    context.debug_registers_used): enabled hardware watchpoints, and each
    enabled location of an enabled hardware breakpoint."""
    used = 0
    for breakpoint in gdb.breakpoints():
        if not breakpoint.enabled:
            continue
        if breakpoint.type in HARDWARE_WATCHPOINTS:
            used += watch_slots(breakpoint)
        elif breakpoint.type == gdb.BP_HARDWARE_BREAKPOINT:
            locations = getattr(breakpoint, "locations", None)
            used += sum(1 for location in locations if location.enabled) if locations else 1
    return used


def evaluate(entry):
    """One of watch's expressions in the selected frame (prepare.evaluate):
    an lvalue's address and size, or with `location` its value as the
    address and its pointee's size; a gdb error as one line."""
    answer = {"index": entry.get("index", 0), "address": None, "size": 0, "type": None, "error": None}
    try:
        value = gdb.parse_and_eval(entry.get("expression", ""))
        answer["type"] = str(value.type)
        if entry.get("location"):
            answer["address"] = hex(int(value) & 0xFFFFFFFFFFFFFFFF)
            kind = value.type.strip_typedefs()
            if kind.code == gdb.TYPE_CODE_PTR and kind.target().strip_typedefs().code != gdb.TYPE_CODE_VOID:
                answer["size"] = kind.target().sizeof
        elif value.address is None:
            answer["error"] = "not an lvalue: use -l to watch the address it holds"
        else:
            answer["address"] = hex(int(value.address))
            answer["size"] = value.type.sizeof
    except (gdb.error, gdb.MemoryError, OverflowError, ValueError) as error:
        answer["error"] = (str(error).splitlines() or ["gdb could not evaluate it"])[0]
    return answer


def stopped_here():
    """The selected thread's frame when the process is stopped (for --here), else None."""
    thread = gdb.selected_thread()
    if thread is None or not thread.is_valid() or not thread.is_stopped():
        return None
    try:
        return here_frame()
    except (XrefError, gdb.error):
        return None


def request_context(here=None):
    if here is None:
        here = stopped_here()
    context = {}
    pid = process_id()
    if pid is not None:
        context["pid"] = pid
    path = executable()
    if path:
        context["executable"] = path
    if here is not None:
        context["here"] = {"tid": here.tid, "pc": hex(here.pc), "cfa": hex(here.cfa)}
        for key, value in (("sp", here.sp), ("bp", here.bp)):
            if value is not None:
                context["here"][key] = hex(value)
    context["breakpoints"] = breakpoints_json()
    context["debug_registers_used"] = debug_registers_used()
    return context
