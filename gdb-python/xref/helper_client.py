"""The protocol client (docs/protocol.md, protocol 2): starts `xref serve`
in its own process group, does the handshake, sends requests by id and
waits for their answers, read on background threads. No gdb here."""

import collections
import json
import os
import shutil
import signal
import subprocess
import threading

PROTOCOL_VERSION = 2
RECENT_STDERR_LINES = 20

# gdb's own waitpid(-1) may reap the helper before we can, losing how it
# ended; a shell between the two reports the helper's status on stderr. The
# shell's own messages ("Killed") go to /dev/null, the helper's to stderr.
_STATUS_MARK = "xref-gdb: the helper's status: "
_WRAPPER = 'exec 3>&2 2>/dev/null; ("$@" 2>&3 3>&-); echo "' + _STATUS_MARK + '$?" >&3'


class Reply:
    """A response: `ok` and `result`, or `code`, `message` and `error` (the helper's whole error object)."""

    def __init__(self, ok=False, result=None, code="", message="", error=None):
        self.ok = ok
        self.result = result if result is not None else {}
        self.code = code
        self.message = message
        self.error = error if error is not None else {}


class HelperStartError(Exception):
    pass


def display(argv):
    return " ".join(argv)


def describe_status(status):
    """How the helper ended, from the shell's `$?`."""
    if status is None:
        return "closed its output"
    if status > 128:
        number = status - 128
        try:
            name = " (" + signal.Signals(number).name + ")"
        except ValueError:
            name = ""
        return "was killed by signal %d%s" % (number, name)
    return "exited with status %d" % status


def _spawn_error(argv):
    """Why argv[0] cannot run, or None."""
    program = argv[0]
    if "/" in program:
        if not os.path.exists(program):
            return "No such file or directory"
        if os.path.isdir(program) or not os.access(program, os.X_OK):
            return "Permission denied"
        return None
    return None if shutil.which(program) else "No such file or directory (not on PATH)"


class HelperClient:
    def __init__(self, argv):
        self.argv = list(argv)
        self._changed = threading.Condition()
        self._write_lock = threading.Lock()
        self._next_id = 1
        self._answers = {}  # id -> Reply, None while waited for
        self._recent_stderr = collections.deque(maxlen=RECENT_STDERR_LINES)
        self._hello = None
        self._ended = False
        self._ending = ""
        self._status = None
        self.unparsed_lines = 0
        self.tool_version = "?"
        # Called on the reader thread with each notification the helper sends
        # unasked (protocol 2: a trace's `heartbeat`, whose `text` is to print).
        self.on_event = None
        self._process = subprocess.Popen(
            ["/bin/sh", "-c", _WRAPPER, "sh"] + self.argv,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True, close_fds=True)
        self._stderr_reader = threading.Thread(target=self._read_stderr, name="xref-helper-stderr", daemon=True)
        self._stdout_reader = threading.Thread(target=self._read_stdout, name="xref-helper-stdout", daemon=True)
        self._stderr_reader.start()
        self._stdout_reader.start()

    @classmethod
    def start(cls, argv, client_name, handshake_timeout):
        """A client that finished the handshake; raises HelperStartError with one line."""
        who = "the helper '" + display(argv) + "'"
        why = _spawn_error(argv) if argv else "empty command"
        if why is None:
            try:
                client = cls(argv)
            except OSError as error:
                why = error.strerror or str(error)
        if why is not None:
            raise HelperStartError("cannot start " + who + ": " + why +
                                   "; set it with `xref helper PATH` (or XREF_HELPER)")
        reply = client._handshake(client_name, handshake_timeout)
        if not reply.ok:
            client.close(2.0)
            raise HelperStartError(reply.message)
        return client

    def _handshake(self, client_name, timeout):
        who = "the helper '" + display(self.argv) + "'"
        with self._changed:
            self._changed.wait_for(lambda: self._hello is not None or self._ended, timeout)
            if self._hello is None:
                if self._ended:
                    message = who + " " + self._ending + " before the handshake"
                else:
                    message = who + " did not greet within %d s" % timeout
                if self._recent_stderr:
                    message += ": " + self._recent_stderr[-1]
                return Reply(code="helper_exited" if self._ended else "timeout", message=message)
            protocol = self._hello.get("protocol")
            if protocol != PROTOCOL_VERSION:
                return Reply(code="version_mismatch",
                             message=who + " speaks protocol " + ("?" if protocol is None else json.dumps(protocol)) +
                             ", this front end speaks protocol %d: use the xref binary built with it" % PROTOCOL_VERSION)
            if isinstance(self._hello.get("tool_version"), str):
                self.tool_version = self._hello["tool_version"]
        # names: the front end names addresses with gdb's symbols when the helper asks.
        reply = self.request("hello", {"protocol": PROTOCOL_VERSION, "client": client_name, "names": True}, timeout)
        if not reply.ok:
            reply.message = who + " refused the handshake: " + reply.message
        return reply

    @property
    def pid(self):
        """The helper's own pid (from its hello), else the wrapper's."""
        hello = self._hello or {}
        return hello.get("pid") if isinstance(hello.get("pid"), int) else self._process.pid

    def request(self, method, params, timeout):
        """Sends one request and waits for its answer; a helper that ended fails it at once."""
        with self._changed:
            if self._ended:
                return Reply(code="helper_exited", message="the helper " + self._ending)
            request_id = self._next_id
            self._next_id += 1
            self._answers[request_id] = None
        line = json.dumps({"id": request_id, "method": method, "params": params}) + "\n"
        if not self._write(line.encode()):
            with self._changed:
                self._answers.pop(request_id, None)
                # The reader sees the end of the output soon; say how it ended if it can.
                self._changed.wait_for(lambda: self._ended, 1.0)
                return Reply(code="helper_exited",
                             message="the helper " + (self._ending if self._ended else "closed its input"))
        with self._changed:
            self._changed.wait_for(lambda: self._answers.get(request_id) is not None or self._ended, timeout)
            reply = self._answers.pop(request_id, None)
            if reply is not None:
                return reply
            if self._ended:
                return Reply(code="helper_exited", message="the helper " + self._ending + " before answering " + method)
            return Reply(code="timeout", message="the helper did not answer %s within %d s" % (method, timeout))

    def notify(self, method, params):
        """Sends a request whose answer nobody waits for."""
        with self._changed:
            if self._ended:
                return
            request_id = self._next_id
            self._next_id += 1
        self._write((json.dumps({"id": request_id, "method": method, "params": params}) + "\n").encode())

    def _write(self, data):
        with self._write_lock:
            try:
                self._process.stdin.write(data)
                self._process.stdin.flush()
                return True
            except (OSError, ValueError):
                return False

    def _read_stdout(self):
        for raw in self._process.stdout:
            self._handle_line(raw)
        # The helper closed its output: its last words and how it ended.
        self._stderr_reader.join(2.0)
        try:
            self._process.wait(1.0)
        except subprocess.TimeoutExpired:
            pass
        with self._changed:
            self._ended = True
            self._ending = describe_status(self._status)
            self._changed.notify_all()

    def _read_stderr(self):
        for raw in self._process.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            with self._changed:
                if line.startswith(_STATUS_MARK):
                    try:
                        self._status = int(line[len(_STATUS_MARK):])
                    except ValueError:
                        pass
                    continue
                self._recent_stderr.append(line)

    def _handle_line(self, raw):
        if not raw.strip():
            return
        try:
            message = json.loads(raw)
        except ValueError:
            message = None
        if isinstance(message, dict) and message.get("type") == "event":
            if self.on_event is not None:
                self.on_event(message)
            return
        with self._changed:
            if not isinstance(message, dict):
                self.unparsed_lines += 1
                return
            if message.get("type") == "hello" and self._hello is None:
                self._hello = message
            elif isinstance(message.get("id"), int) and not isinstance(message.get("id"), bool):
                if message["id"] not in self._answers:
                    return  # answered after its timeout
                if "result" in message:
                    reply = Reply(ok=True, result=message["result"] if message["result"] is not None else {})
                else:
                    error = message.get("error") if isinstance(message.get("error"), dict) else {}
                    reply = Reply(code=error.get("code", "error"),
                                  message=error.get("message", "the helper answered with an error"),
                                  error=error)
                self._answers[message["id"]] = reply
            else:
                self.unparsed_lines += 1
                return
            self._changed.notify_all()

    def alive(self):
        with self._changed:
            return not self._ended

    def ending(self):
        with self._changed:
            return self._ending if self._ended else ""

    def recent_stderr(self):
        with self._changed:
            return list(self._recent_stderr)

    def close(self, grace):
        """Closes the helper's stdin (it stops every session, detaches and
        exits) and waits up to `grace` seconds for its output to end."""
        with self._write_lock:
            try:
                self._process.stdin.close()
            except OSError:
                pass
        with self._changed:
            self._changed.wait_for(lambda: self._ended, grace)
