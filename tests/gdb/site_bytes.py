"""`site-bytes EXPR` in gdb (sourced by breakpoint_release_test.py): the 16
bytes at the address EXPR names, as the process has them (/proc/PID/mem)
and as its file has them (the mapping's path and offset in /proc/PID/maps),
and whether they are equal. Run at a stop, when gdb (all-stop) has taken
its own breakpoints out."""

import gdb


class SiteBytes(gdb.Command):
    def __init__(self):
        super().__init__("site-bytes", gdb.COMMAND_USER)

    def invoke(self, argument, from_tty):
        address = int(gdb.parse_and_eval("(unsigned long)(%s)" % argument))
        pid = gdb.selected_inferior().pid
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
            gdb.write("site bytes %#x: no file mapping\n" % address)
            return
        with open(found[0], "rb") as image:
            image.seek(found[1])
            on_file = image.read(16)
        gdb.write("site bytes %#x: live %s file %s %s\n" % (address, live.hex(), on_file.hex(),
                                                             "equal" if live == on_file else "DIFFERENT"))


SiteBytes()
