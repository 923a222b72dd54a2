"""A CPU-bound workload for Debian's python3 (/usr/bin/python3, a program
nobody here wrote, without frame pointers and without .symtab): the profile
truth tests sample it with perf --call-graph dwarf (and later xref profile)
and compare the stacks. Three kinds of work, each reaching other modules
through libc: joining byte slices larger than pymalloc's 512-byte limit
(libc malloc/free, memmove, and brk when the heap shrinks), math.sin/sqrt
(libm), zlib.compress (libz, which allocates through libc).

Prints `pid N` and `ready`, then works until killed.
"""

import math
import os
import zlib

print("pid", os.getpid(), flush=True)
print("ready", flush=True)

chunk = bytes(range(256)) * 64  # 16 KB
large = chunk * 4  # 64 KB: the joins' copies (memmove) outweigh their allocations


def text_work():
    parts = [large[i:] for i in range(0, 16384, 2048)]
    return len(b"".join(parts))


def number_work():
    total = 0.0
    for i in range(20000):
        total += math.sin(i) * math.sqrt(i)
    return total


def compress_work():
    return len(zlib.compress(chunk * 4, 6))


while True:
    # The joins four times: libc's memmove (and malloc, free) then hold
    # over 10 % of the samples (one join gave 7 % on some hosts).
    for _ in range(4):
        text_work()
    number_work()
    compress_work()
