"""Tab completion in interactive lldb-19, as a person types it under a
pseudo-terminal: option names of the helper's commands (the helper's own
definitions, compared with `xref COMMAND --help`) and function names of the
running target (compared with nm's), through the plugin's completion shim
(lldb-plugin/xref_complete.py); then the completed commands run.
`python3 completion_test.py probe|trace|watch`."""

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
from interrupt_test import HELPER, check, lldb_at_main  # noqa: E402  (the same lldb under a terminal)
from facility import run_named  # noqa: E402  (on the path interrupt_test set)

TARGET = os.environ.get("XREF_SAMPLE_SERVICE", "")
PROMPT = r"\(lldb\) +"


def options_of(command, prefix):
    """The options of the helper's `command` that start with `prefix`, from its --help."""
    text = subprocess.run([HELPER, command, "--help"], capture_output=True, text=True).stdout
    return sorted(set(re.findall(r"(?<![\w-])(%s[a-z-]*)" % re.escape(prefix), text)))


def functions_of(prefix):
    """The target's functions that start with `prefix`, as nm lists them."""
    text = subprocess.run(["nm", TARGET], capture_output=True, text=True, check=True).stdout
    return sorted({line.split()[2] for line in text.splitlines()
                   if len(line.split()) == 3 and line.split()[1] in "tT" and line.split()[2].startswith(prefix)})


def start_lldb():
    terminal = lldb_at_main([TARGET, "--threads", "1", "--requests", "0", "--interval-us", "20000"])
    try:
        type_command(terminal, "breakpoint delete 1", r"1 breakpoints deleted")
    except BaseException:
        terminal.kill()
        raise
    return terminal


def end(terminal):
    terminal.kill()
    target = getattr(terminal, "target", None)
    try:
        with open("/proc/%d/cmdline" % target, "rb") as cmdline:  # this test's target, not a reused pid
            if TARGET.encode() in cmdline.read():
                os.kill(target, 9)
    except (TypeError, OSError):
        pass


def type_command(terminal, command, answer):
    terminal.expect_line("^" + PROMPT + "$")
    terminal.send(command + "\r")
    return terminal.expect(answer)


def tab(terminal, typed, completed):
    """Types `typed` and Tab at the prompt: the line must read `completed`."""
    terminal.expect_line("^" + PROMPT + "$")
    terminal.send(typed + "\t")
    terminal.expect_line("^" + PROMPT + re.escape(completed) + "$")


def clear_line(terminal):
    terminal.send("\x15")  # Ctrl-U: the line is empty again
    terminal.expect_line("^" + PROMPT + "$")


def quit_lldb(terminal):
    """Kills the target from lldb, then quits it."""
    terminal.expect_line("^" + PROMPT + "$")
    terminal.send("process kill\r")
    terminal.expect(r"Process \d+ exited")
    terminal.expect_line("^" + PROMPT + "$")
    terminal.send("quit\r")
    terminal.finish()


def unique(candidates, what):
    check(len(candidates) == 1, "%s: expected one candidate, found %s" % (what, candidates))
    return candidates[0]


def listed(terminal, typed):
    """Types `typed` and Tab where several names complete it: the names LLDB lists."""
    terminal.expect_line("^" + PROMPT + "$")
    terminal.send(typed + "\t")
    terminal.expect(r"Available completions:\n")
    # The list is whole once the line is drawn again below it.
    terminal.expect_line("^" + PROMPT + re.escape(typed) + "$")
    return terminal.expect(r"((?:\t[^\n]*\n)+)").group(1).split()


def probe_case():
    terminal = start_lldb()
    try:
        # An option name: --fe is only --fetch.
        fetch = unique(options_of("probe", "--fe"), "probe --fe")
        tab(terminal, "xref probe --fe", "xref probe %s " % fetch)
        clear_line(terminal)
        # A function name from the target's symbols (price_ is only price_order),
        # then an option after it; the completed command runs.
        price = unique(functions_of("price_"), "price_")
        tab(terminal, "xref probe price_", "xref probe %s " % price)
        terminal.send("--fe\t")
        terminal.expect_line("^" + PROMPT + re.escape("xref probe %s %s " % (price, fetch)) + "$")
        terminal.send("n=%di\r")
        terminal.expect(r"xref: session 1 probing PID %d: 1 address" % terminal.target)
        # Several candidates: LLDB lists them, from every module it has symbols
        # of (libc's too); the target's are all there.
        routes = functions_of("route_")
        check(len(routes) == 2, "nm lists route_even and route_odd: %s" % routes)
        names = listed(terminal, "xref probe route_")
        check(set(routes) <= set(names), "route_<TAB> listed %s, nm has %s" % (names, routes), terminal.text())
        terminal.send("o\t")
        terminal.expect_line("^" + PROMPT + re.escape("xref probe route_odd ") + "$")
        terminal.send("\r")
        terminal.expect(r"xref: session 2 probing PID %d: 1 address" % terminal.target)
        handles = functions_of("handle_")
        names = listed(terminal, "xref probe handle_")
        check(handles and set(handles) <= set(names), "handle_<TAB> listed %s, nm has %s" % (names, handles),
              terminal.text())
        clear_line(terminal)
        sessions = type_command(terminal, "xref sessions", r"\n2 +running[^\n]*\n").group(0)
        check("probe route_odd" in sessions, "xref sessions shows the command as typed", terminal.text())
        type_command(terminal, "xref stop --all", r"session 2 ended")
        quit_lldb(terminal)
    finally:
        end(terminal)


def trace_case():
    terminal = start_lldb()
    try:
        functions = unique(options_of("trace", "--fu"), "trace --fu")
        tab(terminal, "xref trace --fu", "xref trace %s " % functions)
        # An option's value that is code: the target's functions.
        price = unique(functions_of("price_"), "price_")
        terminal.send("price_\t")
        terminal.expect_line("^" + PROMPT + re.escape("xref trace %s %s " % (functions, price)) + "$")
        clear_line(terminal)
        # --start's value is code too.
        validate = unique(functions_of("valida"), "valida")
        tab(terminal, "xref trace --start valida", "xref trace --start %s " % validate)
        clear_line(terminal)
        # The debugger's own words complete too (show --all).
        tab(terminal, "xref show --a", "xref show --all ")
        clear_line(terminal)
        quit_lldb(terminal)
    finally:
        end(terminal)


def watch_case():
    """watch's options complete from the helper's definitions (-s, -l and
    --stop-when included: LLDB 19 parses what the shim declares), and the
    completed command runs with the expression LLDB evaluates."""
    terminal = start_lldb()
    try:
        for typed in ("--fol", "--stop-w", "--chan"):
            option = unique(options_of("watch", typed), "watch " + typed)
            tab(terminal, "xref watch " + typed, "xref watch %s " % option)
            clear_line(terminal)
        type_command(terminal, "help xref watch", r"Command Options Usage:")
        terminal.expect_pending(PROMPT)
        help_text = terminal.text()[terminal.text().rfind("help xref watch"):]
        for short, long in (("-s", "--size"), ("-l", "--location")):
            check(re.search(r"%s <[^>]+> \( %s <[^>]+> \)|%s \( %s \)" % (short, long, short, long), help_text)
                  is not None, "help xref watch does not declare %s (%s)" % (short, long), terminal.text())
        changed = unique(options_of("watch", "--chan"), "watch --chan")
        terminal.send("xref watch -l routes -s 8 --chan\t")
        terminal.expect_line("^" + PROMPT + re.escape("xref watch -l routes -s 8 %s " % changed) + "$")
        terminal.send("--duration-ms 0\r")
        terminal.expect(r"xref: session 1 ")
        type_command(terminal, "xref stop --all", r"session 1 ended")
        quit_lldb(terminal)
    finally:
        end(terminal)


def profile_case():
    """profile's options complete from the helper's definitions; LLDB also
    takes the options of its report, annotate and diff (declared with it),
    so `xref profile report --by line` parses."""
    terminal = start_lldb()
    try:
        tab(terminal, "xref prof", "xref profile ")
        clear_line(terminal)
        # --until-stop is the debugger's own (the CLI's `xref profile --help` has no such option).
        for typed, option in (("--unt", "--until-stop"), ("--cal", "--callers"), ("--fr", "--freq")):
            tab(terminal, "xref profile " + typed, "xref profile %s " % option)
            clear_line(terminal)
        type_command(terminal, "help xref profile", r"Command Options Usage:")
        terminal.expect_pending(PROMPT)
        help_text = terminal.text()[terminal.text().rfind("help xref profile"):]
        for option in ("--until-stop", "--duration", "--by", "--top", "--min-samples", "--min-delta"):
            check(option in help_text, "help xref profile does not declare %s" % option, terminal.text())
        type_command(terminal, "xref profile report --by line",
                     r"no capture of this helper yet for `xref profile report` without a file")
        quit_lldb(terminal)
    finally:
        end(terminal)


if __name__ == "__main__":
    sys.exit(run_named({"probe": probe_case, "trace": trace_case, "watch": watch_case, "profile": profile_case},
                       sys.argv))
