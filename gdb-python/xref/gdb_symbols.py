"""gdb's names of addresses, for the helper's text (the `names` request):
function, offset and file:line as gdb would print them."""

import re

import gdb

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


def name_of(address):
    """{"address", "function", "offset", "file", "line"} of a live address, or {"address", "unknown": true}."""
    name = {"address": "%#x" % address}
    try:
        block = gdb.block_for_pc(address)
    except RuntimeError:
        block = None
    function_block = _function_block(block)
    entry = _entry(function_block) if function_block is not None else None
    if entry is not None and address >= entry:
        name["function"] = function_block.function.print_name
        name["offset"] = address - entry
    else:
        # No debug info, or a part placed before its entry (GCC's .cold): the minimal symbol.
        try:
            text = gdb.execute("info symbol %#x" % address, to_string=True).strip()
        except gdb.error:
            text = ""
        match = _INFO_SYMBOL.match(text)
        if match:
            name["function"] = match.group(1)
            name["offset"] = int(match.group(2) or 0)
    try:
        line = gdb.find_pc_line(address)
    except RuntimeError:
        line = None
    if line is not None and line.symtab is not None and line.line:
        name["file"] = line.symtab.filename
        name["line"] = line.line
    if "function" not in name and "file" not in name:
        name["unknown"] = True
    return name
