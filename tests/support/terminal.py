"""A program under a pseudo-terminal, driven as a person types at it: keys in
(Enter is "\\r", Ctrl-C "\\x03", Tab "\\t"), the text it printed out with the
terminal's escape sequences removed. For what batch mode cannot show: Ctrl-C
at a running process, Tab completion, output printed while the prompt waits."""

import fcntl
import os
import pty
import re
import select
import signal
import struct
import termios
import time

# CSI sequences (cursor moves, erase, colours), charset selection, keypad
# modes, carriage returns and bells: what a line editor adds around text.
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]|\r|\x07")


class Terminal:
    def __init__(self, argv, env=None, columns=200, rows=50):
        pid, fd = pty.fork()
        if pid == 0:
            try:
                os.execvpe(argv[0], argv, env if env is not None else os.environ)
            finally:
                os._exit(127)
        self.pid = pid
        self.fd = fd
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        self._raw = bytearray()
        self._text = ""
        self._decoded = 0  # bytes of _raw already in _text
        self.seen = 0      # where the next expect() starts looking in text()
        self.ended = False

    def text(self):
        """Everything printed so far, without escape sequences."""
        if self._decoded < len(self._raw):
            # Decode whole lines only, so that no sequence is cut in two.
            end = self._raw.rfind(b"\n") + 1 if not self.ended else len(self._raw)
            if end > self._decoded:
                self._text += _ESCAPES.sub("", self._raw[self._decoded:end].decode("utf-8", "replace"))
                self._decoded = end
        return self._text

    def pending(self):
        """The text after the last complete line (a prompt, a line being typed)."""
        return _ESCAPES.sub("", self._raw[self._decoded:].decode("utf-8", "replace"))

    def line(self):
        """The line being typed as the terminal shows it: a line editor redraws
        it after a Tab with carriage returns, column moves (ESC [ n G) and
        erases (ESC [ K), which pending() only strips."""
        raw = self._raw[self._raw.rfind(b"\n") + 1:].decode("utf-8", "replace")
        cells, column = [], 0
        for token in re.findall(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]|[\s\S]", raw):
            if token == "\r":
                column = 0
            elif token == "\b":
                column = max(0, column - 1)
            elif token.startswith("\x1b[") and token.endswith("G"):
                column = max(0, int(token[2:-1] or "1") - 1)
            elif token.startswith("\x1b[") and token.endswith("K"):
                del cells[column:]
            elif token.startswith("\x1b") or token == "\x07":
                continue
            else:
                cells[len(cells):column + 1] = [" "] * (column + 1 - len(cells))
                cells[column] = token
                column += 1
        return "".join(cells)

    def expect_line(self, pattern, bound=60):
        """Like expect_pending, on the line as shown (line())."""
        return self._expect_in(self.line, "the line shown", pattern, bound)

    def _expect_in(self, text, what, pattern, bound):
        regex = re.compile(pattern)
        deadline = time.monotonic() + bound
        while not regex.search(text()):
            self.read(0.2)
            if self.ended or time.monotonic() > deadline:
                raise AssertionError("%s never matched %r: %r" % (what, pattern, text()))
        return regex.search(text())

    def pause(self, seconds):
        """Reads what the program prints for `seconds`, all of them (read()
        returns at the first output)."""
        deadline = time.monotonic() + seconds
        while not self.ended and time.monotonic() < deadline:
            self.read(max(0.0, deadline - time.monotonic()))

    def read(self, seconds):
        """Reads what the program prints during at most `seconds`; False once it has ended."""
        if self.ended:
            return False
        ready, _, _ = select.select([self.fd], [], [], seconds)
        if not ready:
            return True
        try:
            data = os.read(self.fd, 65536)
        except OSError:
            data = b""
        if not data:
            self.ended = True
            return False
        self._raw += data
        return True

    def send(self, keys):
        os.write(self.fd, keys.encode())

    def expect(self, pattern, bound=180):
        """Reads until `pattern` (a regular expression) appears in a complete
        line after what earlier expects consumed; returns the match. `bound`
        (seconds) only keeps a hung program from hanging the test."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + bound
        while True:
            match = regex.search(self.text(), self.seen)
            if match:
                self.seen = match.end()
                return match
            if self.ended:
                raise AssertionError("the program ended without printing %r; it printed:\n%s" %
                                     (pattern, self.text()[-6000:]))
            if time.monotonic() > deadline:
                raise AssertionError("not printed within %d s: %r; the program printed:\n%s" %
                                     (bound, pattern, self.text()[-6000:] + self.pending()))
            self.read(0.2)

    def expect_pending(self, pattern, bound=60):
        """Like expect, for text on the line still being written (after a Tab)."""
        return self._expect_in(self.pending, "the line being typed", pattern, bound)

    def wait_for(self, predicate, what, bound=180):
        """Keeps reading the terminal until `predicate()` holds."""
        deadline = time.monotonic() + bound
        while not predicate():
            self.read(0.2)
            if time.monotonic() > deadline:
                raise AssertionError("never happened within %d s: %s" % (bound, what))

    def finish(self, bound=60):
        """Reads to the end of the program's output (after it was told to quit), then reaps it."""
        deadline = time.monotonic() + bound
        while self.read(0.2) and time.monotonic() < deadline:
            pass
        if not self.ended:
            os.kill(self.pid, signal.SIGKILL)
        self.ended = True
        _, status = os.waitpid(self.pid, 0)
        os.close(self.fd)
        self.text()
        return os.waitstatus_to_exitcode(status)

    def type_command(self, prompt, command, answer):
        """Types `command` at the prompt (a regular expression) and waits for its answer."""
        self.expect_pending(prompt)
        self.send(command + "\r")
        return self.expect(answer)

    def end_with_target(self, record):
        """On every way out of a debugger test: the debugger is gone, the
        target it left behind too (`self.target`, a pid, checked to be the
        test's own by `record` in its command line, never a process that took
        its pid), and the record file."""
        self.kill()
        try:
            with open("/proc/%d/cmdline" % self.target, "rb") as cmdline:
                if record.encode() in cmdline.read():
                    os.kill(self.target, signal.SIGKILL)
        except (AttributeError, TypeError, OSError):
            pass
        if os.path.exists(record):
            os.unlink(record)

    def kill(self):
        if not self.ended:
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass
            self.ended = True
