"""The bytes at a code address as the process has them (/proc/PID/mem, past
anything a debugger hides) and as its file has them (the mapping's path and
offset in /proc/PID/maps), and whether they are equal: the check that no
probe or breakpoint left a byte behind. Loaded into gdb or lldb with
`exec(open(PATH).read())`:

- gdb: `site-bytes EXPR`, run at a stop, when gdb (all-stop) has taken its
  own breakpoints out (breakpoint_release_test.py, check_redis_breakpoint.py);
- lldb: `script site_bytes(NAME)`, at function NAME's first instruction, run
  with every breakpoint deleted, so LLDB has no int3 of its own there."""


def site_bytes_line(pid, address):
    with open("/proc/%d/mem" % pid, "rb") as memory:
        memory.seek(address)
        live = memory.read(16)
    found = None
    with open("/proc/%d/maps" % pid) as maps:
        for line in maps:
            fields = line.split()
            start, end = (int(value, 16) for value in fields[0].split("-"))
            if start <= address < end and len(fields) >= 6:
                found = (fields[5], int(fields[2], 16) + address - start)
    if found is None:
        return "site bytes %#x: no file mapping" % address
    with open(found[0], "rb") as image:
        image.seek(found[1])
        on_file = image.read(16)
    return "site bytes %#x: live %s file %s %s" % (address, live.hex(), on_file.hex(),
                                                    "equal" if live == on_file else "DIFFERENT")


try:
    import gdb

    class SiteBytes(gdb.Command):
        def __init__(self):
            super().__init__("site-bytes", gdb.COMMAND_USER)

        def invoke(self, argument, from_tty):
            address = int(gdb.parse_and_eval("(unsigned long)(%s)" % argument))
            gdb.write(site_bytes_line(gdb.selected_inferior().pid, address) + "\n")

    SiteBytes()
except ImportError:
    import lldb

    def site_bytes(name):
        target = lldb.debugger.GetSelectedTarget()
        address = target.FindFunctions(name)[0].GetSymbol().GetStartAddress().GetLoadAddress(target)
        print(site_bytes_line(target.GetProcess().GetProcessID(), address))
