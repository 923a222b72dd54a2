"""xref stop [N|--all]: ends sessions; the helper detaches their probes, the
breakpoints they disabled are enabled again, their last windows print."""

from .commands import Subcommand, wants_help
from .show import parse_number
from .state import SESSION_TIMEOUT, XrefError
from .session_start import reply_failure


def stop(words, state, lines):
    running = [session.id for session in state.running_sessions()]
    if words == ["--all"]:
        chosen = running
    elif len(words) == 1:
        session_id = parse_number(words[0], "session")
        session = state.find_session(session_id)
        if session is None:
            raise XrefError("xref: no session %s; `xref sessions` lists them" % words[0])
        if session.ended:
            raise XrefError("xref: session %s has already ended (%s)" % (words[0], session.stop_reason))
        chosen = [session_id]
    elif not words:
        if len(running) > 1:
            raise XrefError("xref: several sessions run: name one (`xref sessions`) or use --all")
        chosen = running
    else:
        raise XrefError("xref: usage: xref stop [N | --all]")
    if not chosen:
        lines.append("xref: no running session")
        return
    helper = state.running_helper()
    for session_id in chosen:
        if helper is None:
            break  # absorb() below reports the helper's death and ends its sessions
        reply = helper.request("session.stop", {"session": session_id}, SESSION_TIMEOUT)
        if not reply.ok and reply.code != "unknown_session":
            raise reply_failure(reply)
        if reply.ok and "summary" in reply.result:
            state.find_session(session_id).summary = reply.result["summary"]
    state.absorb(lines)  # the session_ended events came before the responses
    for session_id in chosen:
        session = state.find_session(session_id)
        state.end_session(session, "stopped")
        state.apply_restores(lines)
        state.show_session_windows(session, False, lines)


class StopCommand(Subcommand):
    """Stop sessions: detach their probes, re-enable the breakpoints they disabled, print their last windows.

xref stop [N | --all]
  N       the session to stop (the only running one when omitted)
  --all   every running session"""

    name = "stop"
    FLAGS = ("--all", "--help")

    def run(self, words, state, lines):
        if wants_help(words):
            lines.append(self.__doc__)
            return
        stop(words, state, lines)
