"""watch_target's record against a peer that sees the store instructions
themselves: uprobes defined through tracefs (not xref) on one store
instruction of each kind of writer, each fetching the bytes at the store's
destination as the uprobe fires, before the instruction runs, and the base
register it addresses them by. Per thread and per probed instruction, the
peer's hits must be the record's writes by that instruction, in order, at
the address the record implies, with the record's OLD bytes: the record's OLD
is what a store probe sees. For the memcpy/memset calls the probe is on the
call and reads the destination's first bytes. x86 uprobes refuse a
LOCK-prefixed instruction (lock xadd, lock add, lock cmpxchg: ENOTSUPP when
a process maps it; the kernel's is_prefix_bad), so those are probed on the
instruction before them, which falls through to them; xchg (locked without
the prefix) takes a uprobe.

The events go to a tracing instance of their own (other tests' tracefs users
see nothing), and every probe this test defined is removed on every exit.

    watch_target_peer_test.py TARGET WORK_DIR
"""

import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "support"))
import facility  # noqa: E402
import watch_target_record as wt  # noqa: E402

TRACING = "/sys/kernel/tracing"
ROUNDS = 12

# (function, a regex for the probed instruction in objdump's AT&T text, the
# object it writes, which of the function's recorded writes it makes)
PROBES = [
    ("total_fetch_add", r"^lock xadd .*<g_total>", "g_total", None),
    ("total_add", r"^lock add .*<g_total>", "g_total", None),
    ("total_exchange", r"^xchg .*<g_total>", "g_total", None),
    ("total_cas", r"^lock cmpxchg .*<g_total>", "g_total", None),
    ("total_store", r"^mov +%r\w+,.*<g_total>", "g_total", None),
    ("set_flag", r"^mov +%(\w+l|r\d+b),.*<g_flag>", "g_flag", None),
    ("flag_exchange", r"^xchg .*<g_flag>", "g_flag", None),
    ("count_slot", r"^(addl|incl) .*\((?!%rsp)", "g_counts", None),
    ("count_add", r"^add +%\w+,\((?!%rsp)", "g_counts", None),
    ("configure", r"^or +%\w+,(0x4)?\(%r\w+\)( |$)", "g_config", 4),
    ("set_window", r"^(movups|movdqu|movaps) +%xmm\d+,.*\((?!%rsp)", "g_config", None),
    ("fill_bytes", r"^mov +%(\w+l|r\d+b),.*\((?!%rsp)", "buf", None),
    ("move_buffer", r"^mov +%r\w+,.*<moving_slot>", "moving_slot", None),
    ("move_buffer", r"^mov +%r\w+,0x10\((?!%rsp)%r\w+\)( |$)", "moving", wt.MOVING_LENGTH_OFFSET),
    ("copy_in", r"^call .*<memcpy@plt>", "buf", None),
    ("clear_range", r"^call .*<memset@plt>", "buf", None),
]

REGISTERS = {"rax": "ax", "rbx": "bx", "rcx": "cx", "rdx": "dx", "rsi": "si", "rdi": "di", "rbp": "bp"}


def objdump_functions(path):
    """{function: [(address, text without the comment, comment)]}."""
    functions, current = {}, None
    output = subprocess.run(["objdump", "-d", "--no-show-raw-insn", path], check=True, capture_output=True,
                            text=True).stdout
    for line in output.splitlines():
        header = re.match(r"^([0-9a-f]+) <([^>]+)>:$", line)
        if header:
            current = functions.setdefault(header.group(2), [])
            continue
        instruction = re.match(r"^ +([0-9a-f]+):\t(.*)$", line)
        if instruction and current is not None:
            text, _, comment = instruction.group(2).partition("#")
            current.append((int(instruction.group(1), 16), " ".join(text.split()), comment.strip()))
    return functions


def file_offset(path, vaddr):
    """A code address's offset in the file (uprobe_events wants it)."""
    output = subprocess.run(["readelf", "-lW", path], check=True, capture_output=True, text=True).stdout
    for line in output.splitlines():
        words = line.split()
        if words[:1] == ["LOAD"]:
            offset, start, size = int(words[1], 16), int(words[2], 16), int(words[4], 16)
            if start <= vaddr < start + size:
                return vaddr - start + offset
    raise AssertionError("no LOAD segment holds 0x%x" % vaddr)


def append_line(path, line):
    """One write(2) with O_APPEND, as `echo LINE >> PATH` does (Python's "a"
    mode seeks, which tracefs refuses)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def nm_address(path, name):
    output = subprocess.run(["nm", path], check=True, capture_output=True, text=True).stdout
    for line in output.splitlines():
        words = line.split()
        if len(words) == 3 and words[2] == name:
            return int(words[0], 16)
    raise AssertionError("nm does not list %s" % name)


def destination(text):
    """The last operand outside parentheses: the store's destination in AT&T."""
    operands, depth, current = [], 0, ""
    for char in text.partition(" ")[2]:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            operands.append(current)
            current = ""
        else:
            current += char
    operands.append(current)
    return operands[-1].strip()


def probe_site(body, instruction):
    """Where to probe a store: on it, or, for a LOCK-prefixed one (x86
    uprobes refuse those: ENOTSUPP, the kernel's is_prefix_bad), on the
    instruction before it, which must fall through to it (nothing jumps to
    the store) and write no memory outside the stack."""
    if not instruction[1].startswith("lock "):
        return instruction[0]
    index = body.index(instruction)
    assert index > 0, "nothing before %r" % instruction[1]
    previous = body[index - 1]
    target = "%x " % instruction[0]
    assert not any(i[1].startswith("j") and (i[1].split(None, 1) + [""])[1].startswith(target) for i in body), \
        "something jumps to %r" % instruction[1]
    assert not previous[1].startswith(("j", "call", "ret", "lock")) and not re.search(r",.*\((?!%rsp)", previous[1]), \
        "cannot probe %r in place of %r" % (previous[1], instruction[1])
    return previous[0]


class Probe:
    """One uprobe: where, what it fetches, and how a hit maps to an address."""

    def __init__(self, index, function, instruction, obj, offset, startup, bias, site):
        self.name = "p%d_%s" % (index, function)
        self.function, self.obj, self.offset = function, obj, offset
        address, text, comment = instruction
        self.vaddr, self.text = site, text + ("" if site == address else " (probed before it)")
        size = 16 if obj in ("g_counts", "g_config") else 8
        if text.startswith("call"):
            # memcpy/memset's destination, before the call runs
            self.base, self.disp, self.live = "di", 0, None
        else:
            operand = destination(text)
            rip = re.match(r"^(-?0x[0-9a-f]+)?\(%rip\)$", operand)
            based = re.match(r"^(-?0x[0-9a-f]+)?\(%(r\w+)\)$", operand)
            if rip:
                self.base, self.disp, self.live = None, 0, int(comment.split()[0], 16) + bias
            elif based:
                self.base = REGISTERS.get(based.group(2), based.group(2))
                self.disp, self.live = int(based.group(1) or "0", 16), None
            else:
                # indexed: read the whole (fixed) object
                self.base, self.disp, self.live = None, 0, startup.objects[obj].address
                size = startup.objects[obj].size
        self.words = size // 8
        if self.base is not None:
            self.fetch = " ".join(["ea=%%%s:x64" % self.base] +
                                  ["b%d=%+d(%%%s):x64" % (i, self.disp + 8 * i, self.base) for i in range(self.words)])
        else:
            self.fetch = " ".join("b%d=@0x%x:x64" % (i, self.live + 8 * i) for i in range(self.words))

    def parse(self, fields):
        """A hit's (address of the bytes read, the bytes)."""
        data = b"".join(int(fields["b%d" % i], 16).to_bytes(8, "little") for i in range(self.words))
        if self.base is not None:
            return int(fields["ea"], 16) + self.disp, data
        return self.live, data


def main():
    target, work_dir = sys.argv[1], sys.argv[2]
    facility.require(os.geteuid() == 0, "root (uprobes through tracefs)")
    facility.require(os.path.isdir(TRACING + "/instances"), "tracefs at " + TRACING)
    functions = objdump_functions(target)
    base = os.path.join(work_dir, os.path.basename(target) + "_peer")
    record, go = base + ".record", base + ".go"
    for path in (record, go):
        if os.path.exists(path):
            os.unlink(path)
    args = [target, "--threads", "2", "--rounds", str(ROUNDS), "--interval-us", "200", "--go", go, "--record", record,
            "--realloc-every", "2", "--late-thread"]
    print("$ " + " ".join(args))
    process = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    try:
        run(target, functions, process, record, go)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def run(target, functions, process, record, go):
    startup_lines = []
    for line in process.stdout:
        if line == "ready\n":
            break
        startup_lines.append(line.rstrip("\n"))
    startup = wt.parse_startup(startup_lines)
    bias = startup.objects["g_total"].address - nm_address(target, "g_total")

    probes = []
    for function, pattern, obj, offset in PROBES:
        body = functions.get(function, [])
        matches = [i for i in body if re.search(pattern, (i[1] + " " + i[2]).strip())]
        assert matches, "%s: no instruction matches %r" % (function, pattern)
        probes.append(Probe(len(probes), function, matches[0], obj, offset, startup, bias, probe_site(body, matches[0])))
    group = "wt_peer_%d" % process.pid
    instance = TRACING + "/instances/" + group
    defined = []
    try:
        for probe in probes:
            definition = "p:%s/%s %s:0x%x %s" % (group, probe.name, os.path.realpath(target),
                                                 file_offset(target, probe.vaddr), probe.fetch)
            try:
                append_line(TRACING + "/uprobe_events", definition)
            except OSError as error:
                raise AssertionError("tracefs refused %r: %s" % (definition, error))
            defined.append(probe.name)
            print("%-16s %-44s %s" % (probe.function, probe.text, probe.fetch.split()[0]))
        os.mkdir(instance)
        for probe in probes:
            try:
                append_line("%s/events/%s/%s/enable" % (instance, group, probe.name), "1")
            except OSError as error:
                raise AssertionError("tracefs cannot enable the probe on %s's %r: %s" % (probe.function, probe.text,
                                                                                      error))
        open(go, "w").close()
        exit_lines = [line.rstrip("\n") for line in process.stdout]
        assert process.wait() == 0, "exit status %d" % process.returncode
        with open(instance + "/trace") as trace:
            trace_lines = [line for line in trace if not line.startswith("#")]
        overruns = 0
        for cpu in os.listdir(instance + "/per_cpu"):
            with open("%s/per_cpu/%s/stats" % (instance, cpu)) as stats:
                for line in stats:
                    if line.startswith("overrun:"):
                        overruns += int(line.split()[1])
        assert overruns == 0, "the trace buffer lost %d events" % overruns
    finally:
        if os.path.isdir(instance):
            for probe in probes:
                path = "%s/events/%s/%s/enable" % (instance, group, probe.name)
                if os.path.exists(path):
                    append_line(path, "0")
            os.rmdir(instance)
        for name in defined:
            append_line(TRACING + "/uprobe_events", "-:%s/%s" % (group, name))

    exit_info = wt.parse_exit(exit_lines)
    writes = wt.read_record(record)
    replayed = wt.replay(startup, writes)
    address_of = {id(w): replayed.address[i] for i, w in enumerate(writes)}
    by_name = {probe.name: probe for probe in probes}
    hits = {}  # (tid, probe name) -> [(address, bytes)]
    for line in trace_lines:
        match = re.match(r"^\s*.+?-(\d+)\s+\[\d+\].*?: (\w+): \(0x[0-9a-f]+\)(.*)$", line)
        assert match, "unexpected trace line: %r" % line
        probe = by_name[match.group(2)]
        fields = dict(item.split("=", 1) for item in match.group(3).split())
        hits.setdefault((int(match.group(1)), probe.name), []).append(probe.parse(fields))
    threads = wt.by_thread(writes)
    assert len(threads) == 3 and exit_info.late_tid in threads, "two workers and the late thread should write"
    checked = 0
    for probe in probes:
        for tid, own in threads.items():
            expected = [w for w in own if w.function == probe.function and w.object == probe.obj and
                        (probe.offset is None or w.offset == probe.offset)]
            seen = hits.get((tid, probe.name), [])
            assert len(seen) == len(expected), "%s in thread %d: %d hits, the record has %d writes" % (
                probe.name, tid, len(seen), len(expected))
            for write, (address, data) in zip(expected, seen):
                start = address_of[id(write)]
                assert address <= start and start + min(write.length, 8) <= address + len(data), \
                    "%s: the probe read 0x%x..+%d, the write is at 0x%x" % (write.where(), address, len(data), start)
                old = data[start - address:start - address + min(write.length, len(data) - (start - address))]
                assert write.old[:len(old)] == old, "%s: the probe saw %s before the store" % (write.where(), old.hex())
                checked += 1
    assert checked >= 3 * ROUNDS * 10, "only %d writes checked" % checked
    print("peer: %d writes of %d probed instructions in 3 threads seen by tracefs uprobes, each at the record's "
          "address with the record's OLD" % (checked, len(probes)))
    print("ok")


if __name__ == "__main__":
    try:
        main()
    except facility.Skip as skip:
        print(skip)
        sys.exit(facility.SKIP)
