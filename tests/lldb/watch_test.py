"""`xref watch EXPR...` in real lldb-19 with the real helper, on
watch_target (gcc and clang -O2 builds), whose record lists every write it
makes (thread, order, offset, old and new bytes, writing function): what the
watch recorded (`xref show --all --json`, the live_watch document) must
equal the record's writes of the watched bytes, per thread, exactly.

Every case stops the target at the first write of its first round
(total_fetch_add), after go, so nothing was written yet; sets the watch
there with an LLDB expression; lets the target run to its exit.

    python3 watch_test.py CASE-COMPILER    (CASE: global struct array location stop_when stop release parity)
"""

import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))

from facility import run_named  # noqa: E402
from lldb_batch import between, check, require_lldb_and_target, run_lldb  # noqa: E402
import watch_target_record as wt  # noqa: E402
from watch_writes import expect_equal, expected_writes, last_document, watched_writes  # noqa: E402

TARGETS = {"gcc": os.environ.get("XREF_WATCH_TARGET_GCC", ""), "clang": os.environ.get("XREF_WATCH_TARGET_CLANG", "")}
FIRST_WRITER = "total_fetch_add"


def require_all(compiler):
    require_lldb_and_target(TARGETS[compiler], "watch_target build for %s" % compiler)


class Run:
    """One lldb-19 run on a fresh watch_target waiting for its go file."""

    def __init__(self, compiler, directory, target_args=("--threads", "2", "--rounds", "12")):
        self.go = os.path.join(directory, "go")
        self.record_path = os.path.join(directory, "record")
        self.argv = [TARGETS[compiler], "--go", self.go, "--record", self.record_path, "--interval-us", "500"]
        self.argv += list(target_args)
        self.output = ""
        self.status = None

    def start(self):
        """Stopped at the first write's function, before any write."""
        return ["breakpoint set -n main", "run", "breakpoint delete 1", "script open(%r, 'w').close()" % self.go,
                "breakpoint set -n " + FIRST_WRITER, "continue", "breakpoint delete 2"]

    def lldb(self, commands, after_signal=()):
        self.status, self.output = run_lldb(self.start() + commands, self.argv, after_signal)
        return self.output

    def record(self):
        return wt.read_record(self.record_path)

    def startup(self):
        lines = []
        for line in self.output.replace("\r", "").split("\n"):  # the target writes to LLDB's terminal
            if line == "ready":
                break
            if re.match(r"^(obj|thread|pid) ", line):
                lines.append(line)
        return wt.parse_startup(lines)

    def document(self):
        """The live_watch document `xref show --all --json` printed last."""
        found = last_document(self.output)
        check(found is not None, "no live_watch document printed", self.output)
        return found


def watch_to_exit(compiler, words, ranges_of):
    """`xref watch WORDS` at the first write; the target runs to its exit;
    the watch's writes equal the record's. ranges_of(startup) -> ranges."""
    with tempfile.TemporaryDirectory() as directory:
        run = Run(compiler, directory)
        output = run.lldb(["xref watch " + words + " --duration-ms 0", "continue", "xref show --all --json"])
        check(run.status == 0, "lldb exited with %r" % run.status, output)
        check("exited with status = 0" in output, "the target did not exit normally", output)
        # Ended by the exit, and said so once (when LLDB saw the exit, or at
        # the next command if that came first).
        check(len(re.findall(r"xref: session 1 ended \(target_exited\): \d+ writes", output)) == 1,
              "the session's end at the target's exit was not printed once", output)
        document = run.document()
        check(document["result"]["stop_reason"] == "target_exited", "stop_reason %r" %
              document["result"]["stop_reason"], output)
        check(document["result"]["lost"] == 0, "writes lost", output)
        ranges = ranges_of(run.startup())
        check(len(document["result"]["ranges"]) == len(ranges), "ranges %r" % document["result"]["ranges"], output)
        for index, (obj, offset, length) in enumerate(ranges):
            got = document["result"]["ranges"][index]
            where = run.startup().objects[obj].address + offset
            check(int(got["address"], 16) == where and got["length"] == length,
                  "range %d is %s:%d, not %s+%d:%d at %#x" % (index, got["address"], got["length"], obj, offset,
                                                            length, where), output)
        expect_equal(expected_writes(run.record(), ranges), watched_writes(document), output)
        return run, document


def case_global(compiler):
    """Globals by name: g_total (8 bytes), g_counts (int[4]), g_flag (1 byte)."""
    watch_to_exit(compiler, "g_total g_counts g_flag",
                  lambda startup: [("g_total", 0, 8), ("g_counts", 0, 16), ("g_flag", 0, 1)])


def case_struct(compiler):
    """A struct field through a pointer at a frame: configure(config, round)
    stopped at its entry; config->limit is g_config+8, 8 bytes."""
    with tempfile.TemporaryDirectory() as directory:
        run = Run(compiler, directory)
        output = run.lldb(["breakpoint set -n configure", "continue", "breakpoint delete 3",
                           "xref watch config->limit --duration-ms 0", "continue", "xref show --all --json"])
        check(run.status == 0, "lldb exited with %r" % run.status, output)
        document = run.document()
        got = document["result"]["ranges"][0]
        where = run.startup().objects["g_config"].address + 8
        check(int(got["address"], 16) == where and got["length"] == 8, "range %r is not g_config+8:8" % got, output)
        # configure's own write of this round is after the stop: every limit write is expected.
        expect_equal(expected_writes(run.record(), [("g_config", 8, 8)]), watched_writes(document), output)


def case_array(compiler):
    """gdb's artificial array: *buf@64, the first 64 bytes of the heap buffer
    (a byte loop, memcpy and memset write there)."""
    watch_to_exit(compiler, "'*buf@64'", lambda startup: [("buf", 0, 64)])


def case_location(compiler):
    """-l: buf's value is the address; -s 64 its length."""
    watch_to_exit(compiler, "-l buf -s 64", lambda startup: [("buf", 0, 64)])


def case_stop_when(compiler):
    """--stop-when stops the writing thread at the first write that makes it
    true, after the store: LLDB shows the new value there, in the record's
    writer. One thread, so the record's order is the watch's."""
    with tempfile.TemporaryDirectory() as directory:
        run = Run(compiler, directory, ("--threads", "1", "--rounds", "12"))
        output = run.lldb(["xref watch g_total --stop-when 'value > 100' --duration-ms 0", "continue"],
                          after_signal=["frame variable -f x g_total", "xref stop", "continue",
                                        "xref show --all --json"])
        check(run.status == 0, "lldb exited with %r" % run.status, output)
        record = run.record()
        first = next((w for w in record if w.object == "g_total" and w.new_value > 100), None)
        check(first is not None, "the record has no write making g_total > 100", output)
        check(output.count("stop reason = signal SIGRTMAX-1") == 1, "not one --stop-when stop", output)
        stop = between(output, "stop reason = signal SIGRTMAX-1", "(lldb) frame variable")
        check(re.search(r"frame #0: 0x[0-9a-f]+ \S+`%s" % first.function, stop) is not None,
              "stopped elsewhere than %s, the writer the record names" % first.function, output)
        shown = re.search(r"\(uint64_t\) g_total = (0x[0-9a-f]+)", output)
        check(shown is not None and int(shown.group(1), 16) == first.new_value,
              "g_total at the stop is not %#x, the new value of %s" % (first.new_value, first.where()), output)
        # Recorded up to the stop: the writes before it and the one that stopped it.
        document = run.document()
        watched = watched_writes(document)
        expected = expected_writes(record, [("g_total", 0, 8)])
        for tid, writes in watched.items():
            check(writes == expected[tid][:len(writes)], "thread %d's writes are not the record's first" % tid, output)
        check(any(w[3] == first.new.hex() for writes in watched.values() for w in writes),
              "the stopping write is not among the watch's", output)


def case_stop(compiler):
    """`xref stop` while the target runs on: the watch's writes are the
    record's first, per thread, up to the stop; nothing after it."""
    with tempfile.TemporaryDirectory() as directory:
        run = Run(compiler, directory)
        output = run.lldb(["xref watch g_total --duration-ms 0", "breakpoint set -n set_weight -i 5", "continue",
                           "xref stop", "breakpoint delete 3", "continue", "xref show --all --json"])
        check(run.status == 0, "lldb exited with %r" % run.status, output)
        check(re.search(r"xref: session 1 ended \(stopped\)", output) is not None, "no end by xref stop", output)
        watched = watched_writes(run.document())
        expected = expected_writes(run.record(), [("g_total", 0, 8)])
        seen = sum(len(writes) for writes in watched.values())
        check(0 < seen < sum(len(writes) for writes in expected.values()),
              "%d writes seen: not a part of the record's" % seen, output)
        for tid, writes in watched.items():
            check(writes == expected[tid][:len(writes)], "thread %d's writes are not the record's first" % tid, output)


def store_offset(compiler, function, obj):
    """The offset in `function` of its store to the global `obj` (objdump:
    a mov whose destination is obj's rip-relative address)."""
    listing = subprocess.run(["objdump", "-d", "--no-show-raw-insn", TARGETS[compiler]], capture_output=True,
                             text=True, check=True).stdout
    start = None
    for line in listing.splitlines():
        header = re.match(r"^([0-9a-f]+) <(\S+)>:$", line)
        if header:
            start = int(header.group(1), 16) if header.group(2) == function else None
        elif start is not None and re.search(r"\tmov\s+[^,]+,0x[0-9a-f]+\(%rip\)\s+# [0-9a-f]+ <" + obj + ">", line):
            return int(line.split(":")[0], 16) - start
    raise AssertionError("objdump shows no store to %s in %s" % (obj, function))


def case_release(compiler):
    """A breakpoint set on a store the watch probes (total_store's mov to
    g_total): LLDB stops there, the session releases that store (its
    writes are then unobserved changes), the others are still recorded
    exactly, and the target runs on unharmed."""
    offset = store_offset(compiler, "total_store", "g_total")
    with tempfile.TemporaryDirectory() as directory:
        run = Run(compiler, directory)
        # The store engine named: auto takes the debug registers where they fire.
        output = run.lldb(["xref watch g_total --backend stores --duration-ms 0",
                           "breakpoint set -a '(char *)&total_store + %d'" % offset, "continue",
                           "register read pc", "breakpoint delete 3", "continue", "xref show --all --json"])
        check(run.status == 0, "lldb exited with %r" % run.status, output)
        check("stop reason = breakpoint 3.1" in output, "LLDB did not stop at the released store", output)
        check("exited with status = 0" in output, "the target did not run to its end", output)
        document = run.document()
        watched = watched_writes(document)
        check(all(w[4] != "total_store" for writes in watched.values() for w in writes),
              "a write at the released store was recorded", output)
        record = [w for w in run.record() if w.function != "total_store"]
        expect_equal(expected_writes(record, [("g_total", 0, 8)]), watched, output)
        check(len(document["result"]["unobserved_changes"]) > 0,
              "total_store's writes after the release are not reported as unobserved changes", output)


def thread_writes_by_worker(run, document):
    """The watch's writes per worker (worker0, ...), tids replaced by the
    worker's name: two runs have different tids."""
    names = {tid: name for name, tid in run.startup().threads.items()}
    return {names.get(tid, tid): writes for tid, writes in watched_writes(document).items()}


def case_parity(compiler):
    """gdb and lldb on the same target and scenario (one writer thread, so
    the writes do not depend on the interleaving): the same writes, each
    equal to its run's record. g_config whole: 144 bytes, every width."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gdb"))
    from gdb_batch import require_gdb, run_gdb
    require_gdb()
    words = "xref watch g_config --duration-ms 0"
    seen = {}
    for debugger in ("lldb", "gdb"):
        with tempfile.TemporaryDirectory() as directory:
            run = Run(compiler, directory, ("--threads", "1", "--rounds", "10"))
            if debugger == "lldb":
                output = run.lldb([words, "continue", "xref show --all --json"])
            else:
                commands = ["break main", "run", "delete 1", "python open(%r, 'w').close()" % run.go,
                            "break " + FIRST_WRITER, "continue", "delete 2", words, "continue",
                            "xref show --all --json"]
                gdb = run_gdb(commands, run.argv)
                run.output, run.status = gdb.output, gdb.exit_status
                output = run.output
            check(run.status == 0, "%s exited with %r" % (debugger, run.status), output)
            document = run.document()
            expect_equal(expected_writes(run.record(), [("g_config", 0, 144)]), watched_writes(document), output)
            seen[debugger] = thread_writes_by_worker(run, document)
    check(seen["gdb"] == seen["lldb"], "gdb and lldb saw different writes:\n%r\n%r" % (seen["gdb"], seen["lldb"]))


CASES = {"global": case_global, "struct": case_struct, "array": case_array, "location": case_location,
         "stop_when": case_stop_when, "stop": case_stop, "release": case_release,
         "parity": case_parity}


def named(name, compiler):
    def test():
        require_all(compiler)
        CASES[name](compiler)
    return test


if __name__ == "__main__":
    sys.exit(run_named({"%s-%s" % (name, compiler): named(name, compiler)
                        for name in CASES for compiler in TARGETS}, sys.argv))
