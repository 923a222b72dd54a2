"""xref maps | resolve | doctor WORDS...: the helper's one-shot commands with
the process's pid filled in, printed readably."""

from . import debugger_context
from .commands import Subcommand, wants_help
from .document_render import document_error, render_document
from .state import COMMAND_TIMEOUT, XrefError
from .session_start import reply_failure


def run_one_shot(command, words, state, lines):
    context = {}
    if command != "doctor":
        pid = debugger_context.process_id()
        if pid is not None:
            context["pid"] = pid
        elif not wants_help(words) and "--pid" not in words:
            raise XrefError("xref: no live process: `run` or `attach` first (or give --pid)")
    helper = state.helper(lines)
    reply = helper.request("command", {"argv": [command] + list(words), "context": context}, COMMAND_TIMEOUT)
    if not reply.ok:
        raise reply_failure(reply)
    if "help" in reply.result:
        lines.append(str(reply.result["help"]).rstrip("\n"))
        return
    document = reply.result.get("document") or {}
    lines.extend(render_document(document))
    error = document_error(document)
    if error:
        raise XrefError("xref: " + error)


class MapsCommand(Subcommand):
    """Mappings and modules of the process, with the load bias of each (xref maps).

xref maps [--pid P]          (`xref maps --help` for every option)"""

    name = "maps"
    FLAGS = ("--help", "--pid", "--bin", "--json")

    def run(self, words, state, lines):
        run_one_shot("maps", words, state, lines)


class ResolveCommand(Subcommand):
    """Live addresses of the process -> mapping, file offset, static VA, function, instruction boundary.

xref resolve LIVE_VA... [--pid P]          (`xref resolve --help` for every option)"""

    name = "resolve"
    FLAGS = ("--help", "--pid", "--bin", "--json")

    def run(self, words, state, lines):
        run_one_shot("resolve", words, state, lines)


class DoctorCommand(Subcommand):
    """What this host supports for xref, found by trying: BPF, uprobe_multi, perf uprobes, tracefs, ...

Run by the helper with its privileges.
xref doctor"""

    name = "doctor"
    FLAGS = ("--help", "--json")

    def run(self, words, state, lines):
        run_one_shot("doctor", words, state, lines)
