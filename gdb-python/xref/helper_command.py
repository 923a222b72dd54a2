"""xref helper [COMMAND...]: which command starts the helper (`xref serve`),
e.g. `xref helper sudo -n /usr/local/bin/xref serve` when gdb does not run
as root."""

from .commands import Subcommand
from .helper_client import display


class HelperCommand(Subcommand):
    """Show or set the command that starts the xref helper.

Default: build/helper/xref relative to gdb-python/ (the build tree), then `xref` on PATH,
with `serve`; or the XREF_HELPER environment variable.
xref helper                      show the command and whether the helper runs
xref helper COMMAND [ARG...]     start the helper with this command from now on,
                                 e.g. xref helper sudo -n /usr/local/bin/xref serve
xref helper --default            back to the default"""

    name = "helper"
    FLAGS = ("--default", "--help")

    def run(self, words, state, lines):
        if words in (["--help"], ["-h"]):
            lines.append(self.__doc__)
            return
        if not words:
            argv, source = state.helper_command()
            lines.append("xref: helper command: " + display(argv) + source)
            helper = state.running_helper()
            if helper is not None:
                lines.append("xref: the helper runs as pid %d (xref %s)" % (helper.pid, helper.tool_version))
            else:
                lines.append("xref: the helper is not running; the next xref command that needs it starts it")
            return
        state.set_helper_command(None if words == ["--default"] else list(words))
        lines.append("xref: helper command: %s (starts at the next xref command that needs it)"
                     % display(state.helper_command()[0]))
