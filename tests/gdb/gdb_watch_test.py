"""`xref watch` in real gdb (batch mode) with the real helper, on
watch_target built by gcc and clang at -O2 (tests/targets/watch_target.c),
against the target's own record of every write it makes: gdb evaluates the
expressions (a field through a pointer in the selected frame, a global,
`*buf@64`, `-l`), --stop-when stops gdb at the write that makes it true
(the record says which thread wrote it; the stopped thread's pc is just
past the store and the value is the new one), `xref stop`, a breakpoint on
a probed store (the session releases it), the target's exit, the writes to
`*buf@64` and `-l buf -s 64` equal to the record's, and an expression gdb
cannot evaluate (one line, nothing attached). One test per run:
`python3 gdb_watch_test.py NAME` (tests/gdb/CMakeLists.txt)."""

import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))

from gdb_batch import main, require_bpf, run_gdb  # noqa: E402
import watch_target_record  # noqa: E402
from watch_writes import expect_equal, expected_writes, last_document, watched_writes  # noqa: E402

TARGETS = os.environ.get("XREF_WATCH_TARGET_DIR", "")
BUILDS = {"gcc": "watch_target", "clang": "watch_target_clang"}

# Where the selected frame's pc is in its function.
PC_OFFSET = ("python f = gdb.selected_frame(); "
             "print('pc-at: %s+%#x' % (f.function().name, f.pc() - int(f.function().value().address)))")


def next_instruction(binary, function, offset):
    """The offset in `function` of the instruction after the one at
    `offset`, from objdump of the file (the live code has the uprobe's int3
    in it, so gdb would decode it wrong)."""
    symbols = subprocess.run(["nm", binary], stdout=subprocess.PIPE, text=True).stdout
    start = int(re.search(r"^([0-9a-f]+) [tT] %s$" % function, symbols, re.M).group(1), 16)
    listing = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "--start-address=%#x" % (start + offset),
                              "--stop-address=%#x" % (start + offset + 32), binary],
                             stdout=subprocess.PIPE, text=True).stdout
    addresses = [int(a, 16) for a in re.findall(r"^\s*([0-9a-f]+):", listing, re.M)]
    return addresses[1] - start


def check(condition, message, run=None):
    if not condition:
        raise AssertionError(message + ("\n--- gdb output ---\n" + run.output if run is not None else ""))


class Target:
    """watch_target's arguments with a go file already there and a record file."""

    def __init__(self, compiler, rounds=12):
        self.dir = tempfile.mkdtemp(prefix="xref-gdb-watch-")
        self.go = os.path.join(self.dir, "go")
        self.record = os.path.join(self.dir, "record")
        open(self.go, "w").write("go\n")
        self.argv = [os.path.join(TARGETS, BUILDS[compiler]), "--threads", "2", "--rounds", str(rounds),
                     "--go", self.go, "--record", self.record]

    def writes(self):
        return watch_target_record.read_record(self.record)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for name in (self.go, self.record):
            if os.path.exists(name):
                os.unlink(name)
        os.rmdir(self.dir)


# A field through a pointer at a frame, stopping at the write that makes it
# 5001 (configure writes round * 1000 + 1): gdb stops on SIG63 in the thread
# that wrote it, just past the store, with the new value there.
def stop_when(compiler, condition="value == 5001", skip=0, holds=lambda old, new: new == 5001):
    require_bpf()
    with Target(compiler) as target:
        words = "xref watch config->limit --stop-when '%s'" % condition + (" --stop-skip %d" % skip if skip else "")
        run = run_gdb(["break configure", "run", "delete 1", words,
                       "continue", "print config->limit", "print $_thread", "info threads", PC_OFFSET,
                       "continue"], target.argv)
        check(run.exit_status == 0, "gdb failed", run)
        start = run.between("(gdb) xref watch config->limit", "(gdb) continue")
        check(re.search(r"xref: session 1 watching PID \d+: 1 range \((stores|hw)", start) is not None,
              "no start line", run)
        check(re.search(r"\n  \[0\] config->limit  0x[0-9a-f]+  8 bytes\n", start) is not None, "no range line", run)
        stop = run.between("(gdb) continue", "(gdb) print config->limit")
        check(re.search(r"Catchpoint \d+ \(signal SIG63\)", stop) is not None, "gdb did not stop on SIG63", run)
        line = re.search(r"\nxref: session 1: --stop-when '%s' held at write (\d+)(?: \(after %d skipped\))?: thread "
                         r"(\d+) stopped after it \(signal 63\)\n +\d+ +(\d+) +\[0\] +(0x[0-9a-f]+) → (0x[0-9a-f]+) "
                         r"+configure\+(0x[0-9a-f]+)" % (re.escape(condition), skip), stop)
        check(line is not None, "no stop line naming the write that made it true", run)
        tid = int(line.group(2))
        check(int(line.group(3)) == tid, "the stop's write is not the stopped thread's", run)
        old, new = int(line.group(4), 16), int(line.group(5), 16)
        check(holds(old, new), "the write shown does not make '%s' true: %#x -> %#x" % (condition, old, new), run)
        check(re.search(r"\$1 = %d\n" % new, run.between("(gdb) print config->limit", "(gdb) print $_thread")) is not None,
              "the field is not the new value at the stop", run)
        pc = re.search(r"pc-at: configure\+(0x[0-9a-f]+)\n", run.output)
        check(pc is not None, "no pc offset", run)
        store = int(line.group(6), 16)
        after = next_instruction(target.argv[0], "configure", store)
        check(int(pc.group(1), 16) == after, "the thread did not stop just past the store at configure+%#x: pc at "
              "configure+%s, the next instruction at configure+%#x" % (store, pc.group(1), after), run)
        check(re.search(r"\* \d+ +Thread 0x[0-9a-f]+ \(LWP %d\)" % tid, run.output) is not None,
              "gdb's selected thread is not the one that wrote", run)
        check(re.search(r"\[Inferior 1 \(process \d+\) exited normally\]", run.output) is not None,
              "the process did not exit normally", run)
        # The record, in the order the writes happened (g_total orders the
        # lock sections): the skip+1th write that makes it true is that
        # thread's, of that value.
        writes = target.writes()
        matching = [writes[i] for i in watch_target_record.global_order(writes)
                    if writes[i].object == "g_config" and writes[i].offset == 8
                    and holds(writes[i].old_value, writes[i].new_value)]
        check(len(matching) > skip and matching[skip].tid == tid and matching[skip].new_value == new,
              "the record's write %d where '%s' holds is %s, not thread %d's %#x"
              % (skip + 1, condition, matching[skip].text if len(matching) > skip else None, tid, new), run)
        check(run.count("stopped after it") == 1, "not one stop", run)


# A global, `*buf@64` and `-l buf -s 64` started at a stop; the writes run
# to the target's exit; the summary counts what the record says happened
# after the start.
def globals_to_exit(compiler):
    require_bpf()
    with Target(compiler) as target:
        run = run_gdb(["break configure", "run", "delete 1", "print g_total",
                       "xref watch g_total *buf@64", "xref watch -l buf -s 64", "xref sessions",
                       "continue", "xref show"], target.argv)
        check(run.exit_status == 0, "gdb failed", run)
        at_start = int(re.search(r"\$1 = (\d+)\n", run.output).group(1))
        first = run.between("(gdb) xref watch g_total", "(gdb) xref watch -l")
        check(re.search(r"\n  \[0\] g_total  0x[0-9a-f]+  8 bytes\n  \[1\] \*buf@64  0x[0-9a-f]+  64 bytes\n",
                        first) is not None, "no range lines", run)
        buf = re.search(r"\[1\] \*buf@64  (0x[0-9a-f]+)", first).group(1)
        second = run.between("(gdb) xref watch -l", "(gdb) xref sessions")
        check(re.search(r"\n  \[0\] buf  %s  64 bytes\n" % buf, second) is not None, "-l buf is not *buf", run)
        check(re.search(r"\n2 +running .* watch -l buf -s 64\n", run.between("(gdb) xref sessions", "(gdb) continue"))
              is not None, "the sessions table lacks the watch", run)
        record = target.writes()
        expected = len([w for w in record if w.object == "g_total" and w.old_value >= at_start])
        summary = re.search(r"\[0\] g_total: (\d+) writes \((\d+) recorded", run.output)
        check(summary is not None, "no summary of g_total", run)
        check(int(summary.group(1)) == expected and int(summary.group(2)) == expected,
              "g_total: %s writes, the record has %d since the start" % (summary.group(1), expected), run)
        check(re.search(r"xref: session 1 ended \(target_exited\)", run.output) is not None, "session 1 did not end", run)
        check(re.search(r"xref: session 2 ended \(target_exited\)", run.output) is not None, "session 2 did not end", run)
        check("total_store+0x" in run.output, "no write by total_store shown", run)


# `xref stop` ends the watch; a breakpoint on one of its store sites makes
# the session release it (the breakpoint is hit; the target stays whole).
def stop_and_release(compiler):
    require_bpf()
    with Target(compiler, rounds=30) as target:
        site = ("python import xref.frontend; s = xref.frontend.get().sessions[1]; "
                "print('site: %#x' % sorted(s.probe_sites)[0])")
        # The store engine named: auto takes the debug registers where they fire.
        run = run_gdb(["break configure", "run", "delete 1", "xref watch g_total --backend stores", site,
                       "python gdb.execute('break *%#x' % sorted(xref.frontend.get().sessions[1].probe_sites)[0])",
                       "continue", "delete", "xref stop", "xref sessions", "continue"], target.argv)
        check(run.exit_status == 0, "gdb failed", run)
        check(re.search(r"no longer probes the store at \S+\+0x[0-9a-f]+ \(0x[0-9a-f]+\)", run.output) is not None,
              "no release line", run)
        site = re.search(r"site: (0x[0-9a-f]+)", run.output).group(1)
        check(re.search(r"Breakpoint 2, 0x0*%s in " % site[2:], run.output) is not None or
              re.search(r"Breakpoint 2, .*%s" % site, run.output) is not None or
              "Breakpoint 2, " in run.between("(gdb) continue", "(gdb) delete"),
              "gdb did not stop at the released store", run)
        check(re.search(r"xref: session 1 ended \(stopped\)", run.output) is not None, "xref stop did not end it", run)
        check(re.search(r"\[Inferior 1 \(process \d+\) exited normally\]", run.output) is not None,
              "the process did not exit normally", run)


# --stop-skip 2: the third write above 3000 (both threads write each round's value).
def stop_skip(compiler):
    stop_when(compiler, "value > 3000 && old != value", 2, lambda old, new: new > 3000 and old != new)


# What gdb tells the helper it holds itself (context.debug_registers_used):
# a hardware watchpoint per aligned 8 bytes, a hardware breakpoint's
# location; disabled ones hold none.
def debug_registers(compiler):
    require_bpf()
    with Target(compiler) as target:
        count = "python import xref.debugger_context as c; print('registers used:', c.debug_registers_used())"
        run = run_gdb(["break configure", "run", "delete 1", count, "watch g_total", count, "watch g_config.name",
                       count, "hbreak total_store", count, "disable 3", count, "kill"], target.argv)
        check(run.exit_status == 0, "gdb failed", run)
        counts = [int(n) for n in re.findall(r"\nregisters used: (\d+)\n", run.output)]
        # g_config.name: 32 bytes at offset 16 of a 64-aligned struct, 4 aligned words.
        check(counts == [0, 1, 5, 6, 2], "gdb's debug registers counted %s, not [0, 1, 5, 6, 2]" % counts, run)


def startup_of(output):
    """The target's startup lines (it writes to gdb's stdout), parsed."""
    lines = []
    for line in output.split("\n"):
        if line == "ready":
            break
        if re.match(r"^(obj|thread|pid) ", line):
            lines.append(line)
    return watch_target_record.parse_startup(lines)


# `xref watch WORDS` stopped at the first write of the first round
# (total_fetch_add: nothing written yet), the target run to its exit: the
# first 64 bytes of the heap buffer (a byte loop, memcpy and memset write
# there); the watch's writes (its JSON) are exactly the record's writes of
# those bytes, per thread, old -> new, writer; the printed summary counts
# them all.
def buffer_to_exit(compiler, words, spelled):
    require_bpf()
    with Target(compiler) as target:
        run = run_gdb(["break total_fetch_add", "run", "delete 1", "xref watch %s --duration-ms 0" % words,
                       "continue", "xref show --all --json"], target.argv)
        check(run.exit_status == 0, "gdb failed", run)
        check(re.search(r"\[Inferior 1 \(process \d+\) exited normally\]", run.output) is not None,
              "the process did not exit normally", run)
        buf = startup_of(run.output).objects["buf"].address
        start = run.between("(gdb) xref watch", "(gdb) continue")
        check(re.search(r"\n  \[0\] %s  %#x  64 bytes\n" % (re.escape(spelled), buf), start) is not None,
              "no range line [0] %s at buf's %#x, 64 bytes" % (spelled, buf), run)
        check(run.count("xref: session 1 ended (target_exited)") == 1, "the end at the exit was not printed once", run)
        document = last_document(run.output)
        check(document is not None, "no live_watch document printed", run)
        result = document["result"]
        check(result["stop_reason"] == "target_exited", "stop_reason %r" % result["stop_reason"], run)
        check(result["lost"] == 0, "writes lost", run)
        check([(int(r["address"], 16), r["length"]) for r in result["ranges"]] == [(buf, 64)],
              "ranges %r, not buf's %#x, 64 bytes" % (result["ranges"], buf), run)
        expected = expected_writes(target.writes(), [("buf", 0, 64)])
        expect_equal(expected, watched_writes(document), run.output)
        count = sum(len(writes) for writes in expected.values())
        summary = re.search(r"\n +\[0\] %s: (\d+) writes \((\d+) recorded" % re.escape(spelled), run.output)
        check(summary is not None, "no summary of %s" % spelled, run)
        check(int(summary.group(1)) == count and int(summary.group(2)) == count,
              "the summary counts %s writes, %s recorded; the record has %d" % (summary.group(1), summary.group(2),
                                                                               count), run)


# gdb's artificial array: the helper splits @64, gdb evaluates *buf.
def buffer_array(compiler):
    buffer_to_exit(compiler, "'*buf@64'", "*buf@64")


# -l: buf's value is the address, -s 64 its length.
def buffer_location(compiler):
    buffer_to_exit(compiler, "-l buf -s 64", "buf")


# An expression gdb cannot evaluate: one line naming it with gdb's own
# message (the same `print` gives) and a hint, and nothing attached: no
# session, the target runs to its exit untouched.
def evaluation_error(compiler):
    require_bpf()
    with Target(compiler) as target:
        run = run_gdb(["break configure", "run", "delete 1", "print nosuchvar", "xref watch nosuchvar",
                       "xref sessions", "continue"], target.argv)
        check(run.exit_status == 0, "gdb failed", run)
        message = run.between("(gdb) print nosuchvar", "(gdb) xref watch").split("\n")[1]
        check(message.startswith("No symbol"), "gdb's own message is not %r" % message, run)
        error = run.between("(gdb) xref watch nosuchvar", "(gdb) xref sessions").split("\n")[1:]
        check(len(error) == 2 and error[1] == "" and error[0].startswith('xref: watch "nosuchvar": %s; ' % message.rstrip('.'))
              and "-l EXPR" in error[0], "not one line naming the expression with gdb's message and a hint: %r"
              % error, run)
        sessions = run.between("(gdb) xref sessions", "(gdb) continue").split("\n")[1:]
        check(sessions[0].startswith("xref: no sessions"), "a session is listed: %r" % sessions, run)
        check(re.search(r"\[Inferior 1 \(process \d+\) exited normally\]", run.output) is not None,
              "the process did not exit normally", run)
        check(len(target.writes()) > 0, "the target recorded no write", run)
        check(" ended (" not in run.output, "a session ended", run)


TESTS = {"debug_registers": lambda: debug_registers("gcc")}
for _compiler in BUILDS:
    for _case in (stop_when, stop_skip, globals_to_exit, stop_and_release, buffer_array, buffer_location,
                  evaluation_error):
        TESTS["%s_%s" % (_case.__name__, _compiler)] = (lambda case, compiler: lambda: case(compiler))(_case, _compiler)

if __name__ == "__main__":
    sys.exit(main(TESTS))
