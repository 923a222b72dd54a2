"""watch_target's ground truth, read (tests/targets/watch_target.c says what
it writes; tests/support/watch_target_record.h is the C++ reader, the same):
its startup lines, its exit lines and its --record file, each thread's writes,
and the one order of all threads' writes the record proves (g_total's value
only grows and starts every lock section), replayed from the startup objects
so that every write gets its live address and every OLD is checked.

    startup = parse_startup(lines_before_ready)
    writes = read_record(path)
    threads = by_thread(writes)            # {tid: [Write, ...]} in SEQ order
    part = clip(write, "g_config", 8, 8)   # what a watch of g_config+8:8 sees, or None
    replayed = replay(startup, writes)     # raises ValueError on a contradiction
    exit = parse_exit(lines_after_ready)   # exit.late_tid, exit.finals

Every parse error raises ValueError naming the line.
"""

from dataclasses import dataclass, field
import re

OBJECT_NAMES = ("g_total", "g_counts", "g_flag", "g_config", "buf", "moving", "moving_slot")
MOVING_LENGTH_OFFSET = 16
MOVING_WRITES_OFFSET = 24
MOVING_DATA_OFFSET = 32
SUFFIXES = ("", "via memcpy", "via memset", "kernel read")

_DECIMAL = re.compile(r"^(0|[1-9][0-9]*)$")
_HEX_BYTES = re.compile(r"^([0-9a-f]{2})+$")


def _bytes(text, line):
    if not _HEX_BYTES.match(text):
        raise ValueError("expected bytes in lowercase hex: %r" % line)
    return bytes.fromhex(text)


def value_of(data):
    """The little-endian integer of up to 8 bytes (what the target sees)."""
    return int.from_bytes(data[:8], "little")


@dataclass
class Object:
    name: str
    address: int  # live; `moving`: its first block
    size: int     # `moving`: its first capacity


@dataclass
class Startup:
    objects: dict          # name -> Object, in OBJECT_NAMES order
    threads: dict          # "worker0" -> tid
    pid: int


def parse_startup(lines):
    """The lines before "ready" (without it): obj lines, thread lines, pid."""
    lines = list(lines)
    objects = {}
    for i, name in enumerate(OBJECT_NAMES):
        words = lines[i].split() if i < len(lines) else []
        if (len(words) != 4 or words[0] != "obj" or words[1] != name or
                not re.match(r"^0x[0-9a-f]+$", words[2]) or not _DECIMAL.match(words[3])):
            raise ValueError("expected 'obj %s 0xADDR SIZE': %r" % (name, lines[i] if i < len(lines) else None))
        objects[name] = Object(name, int(words[2], 16), int(words[3]))
    threads = {}
    i = len(OBJECT_NAMES)
    while i < len(lines) and lines[i].startswith("thread "):
        words = lines[i].split()
        expected = "worker%d" % len(threads)
        if len(words) != 3 or words[1] != expected or not _DECIMAL.match(words[2]):
            raise ValueError("expected 'thread %s TID': %r" % (expected, lines[i]))
        threads[expected] = int(words[2])
        i += 1
    if i + 1 != len(lines) or not re.match(r"^pid (0|[1-9][0-9]*)$", lines[i]):
        raise ValueError("expected 'pid N' as the last line before ready: %r" % lines[i:])
    return Startup(objects, threads, int(lines[i].split()[1]))


@dataclass
class Exit:
    late_tid: object = None   # int with --late-thread
    finals: dict = field(default_factory=dict)  # name -> bytes


def parse_exit(lines):
    """The lines after "ready": [thread late TID], then final NAME HEX per object."""
    lines = list(lines)
    result = Exit()
    i = 0
    if lines and lines[0].startswith("thread "):
        words = lines[0].split()
        if len(words) != 3 or words[1] != "late" or not _DECIMAL.match(words[2]):
            raise ValueError("expected 'thread late TID': %r" % lines[0])
        result.late_tid = int(words[2])
        i = 1
    for name in OBJECT_NAMES:
        words = lines[i].split() if i < len(lines) else []
        if len(words) != 3 or words[0] != "final" or words[1] != name:
            raise ValueError("expected 'final %s HEX': %r" % (name, lines[i] if i < len(lines) else None))
        result.finals[name] = _bytes(words[2], lines[i])
        i += 1
    if i != len(lines):
        raise ValueError("unexpected line after the final lines: %r" % lines[i])
    return result


@dataclass
class Write:
    line_number: int
    text: str
    tid: int
    seq: int         # 1, 2, 3... per thread
    object: str
    offset: int      # from the object's start (moving: the current block's)
    length: int
    old: bytes
    new: bytes
    function: str    # the writer: the function that stores, or calls memcpy/memset/read
    how: str         # "", "via memcpy", "via memset" or "kernel read"

    @property
    def changed(self):
        return self.old != self.new

    @property
    def by_contract(self):
        return self.how in ("via memcpy", "via memset")

    @property
    def by_kernel(self):
        return self.how == "kernel read"

    @property
    def old_value(self):
        return value_of(self.old)

    @property
    def new_value(self):
        return value_of(self.new)

    def where(self):
        return "record line %d %r" % (self.line_number, self.text)


def clip(write, obj, offset, length):
    """The part of `write` inside obj's bytes [offset, offset + length) (what a
    watch of that range sees), or None when it does not touch them."""
    start, end = max(write.offset, offset), min(write.offset + write.length, offset + length)
    if write.object != obj or start >= end:
        return None
    cut = slice(start - write.offset, end - write.offset)
    return Write(write.line_number, write.text, write.tid, write.seq, write.object, start, end - start,
                 write.old[cut], write.new[cut], write.function, write.how)


def parse_write(line, line_number):
    words = line.split()
    if not 8 <= len(words) <= 10 or "  " in line:
        raise ValueError("record line %d malformed: %r" % (line_number, line))
    if not all(_DECIMAL.match(words[i]) for i in (0, 1, 3, 4)):
        raise ValueError("record line %d: TID, SEQ, OFFSET and LEN must be decimal: %r" % (line_number, line))
    if words[2] not in OBJECT_NAMES:
        raise ValueError("record line %d: no such object: %r" % (line_number, line))
    length = int(words[4])
    old, new = _bytes(words[5], line), _bytes(words[6], line)
    if length == 0 or len(old) != length or len(new) != length:
        raise ValueError("record line %d: OLD and NEW must be LEN bytes: %r" % (line_number, line))
    how = " ".join(words[8:])
    if how not in SUFFIXES:
        raise ValueError("record line %d: bad suffix %r" % (line_number, how))
    return Write(line_number, line, int(words[0]), int(words[1]), words[2], int(words[3]), length, old, new,
                 words[7], how)


def read_record(path):
    """Every write of the record file (a missing file: none)."""
    try:
        with open(path) as record:
            content = record.read()
    except FileNotFoundError:
        return []
    if content and not content.endswith("\n"):
        raise ValueError("%s: the record does not end with a newline" % path)
    return [parse_write(line, number) for number, line in enumerate(content.splitlines(), 1)]


def by_thread(writes):
    """{tid: [Write, ...]} in SEQ order; raises unless each thread's SEQ runs 1, 2, 3..."""
    threads = {}
    for write in writes:
        own = threads.setdefault(write.tid, [])
        if write.seq != len(own) + 1:
            raise ValueError("%s: expected SEQ %d of thread %d" % (write.where(), len(own) + 1, write.tid))
        own.append(write)
    return threads


def global_order(writes):
    """Indexes into `writes` in the order they happened (see the C++ reader)."""
    by_thread(writes)
    changing = sorted((i for i, w in enumerate(writes) if w.object == "g_total" and w.changed),
                      key=lambda i: writes[i].old_value)
    state_of_value = {}
    key = [0] * len(writes)
    for k, i in enumerate(changing):
        write = writes[i]
        if write.new_value <= write.old_value:
            raise ValueError("%s: g_total must only grow" % write.where())
        if k == 0:
            state_of_value[write.old_value] = 0
        elif write.old_value != writes[changing[k - 1]].new_value:
            raise ValueError("%s: no g_total write left %d" % (write.where(), write.old_value))
        state_of_value[write.new_value] = k + 1
        key[i] = 2 * (k + 1)
    anchor, last = {}, {}
    for i, write in enumerate(writes):
        if write.object == "g_total":
            if not write.changed:
                if write.old_value not in state_of_value:
                    raise ValueError("%s: g_total never held %d" % (write.where(), write.old_value))
                key[i] = 2 * state_of_value[write.old_value] + 1
            if write.tid in last and key[i] < last[write.tid] + (1 if write.changed else 0):
                raise ValueError("%s: this thread's g_total writes are out of g_total's order" % write.where())
            last[write.tid] = anchor[write.tid] = key[i]
        else:
            key[i] = anchor.get(write.tid, 0)
    return sorted(range(len(writes)), key=lambda i: (key[i], writes[i].tid, writes[i].seq))


@dataclass
class Replay:
    order: list        # global_order(writes)
    address: list      # per write: the live address of its first byte
    generation: list   # per write: 0 for moving's first block, +1 per move
    known: dict        # name -> list of int or None: the bytes at the end, as far as the record shows
    moving_address: int
    moves: int


def replay(startup, writes):
    """Replays the writes in global order; raises ValueError where an OLD is not what was there."""
    order = global_order(writes)
    address = [0] * len(writes)
    generation = [0] * len(writes)
    known = {name: [None] * obj.size for name, obj in startup.objects.items()}
    moving_address = startup.objects["moving"].address
    moves = 0
    for i in order:
        write = writes[i]
        data = known[write.object]
        end = write.offset + write.length
        if end > len(data):
            if write.object != "moving":
                raise ValueError("%s: beyond the object's %d bytes" % (write.where(), len(data)))
            data.extend([None] * (end - len(data)))
        for j in range(write.length):
            if data[write.offset + j] is not None and data[write.offset + j] != write.old[j]:
                raise ValueError("%s: OLD byte %d is %02x, the writes before it left %02x" %
                                 (write.where(), j, write.old[j], data[write.offset + j]))
            data[write.offset + j] = write.new[j]
        moving = write.object == "moving"
        address[i] = (moving_address if moving else startup.objects[write.object].address) + write.offset
        generation[i] = moves if moving else 0
        if write.object == "moving_slot" and write.changed:
            moving_address = write.new_value
            moves += 1
    return Replay(order, address, generation, known, moving_address, moves)
