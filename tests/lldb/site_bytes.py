"""`script site_bytes(NAME)` in lldb (breakpoint_release_test.py): the 16
bytes at function NAME's first instruction as the process has them
(/proc/PID/mem, past anything LLDB hides) and as its file has them (the
mapping's path and offset in /proc/PID/maps), and whether they are equal.
Run with every breakpoint deleted, so LLDB has no int3 of its own there."""

import lldb


def site_bytes(name):
    target = lldb.debugger.GetSelectedTarget()
    address = target.FindFunctions(name)[0].GetSymbol().GetStartAddress().GetLoadAddress(target)
    pid = target.GetProcess().GetProcessID()
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
        print("site bytes %#x: no file mapping" % address)
        return
    with open(found[0], "rb") as image:
        image.seek(found[1])
        on_file = image.read(16)
    print("site bytes %#x: live %s file %s %s" % (address, live.hex(), on_file.hex(),
                                                   "equal" if live == on_file else "DIFFERENT"))
