#!/usr/bin/env python3
"""A scripted stand-in for `xref serve` (docs/protocol.md) that needs no BPF:
the plugin tests use it for what only the front end does (handshake errors,
rendering from static VAs, breakpoints from events, the stop hook, helper
death). It answers session.start with one window made of the executable's
own symbols (from nm), without live addresses, so the plugin has to compute
them from the module's load bias.

FAKE_HELPER_PROTOCOL overrides the protocol version it greets with.
FAKE_HELPER_LOG appends every line it receives to that file."""
import json
import os
import subprocess
import sys
import threading
import time

protocol = int(os.environ.get("FAKE_HELPER_PROTOCOL", "1"))
log_path = os.environ.get("FAKE_HELPER_LOG")
lock = threading.Lock()
sessions = {}


def send(message):
    with lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def nm_vas(path):
    vas = {}
    output = subprocess.run(["nm", "--defined-only", path], capture_output=True, text=True).stdout
    for line in output.splitlines():
        fields = line.split()
        if len(fields) == 3:
            vas[fields[2]] = int(fields[0], 16)
    return vas


def call_site(path, caller, callee):
    """The static VA of the first `call <callee>` in `caller` (objdump)."""
    output = subprocess.run(["objdump", "-d", "--no-show-raw-insn", path], capture_output=True, text=True).stdout
    inside = False
    for line in output.splitlines():
        if line.endswith(f"<{caller}>:"):
            inside = True
        elif inside and not line.strip():
            break
        elif inside and "call" in line and f"<{callee}>" in line:
            return int(line.split(":")[0], 16)
    return 0


def window_for(session, context):
    executable = context.get("executable", "")
    vas = nm_vas(executable)
    handle, validate = vas.get("handle_request", 0), vas.get("validate", 0)
    site = call_site(executable, "handle_request", "validate")
    events = [
        {"seq": 0, "kind": "entry", "depth": 0, "target_va": hex(handle), "symbol": "handle_request",
         "probe_va": hex(handle), "tail_call": False, "fetches": []},
        {"seq": 1, "kind": "entry", "depth": 1, "target_va": hex(validate), "symbol": "validate",
         "probe_va": hex(site), "call_site_va": hex(site), "call_site_verified": True,
         "tail_call": False, "fetches": [{"name": "r", "type": "x64", "value": "0x1234"}]},
        {"seq": 2, "kind": "return", "depth": 1, "target_va": hex(validate), "symbol": "validate",
         "probe_va": hex(validate + 0x10), "tail_call": False, "fetches": []},
        {"seq": 3, "kind": "return", "depth": 0, "target_va": hex(handle), "symbol": "handle_request",
         "probe_va": hex(handle + 0x40), "tail_call": False, "fetches": []},
    ]
    return {"window_id": 1, "tid": context.get("here", {}).get("tid", 1), "status": "complete",
            "possible_loss": False, "lost_events": 0, "start_fetches": [], "events": events}


def handle(request):
    method, params, rid = request.get("method"), request.get("params", {}), request.get("id")
    if method == "hello":
        send({"id": rid, "result": {"protocol": 1, "tool_version": "0.1.0-fake"}})
    elif method == "command":
        if "--help" in params.get("argv", []):
            send({"id": rid, "result": {"help": "fake help for " + params["argv"][0]}})
            return
        document = {"operation": "doctor", "data": {"kernel_release": "fake", "checks": [
            {"name": "bpf_load", "status": "ok", "detail": "fake", "hint": ""}]}, "error": None, "warnings": []}
        send({"id": rid, "result": {"document": document, "exit_status": 0}})
    elif method == "session.start":
        argv, context = params.get("argv", []), params.get("context", {})
        if "--help" in argv:
            send({"id": rid, "result": {"help": "fake trace help"}})
            return
        session = len(sessions) + 1
        sessions[session] = context
        result = {"session": session, "backend": "fake", "probes": 3, "functions": 2, "warnings": []}
        if "--start" in argv and argv[argv.index("--start") + 1].startswith("bp:"):
            result["breakpoints_to_disable"] = [int(argv[argv.index("--start") + 1][3:])]
        if "--here" in argv:
            result["here_window"] = 1
        window = window_for(session, context)
        send({"id": rid, "result": result})
        time.sleep(0.01)
        send({"type": "event", "event": "window", "session": session, "window": window})
    elif method == "session.stop":
        session = params.get("session")
        if session not in sessions:
            send({"id": rid, "error": {"code": "unknown_session", "message": f"no session {session}"}})
            return
        summary = {"windows": 1, "complete_windows": 1, "events": 4, "lost": 0}
        send({"type": "event", "event": "session_ended", "session": session, "stop_reason": "stopped",
              "summary": summary, "windows": [], "error": None})
        del sessions[session]
        send({"id": rid, "result": {"session": session, "summary": summary}})
    elif method == "test.never_answers":
        pass
    elif method == "drain":
        # Every window was sent right after its session started.
        send({"id": rid, "result": {"drained": True, "ending": []}})
    elif method == "sessions":
        send({"id": rid, "result": {"sessions": [
            {"session": s, "command": "trace", "pid": c.get("pid", 0), "backend": "fake", "windows": 1,
             "events": 4, "state": "running"} for s, c in sessions.items()]}})
    else:
        send({"id": rid, "error": {"code": "unknown_method", "message": f"unknown method {method}"}})


def watch_targets():
    """A session whose process exits ends with target_exited and one open window."""
    while True:
        time.sleep(0.02)
        for session, context in list(sessions.items()):
            if context.get("pid") and not os.path.exists(f"/proc/{context['pid']}"):
                window = dict(window_for(session, context), window_id=2, status="target_exited")
                window["events"] = window["events"][:2]
                send({"type": "event", "event": "session_ended", "session": session, "stop_reason": "target_exited",
                      "summary": {"windows": 2, "complete_windows": 1, "events": 6, "lost": 0},
                      "windows": [window], "error": {"code": "process_exited", "message": "the process exited"}})
                sessions.pop(session, None)


def main():
    threading.Thread(target=watch_targets, daemon=True).start()
    send({"type": "hello", "protocol": protocol, "tool": "xref", "tool_version": "0.1.0-fake", "pid": os.getpid()})
    for line in sys.stdin:
        if log_path:
            with open(log_path, "a") as log:
                log.write(line)
        handle(json.loads(line))
    if log_path:
        with open(log_path, "a") as log:
            log.write("stdin closed\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
