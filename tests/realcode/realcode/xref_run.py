"""One traced run: start a program, attach `xref trace`, release the
program, let it finish its requests, stop xref, collect both sides.

Every wait is for an event (a line the program or xref prints, a process
exit), never for a time: the program's requests start only once xref says
its probes are attached, and xref drains everything it recorded when it is
interrupted.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
from dataclasses import dataclass


@dataclass
class RunResult:
    xref_argv: list[str]
    exit_status: int
    document: dict | None  # xref's JSON, None when it printed none
    stderr: str
    record: str            # the program's record file
    slide: int             # the program's load bias (live - static)
    refused: str | None    # why xref did not trace (it exited before attaching)


def _read_until(stream, wanted: str) -> list[str]:
    lines = []
    while True:
        line = stream.readline()
        if not line:
            raise RuntimeError(f"the program ended before printing {wanted!r}: {lines}")
        lines.append(line.rstrip("\n"))
        if lines[-1] == wanted:
            return lines


def run_traced(xref: str, program: str, anchor_va: int, trace_args: list[str], requests: int,
               threads: int) -> RunResult:
    with tempfile.TemporaryDirectory(prefix="xref-realcode-") as work:
        record_path = os.path.join(work, "record")
        go_file = os.path.join(work, "go")
        target = subprocess.Popen([program, "--record", record_path, "--go-file", go_file, "--requests",
                                   str(requests), "--threads", str(threads)],
                                  stdout=subprocess.PIPE, text=True)
        xref_process = None
        try:
            startup = _read_until(target.stdout, "ready")
            values = dict(line.rsplit(" ", 1) for line in startup if " " in line)
            slide = int(values["anchor serve"], 16) - anchor_va
            argv = [xref, "trace", "--pid", str(target.pid), *trace_args, "--json"]
            output_path = os.path.join(work, "trace.json")
            with open(output_path, "w") as output:
                xref_process = subprocess.Popen(argv, stdout=output, stderr=subprocess.PIPE, text=True)
            stderr_lines = []
            attached = False
            while True:
                line = xref_process.stderr.readline()
                if not line:
                    break
                stderr_lines.append(line.rstrip("\n"))
                if line.startswith("xref: tracing PID"):
                    attached = True
                    break
            refused = None
            if attached:
                open(go_file, "w").close()
                _read_until(target.stdout, "done")
                xref_process.send_signal(signal.SIGINT)
            stderr_lines += xref_process.stderr.read().splitlines()
            exit_status = xref_process.wait()
            with open(output_path) as output:
                text = output.read()
            document = json.loads(text) if text.strip() else None
            if not attached:
                error = (document or {}).get("error") or {}
                refused = error.get("message") or "\n".join(stderr_lines) or f"exit status {exit_status}"
            with open(record_path) as record:
                record_text = record.read()
            return RunResult(xref_argv=argv, exit_status=exit_status, document=document,
                             stderr="\n".join(stderr_lines), record=record_text, slide=slide, refused=refused)
        finally:
            if xref_process is not None and xref_process.poll() is None:
                xref_process.kill()
                xref_process.wait()
            target.kill()
            target.wait()
