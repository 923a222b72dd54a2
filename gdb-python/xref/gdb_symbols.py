"""gdb's side of the window text: names and lines of addresses (the
symbols object window_render.py asks), and a readable place for messages."""

import os
import re

import gdb

from .window_render import CodePlace, event_address

_INFO_SYMBOL = re.compile(r"^(.+?)(?: \+ (\d+))? in section ")


def _function_block(block):
    """The outermost function block around `block` (an inlined call is named
    by the function it was inlined into, as LLDB names it)."""
    found = None
    while block is not None and not block.is_static and not block.is_global:
        if block.function is not None:
            found = block
        block = block.superblock
    return found


def _entry(function_block):
    """Where the function is entered. Not the block's start: a function with
    a split-off part (GCC's .cold) starts at the lowest of its ranges."""
    try:
        return int(function_block.function.value().address)
    except (gdb.error, TypeError, ValueError):
        return function_block.start


def place_of(address):
    """CodePlace of a live address, from gdb's symbols and line table."""
    place = CodePlace()
    if address is None:
        return place
    try:
        block = gdb.block_for_pc(address)
    except RuntimeError:
        block = None
    function_block = _function_block(block)
    entry = _entry(function_block) if function_block is not None else None
    if entry is not None and address >= entry:
        place.function = function_block.function.print_name
        place.offset = address - entry
    else:
        # No debug info, or a part of the function placed before its entry
        # (GCC's .cold): the minimal symbol ("info symbol" is its only Python door).
        try:
            text = gdb.execute("info symbol %#x" % address, to_string=True).strip()
        except gdb.error:
            text = ""
        match = _INFO_SYMBOL.match(text)
        if match:
            place.function = match.group(1)
            place.offset = int(match.group(2) or 0)
    try:
        line = gdb.find_pc_line(address)
    except RuntimeError:
        line = None
    if line is not None and line.symtab is not None and line.line:
        place.file_line = "%s:%d" % (os.path.basename(line.symtab.filename), line.line)
    return place


def describe_address(address):
    """"handle_request+0x99 at sample_service.c:173"."""
    place = place_of(address)
    text = place.function + ("+" + hex(place.offset) if place.function and place.offset else "")
    if place.file_line:
        text += (" at " if text else "") + place.file_line
    return text


def describer():
    """describe_address, each address looked up once: a probe session's
    callers and samples repeat a few addresses many times."""
    places = {}

    def describe(address):
        if address not in places:
            places[address] = describe_address(address)
        return places[address]
    return describe


def breakpoint_locations():
    """{live address: [breakpoint numbers]} of every breakpoint location."""
    found = {}
    for breakpoint in gdb.breakpoints():
        for location in getattr(breakpoint, "locations", None) or []:
            if location.address is None:
                continue
            numbers = found.setdefault(location.address, [])
            if breakpoint.number not in numbers:
                numbers.append(breakpoint.number)
    return found


class GdbSymbols:
    """Names events of one window. Addresses without a live value get the
    load bias the window's other events show for their module."""

    def __init__(self, window=None):
        self._locations = breakpoint_locations()
        self._places = {}
        self._bias = {}
        for event in (window or {}).get("events") or []:
            for role in ("target", "call_site", "probe"):
                address = event_address(event, role)
                if address.live is not None and address.static_va is not None:
                    self._bias.setdefault(address.module, address.live - address.static_va)

    def live(self, address):
        if address.live is not None:
            return address.live
        if address.static_va is None:
            return None
        if address.module in self._bias:
            return address.static_va + self._bias[address.module]
        return None

    def describe(self, address):
        live = self.live(address)
        if live is None:
            live = address.static_va  # a module gdb sees unrelocated, if any
        if live is None:
            return CodePlace()
        if live not in self._places:
            self._places[live] = place_of(live)
        return self._places[live]

    def breakpoints_at(self, live_address):
        return list(self._locations.get(live_address, []))
