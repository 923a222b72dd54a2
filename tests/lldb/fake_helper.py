#!/usr/bin/env python3
"""A scripted stand-in for `xref serve` speaking protocol 2 (docs/protocol.md,
"Protocol 2: the helper renders") that needs no BPF: the plugin tests use it
for what only the front end does (naming live addresses with LLDB's symbols,
the preparation before a start, breakpoints from events, stops and exits,
helper death). A trace session has one window on the executable's own
functions (nm, objdump) at their live addresses (the load bias from
/proc/PID/maps); `show` asks the front end to name them first and prints
them with the names it sent, as `NAME+OFF at FILE:LINE`.

FAKE_HELPER_PROTOCOL overrides the protocol version it greets with.
FAKE_HELPER_LOG appends every line it receives to that file."""
import json
import os
import subprocess
import sys
import threading
import time

protocol = int(os.environ.get("FAKE_HELPER_PROTOCOL", "2"))
log_path = os.environ.get("FAKE_HELPER_LOG")
lock = threading.Lock()
sessions = {}  # id -> {"pid", "context", "window", "shown", "ended", "end_shown"}
names = {}  # (pid, live) -> the front end's name


def send(message):
    with lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def nm_vas(path):
    vas = {}
    for line in subprocess.run(["nm", "--defined-only", path], capture_output=True, text=True).stdout.splitlines():
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


def load_bias(pid, executable):
    """Where the executable's file offset 0 is mapped (a PIE's bias; 0 when not PIE)."""
    with open(f"/proc/{pid}/maps") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) >= 6 and os.path.realpath(fields[5]) == os.path.realpath(executable) and fields[2] == "00000000":
                return int(fields[0].split("-")[0], 16)
    return 0


def window_for(context, window_id=1, events=4):
    executable, pid = context.get("executable", ""), context.get("pid", 0)
    vas = nm_vas(executable)
    bias = load_bias(pid, executable) if vas.get("main", 0) < 0x400000 else 0
    handle, validate = vas.get("handle_request", 0) + bias, vas.get("validate", 0) + bias
    site = call_site(executable, "handle_request", "validate") + bias
    window = [(">", 0, handle, "handle_request", ""), (">", 1, site, "validate", "  r=0x1234"),
              ("<", 1, validate + 0x10, "validate", ""), ("<", 0, handle + 0x40, "handle_request", "")]
    return {"id": window_id, "tid": context.get("here", {}).get("tid", 1), "events": window[:events]}


def text_of(pid, live):
    name = names.get((pid, live))
    if not name or name.get("unknown"):
        return hex(live)
    where = name["function"] + ("+%#x" % name["offset"] if name.get("offset") else "")
    if name.get("file"):
        where += " at %s:%d" % (os.path.basename(name["file"]), name["line"])
    return where


def window_lines(session_id, session):
    window, pid = session["window"], session["pid"]
    lines = ["window %d (session %d)  tid %d  complete" % (window["id"], session_id, window["tid"])]
    for seq, (mark, depth, live, function, rest) in enumerate(window["events"]):
        lines.append("  %d:%d  %s%s %s  %s%s" % (window["id"], seq, "  " * depth, mark, function,
                                                 "from " if mark == ">" else "at ", text_of(pid, live)) + rest)
    return lines


def show(params, chosen=None):
    chosen = chosen or list(sessions)
    if params.get("names") != "helper":
        missing = {}
        for sid in chosen:
            session = sessions[sid]
            if session["window"] and not session["shown"]:
                for event in session["window"]["events"]:
                    if (session["pid"], event[2]) not in names:
                        missing.setdefault(session["pid"], []).append(hex(event[2]))
        if missing:
            return {"names_needed": [{"pid": pid, "addresses": lives} for pid, lives in missing.items()]}
    lines, ended = [], []
    for sid in chosen:
        session = sessions[sid]
        if session["window"] and not session["shown"]:
            lines += window_lines(sid, session)
            session["shown"] = True
        if session["ended"] and not session["end_shown"]:
            lines.append("xref: session %d ended (%s)" % (sid, session["ended"]))
            ended.append({"session": sid, "stop_reason": session["ended"]})
            session["end_shown"] = True
    return {"text": lines, "ended": ended}


def start(params, argv):
    context = params.get("context", {})
    if "--help" in argv:
        return {"text": ["fake %s help" % argv[0]]}
    prepare = {}
    if "--start" in argv and argv[argv.index("--start") + 1].startswith("bp:"):
        prepare["disable_breakpoints"] = [int(argv[argv.index("--start") + 1][3:])]
    if "--stop-at-end" in argv:
        prepare["stop_at_end"] = True
    if prepare and "prepared" not in params:
        return {"prepare": prepare}
    sid = len(sessions) + 1
    sessions[sid] = {"pid": context.get("pid", 0), "context": context, "window": window_for(context),
                     "shown": False, "ended": None, "end_shown": False}
    lines = ["xref: session %d tracing PID %d: 3 probes (fake)" % (sid, context.get("pid", 0))]
    kept = prepare.get("disable_breakpoints", [])
    stop_at_end = params.get("prepared", {}).get("stop_at_end")
    if stop_at_end:
        lines.append("xref: breakpoint %d (temporary, thread %d) at the return address %s (%s)" % (
            stop_at_end["breakpoint"], stop_at_end["thread"], stop_at_end["address"],
            text_of(context.get("pid", 0), int(stop_at_end["address"], 16))))
    return {"text": lines, "session": {"id": sid, "command": argv[0], "pid": context.get("pid", 0), "backend": "fake",
                                       "probe_sites": [], "breakpoints_to_disable": kept}}


def watch(params, argv):
    """Only the front end's part of `watch`: the expressions it evaluated
    (`prepare.evaluate`, `prepared.evaluated`), printed back as received."""
    location = "-l" in argv
    expressions = [word for word in argv[1:] if not word.startswith("-")]
    if "prepared" not in params:
        return {"prepare": {"evaluate": [{"index": i, "expression": e, "location": location, "count": 1,
                                          "for": "address"} for i, e in enumerate(expressions)]}}
    lines = ["fake watch: debug_registers_used %s" % params.get("context", {}).get("debug_registers_used")]
    for item in params["prepared"].get("evaluated", []):
        expression = expressions[item["index"]]
        if item.get("error") is None:
            lines.append("fake watch: [%d] %s = %s %d %s" % (item["index"], expression, item["address"], item["size"],
                                                             item.get("type")))
        else:
            lines.append("fake watch: [%d] %s: error: %s" % (item["index"], expression, item["error"]))
    return {"text": lines}


def run(params):
    argv = params.get("argv") or ["help"]
    command = argv[0]
    if command == "watch":
        return watch(params, argv)
    if command in ("trace", "probe"):
        return start(params, argv)
    if command in ("maps", "doctor", "resolve"):
        return {"text": ["fake help for " + command if "--help" in argv else "bpf_load  ok  fake"], "exit_status": 0}
    if command == "show":
        return show(params)
    if command == "sessions":
        return {"text": ["%d  %s" % (sid, "ended" if s["ended"] else "running") for sid, s in sessions.items()]}
    if command == "stop":
        chosen = [sid for sid, s in sessions.items() if not s["ended"]]
        for sid in chosen:
            sessions[sid]["ended"] = "stopped"
        if not chosen:
            return {"text": ["xref: no running session"]}
        shown = show(params, chosen)
        # Stopped already: the rest prints with `show` once the front end named the addresses.
        return dict(shown, text=[], ended=[], next_argv=["show"]) if "names_needed" in shown else shown
    if command == "break":
        window, seq = (int(part) for part in argv[1].split(":"))
        sid = max(sessions)
        mark, _, live, function, _ = sessions[sid]["window"]["events"][seq]
        pid = sessions[sid]["pid"]
        if params.get("names") != "helper" and (pid, live) not in names:
            return {"names_needed": [{"pid": pid, "addresses": [hex(live)]}]}
        return {"text": [], "set_breakpoint": {"address": hex(live), "session": sid},
                "text_after": ["Breakpoint {number}: %s %s (the call site of %s, event %s)" % (
                    hex(live), text_of(pid, live), function, argv[1])]}
    return {"text": ["fake: trace probe show sessions stop break maps doctor"]}


def handle(request):
    method, params, rid = request.get("method"), request.get("params", {}), request.get("id")
    if method == "hello":
        send({"id": rid, "result": {"protocol": protocol, "tool_version": "0.2.0-fake"}})
    elif method == "names":
        for name in params.get("names", []):
            names[(params.get("pid", 0), int(name["address"], 16))] = name
        send({"id": rid, "result": {}})
    elif method == "run":
        result = run(params)
        if "error" in result:
            send({"id": rid, "error": result["error"]})
        else:
            send({"id": rid, "result": result})
    elif method == "sessions":
        send({"id": rid, "result": {"sessions": [{"session": sid, "pid": s["pid"]} for sid, s in sessions.items()
                                                 if not s["ended"]]}})
    elif method == "test.never_answers":
        pass
    elif method in ("resumed", "session.release"):
        send({"id": rid, "result": {}})
    else:
        send({"id": rid, "error": {"code": "unknown_method", "message": f"unknown method {method}"}})


def watch_targets():
    """A session whose process exits ends with target_exited and a second, open window."""
    while True:
        time.sleep(0.02)
        for sid, session in list(sessions.items()):
            if session["pid"] and not session["ended"] and not os.path.exists(f"/proc/{session['pid']}"):
                session["window"] = dict(session["window"], id=2, events=session["window"]["events"][:2])
                session["shown"] = False
                session["ended"] = "target_exited"


def main():
    threading.Thread(target=watch_targets, daemon=True).start()
    send({"type": "hello", "protocol": protocol, "tool": "xref", "tool_version": "0.2.0-fake", "pid": os.getpid()})
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
