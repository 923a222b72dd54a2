"""The Python reader of watch_target's ground truth (tests/support/
watch_target_record.py) on a real run: 3 workers and a late thread with
--realloc --read-fd --cas-miss. The startup and exit lines parse, every thread
writes SEQ 1, 2, 3..., the replay in g_total's order finds every OLD where the
writes before it left the bytes and ends at the final lines, the late thread
did not exist at go, and each `moving` write's address lies in the block the
replay says (the last one is moving_slot's final value).

    watch_target_reader_test.py TARGET WORK_DIR
"""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import watch_target_record as wt  # noqa: E402

ROUNDS = 16


def main():
    target, work_dir = sys.argv[1], sys.argv[2]
    base = os.path.join(work_dir, os.path.basename(target) + "_python_reader")
    record, go = base + ".record", base + ".go"
    for path in (record, go):
        if os.path.exists(path):
            os.unlink(path)
    args = [target, "--threads", "3", "--rounds", str(ROUNDS), "--interval-us", "100", "--go", go,
            "--record", record, "--late-thread", "--realloc", "--read-fd", "--cas-miss"]
    print("$ " + " ".join(args))
    process = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    startup_lines = []
    for line in process.stdout:
        line = line.rstrip("\n")
        if line == "ready":
            break
        startup_lines.append(line)
    startup = wt.parse_startup(startup_lines)
    assert startup.pid == process.pid, "pid line %d, child %d" % (startup.pid, process.pid)
    assert len(startup.threads) == 3, startup.threads
    tasks_at_go = set(int(tid) for tid in os.listdir("/proc/%d/task" % process.pid))
    time.sleep(0.1)
    assert wt.read_record(record) == [], "writes recorded before go"
    open(go, "w").close()
    exit_lines = [line.rstrip("\n") for line in process.stdout]
    assert process.wait() == 0, "exit status %d" % process.returncode
    exit = wt.parse_exit(exit_lines)
    assert exit.late_tid is not None and exit.late_tid not in tasks_at_go, "the late thread existed at go"

    writes = wt.read_record(record)
    threads = wt.by_thread(writes)
    assert set(threads) == set(startup.threads.values()) | {exit.late_tid}, sorted(threads)
    replayed = wt.replay(startup, writes)
    for name in wt.OBJECT_NAMES:
        final = exit.finals[name]
        for i, byte in enumerate(replayed.known[name]):
            assert byte is None or byte == final[i], "final %s byte %d: %02x, replay %02x" % (name, i, final[i], byte)
    assert replayed.moving_address == wt.value_of(exit.finals["moving_slot"])
    assert replayed.moves == 4 * (ROUNDS // 4), "moves: %d" % replayed.moves
    kernel = [w for w in writes if w.by_kernel]
    contract = [w for w in writes if w.by_contract]
    assert len(kernel) == 4 * ROUNDS and all(w.function == "fill_from_pipe" for w in kernel)
    assert {w.function for w in contract} == {"copy_in", "clear_range", "rename_config"}
    # Each moving write's address lies in its block: the block's start is the
    # moving_slot value the replay had reached.
    blocks = [startup.objects["moving"].address] + [
        writes[i].new_value for i in replayed.order if writes[i].object == "moving_slot" and writes[i].changed]
    for i, write in enumerate(writes):
        if write.object == "moving":
            assert replayed.address[i] == blocks[replayed.generation[i]] + write.offset, write.where()
    # What a watch of buf[0:16] sees: the touched part of each write to it.
    parts = [part for part in (wt.clip(w, "buf", 0, 16) for w in writes) if part is not None]
    assert parts and all(0 <= p.offset and p.offset + p.length <= 16 and len(p.old) == len(p.new) == p.length
                         for p in parts), "clip left the range"
    assert {p.function for p in parts} >= {"fill_bytes", "copy_in", "clear_range", "fill_from_pipe"}, \
        sorted({p.function for p in parts})
    print("python reader: %d writes by %d threads, %d moves, %d kernel reads, replay equal to the final lines" %
          (len(writes), len(threads), replayed.moves, len(kernel)))
    print("ok")


if __name__ == "__main__":
    main()
