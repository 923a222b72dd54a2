#!/usr/bin/env python3
"""xref trace on Debian's sqlite3 (the CLI and libsqlite3.so.0), against
bpftrace on the same process (issue 23, item 3).

  check_sqlite.py --xref XREF [--statements N]

sqlite3_mutex_enter and sqlite3_mutex_leave end in `jmp *0x80(%rax)` and
`jmp *0x90(%rax)`, sqlite3_free in `jmp *%rax`: their frames end where no
probe sees them. The sqlite3 CLI on a database in a scratch directory runs a
known workload (CREATE, N INSERTs, SELECTs, one of a zip archive through
the CLI's zipfile table) fed through its stdin, while

  - bpftrace counts sqlite3_mutex_enter, sqlite3_mutex_leave, sqlite3_free
    and sqlite3_malloc64 per sqlite3_prepare_v2 call, each entry with its
    return address, and
  - xref traces `--start sqlite3_prepare_v2 --functions` the same four.

Every window must be complete, count what bpftrace counted in the same
call, name the same return addresses, and never be deeper than the deepest
nesting bpftrace measured (uretprobes on the four, in a run of their own
with the same workload: a uretprobe's trampoline in a return address's slot
would end frames early in xref's eyes).

Exit status 0 equal, 1 not, 77 (skip) when sqlite3, bpftrace, xref or BPF is
missing and XREF_REQUIRE_BPF is not 1.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from check_redis import die_with_parent  # noqa: E402
from realcode.facility import missing_status  # noqa: E402
from realcode import peer  # noqa: E402

START = "sqlite3_prepare_v2"
COUNTED = ["sqlite3_mutex_enter", "sqlite3_mutex_leave", "sqlite3_free", "sqlite3_malloc64"]


class Sqlite:
    """The sqlite3 CLI on a database in `work`, fed statements on stdin; it
    answers each batch's last SELECT, so every wait is for its answer."""

    def __init__(self, work: str):
        self.process = subprocess.Popen(["sqlite3", os.path.join(work, "test.db")], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, bufsize=1, preexec_fn=die_with_parent)
        self.marker = 0

    def run(self, statements: list[str]) -> None:
        self.marker += 1
        wanted = f"marker-{self.marker}"
        self.process.stdin.write("".join(f"{statement};\n" for statement in statements) + f"select '{wanted}';\n")
        self.process.stdin.flush()
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError("sqlite3 ended")
            if line.strip() == wanted:
                return

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


def workload(statements: int, archive: str) -> list[str]:
    """`archive`, a zip file: the CLI's zipfile table allocates with
    sqlite3_malloc64 when a statement naming it is prepared (libsqlite3
    itself uses its internal allocator)."""
    rows = [f"insert into t(b, c) values('row {i}', {i * 7 % 13})" for i in range(statements)]
    return (["create table t(a integer primary key, b text, c integer)", "create index t_c on t(c)"] + rows +
            ["select count(*) from t", "select b from t where c = 3 order by a",
             "select c, count(*) from t group by c", "update t set c = c + 1 where a % 2 = 0",
             "delete from t where a % 5 = 0", "select sum(c) from t",
             f"select count(*) from zipfile('{archive}')"])


def write_archive(path: str) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("member.txt", "a member of the archive the workload reads\n")


def run(xref: str, statements: int) -> int:
    work = tempfile.mkdtemp(prefix="xref-realcode-sqlite-")
    sqlite = None
    try:
        os.makedirs(os.path.join(work, "nesting"))
        os.makedirs(os.path.join(work, "traced"))
        archive = os.path.join(work, "archive.zip")
        write_archive(archive)
        # The nesting, from uretprobes, in a run of its own (peer.py).
        sqlite = Sqlite(os.path.join(work, "nesting"))
        sqlite.run(["select 1"])
        library, _ = peer.mapped_path(sqlite.process.pid, "libsqlite3.so")
        nesting = peer.measured_nesting(library, sqlite.process.pid, START, COUNTED, lambda: sqlite.run(["select 1"]),
                                        lambda: sqlite.run(workload(statements, archive)))
        sqlite.close()

        sqlite = Sqlite(os.path.join(work, "traced"))
        sqlite.run(["select 1"])
        pid = sqlite.process.pid
        library, _ = peer.mapped_path(pid, "libsqlite3.so")
        trace_args = ["--start", f"libsqlite3.so.0:{START}",
                      "--functions", ",".join(f"libsqlite3.so.0:{name}" for name in COUNTED)]
        run = peer.traced_run(xref, library, pid, START, COUNTED, trace_args, lambda: sqlite.run(["select 1"]),
                              lambda: sqlite.run(workload(statements, archive)), nesting, work)
        print(peer.summary(run, f"sqlite3 ({library})", START, nesting))
        problems = run.problems
        total = sum((call.counts for call in run.calls), start=Counter())
        if not total["sqlite3_mutex_leave"] or not total["sqlite3_malloc64"]:
            problems.append("the workload did not reach sqlite3_mutex_leave and sqlite3_malloc64")
        return peer.verdict(problems)
    finally:
        if sqlite is not None:
            sqlite.close()
        shutil.rmtree(work, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--xref", required=True)
    parser.add_argument("--statements", type=int, default=40, help="INSERTs in the workload")
    options = parser.parse_args()
    for program, package in (("sqlite3", "sqlite3"), ("bpftrace", "bpftrace")):
        if shutil.which(program) is None:
            return missing_status(f"{program} (Debian package {package})")
    if not os.access(options.xref, os.X_OK):
        return missing_status(f"the xref helper ({options.xref})")
    if os.geteuid() != 0:
        return missing_status("BPF (run as root)")
    return run(options.xref, options.statements)


if __name__ == "__main__":
    sys.exit(main())
