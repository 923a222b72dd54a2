#!/usr/bin/env python3
"""A minimal `xref serve` client for bench/run_drain.sh: one trace session,
every line it sends written to a file, and the CPU time of `xref serve`
alone (not this client's).

  serve_client.py --xref XREF --pid PID --out FILE --result FILE -- ARGV...

Runs `XREF serve`, answers its hello (protocol 1, docs/protocol.md), sends
`session.start` with params {"argv": ARGV, "context": {"pid": PID}} and,
once it is answered (the session is attached), prints "attached session S"
on stderr: the benchmark sends its go byte then. It then reads every line
the helper sends (the session's window events, then its session_ended),
writing each to --out as it comes, unparsed, so this client costs little
next to the helper; it parses only the session_ended line. Then it sends
`shutdown`, waits for the helper with wait4(2), and writes --result, one
JSON object: the helper's user and system CPU time in seconds
(microsecond resolution), its exit status, the wall time from the helper's
spawn to its exit, the session.start result and the stop reason.

Exits 0 when the session started and ended and the helper exited with 0;
else 1, with the reason on stderr. SIGINT and SIGTERM stop the helper (it
detaches the session) and end this client with status 130 or 143.
"""
import argparse
import ctypes
import json
import os
import signal
import subprocess
import sys
import time

PR_SET_PDEATHSIG = 1


def die_with_parent():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


class Failed(Exception):
    pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--xref", required=True)
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--result", required=True)
    parser.add_argument("argv", nargs="+")
    args = parser.parse_args()

    began = time.monotonic()
    helper = subprocess.Popen([args.xref, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              bufsize=1 << 20, preexec_fn=die_with_parent)
    reaped = {}

    def stop_helper(signum, _frame):
        try:
            helper.send_signal(signal.SIGTERM)
        except ProcessLookupError:
            pass
        reap()
        sys.exit(128 + signum)

    def reap():
        if "status" not in reaped:
            _, status, usage = os.wait4(helper.pid, 0)
            helper.returncode = 0  # reaped here, not by Popen
            reaped.update(status=os.waitstatus_to_exitcode(status), usage=usage, wall=time.monotonic() - began)
        return reaped

    signal.signal(signal.SIGINT, stop_helper)
    signal.signal(signal.SIGTERM, stop_helper)

    def send(message):
        helper.stdin.write((json.dumps(message) + "\n").encode())
        helper.stdin.flush()

    def line():
        text = helper.stdout.readline()
        if not text:
            raise Failed("xref serve closed its output")
        return text

    def answer(request_id):
        """The response to request_id; nothing else may come before it."""
        message = json.loads(line())
        if message.get("id") != request_id:
            raise Failed("expected the answer to request %d, got %s" % (request_id, json.dumps(message)[:300]))
        if "error" in message:
            raise Failed("request %d failed: %s" % (request_id, json.dumps(message["error"])))
        return message["result"]

    result = {}
    try:
        hello = json.loads(line())
        if hello.get("type") != "hello" or hello.get("protocol") != 1:
            raise Failed("unexpected greeting: %s" % json.dumps(hello))
        send({"id": 1, "method": "hello", "params": {"protocol": 1, "client": "bench/serve_client.py"}})
        answer(1)
        send({"id": 2, "method": "session.start", "params": {"argv": args.argv, "context": {"pid": args.pid}}})
        started = answer(2)
        session = started["session"]
        result["start"] = started
        print("attached session %d" % session, file=sys.stderr, flush=True)
        ended = None
        with open(args.out, "wb", buffering=1 << 20) as out:
            while ended is None:
                text = line()
                out.write(text)
                if b'"session_ended"' in text:
                    message = json.loads(text)
                    if message.get("event") == "session_ended" and message.get("session") == session:
                        ended = message
        if ended.get("error") is not None:
            raise Failed("the session ended with an error: %s" % json.dumps(ended["error"]))
        result["stop_reason"] = ended.get("stop_reason")
        send({"id": 3, "method": "shutdown"})
        answer(3)
        helper.stdin.close()
    except (Failed, ValueError, KeyError, BrokenPipeError) as error:
        print("serve_client: %s" % error, file=sys.stderr, flush=True)
        try:
            helper.send_signal(signal.SIGTERM)
        except ProcessLookupError:
            pass
        reap()
        return 1
    done = reap()
    usage = done["usage"]
    result.update(user_s=usage.ru_utime, sys_s=usage.ru_stime, wall_s=done["wall"], status=done["status"])
    with open(args.result, "w") as f:
        json.dump(result, f)
        f.write("\n")
    if done["status"] != 0:
        print("serve_client: xref serve exited with status %d" % done["status"], file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
