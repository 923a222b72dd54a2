#!/usr/bin/env python3
"""What one tracer run of bench/run_drain.sh reported, read from its output
file after the run (never while it is timed).

  drain_count.py FORMAT FILE [--window-events N]

FORMAT is text, json, jsonl (`xref trace` output), serve (the lines
bench/serve_client.py wrote: window events, then session_ended) or bpftrace
(its printf lines). Prints one JSON object:

  events         what the tracer reports: xref's summary.events (text: the
                 summary line), serve: the events of every window it sent
                 (window events and the session_ended windows), bpftrace:
                 its printed hit lines
  output_events  the events actually in the output (xref: counted in the
                 windows written; the cross check of `events`)
  summary_events xref's summary.events (serve: session_ended's summary)
  windows, complete, incomplete, windows_opened, windows_without_records,
  not_shown      xref's summary (text: windows and complete only)
  lost           xref's summary.lost; bpftrace: the sum of its "Lost N
                 events" lines
  stop           xref's stop reason; bpftrace: null
  output_windows the windows in the output (bpftrace: null)
  starts_refused xref's summary (null when the binary has no such count)

With --window-events N (every window of the workload has N events when
nothing is lost: 4 for bench/drain_target), the windows in the output are
checked one by one (json, jsonl, serve):

  end_records_lost_shown  windows in the output whose end record was lost
                 (end_record_lost): summary.lost counts ring-buffer records,
                 the 4 events of a window and its hidden end record
  lossy_windows  windows in the output that lost events: fewer than N
                 events, a gap in their sequence numbers, lost_events not 0
                 (or unknown), or their end record lost
  unmarked_windows  of those, the windows not marked: possible_loss false or
                 status complete (must be 0)
  marked_no_loss windows marked possible_loss with N events in sequence,
                 lost_events 0 and their end record in (a false alarm)
  lost_shown     the sum of the known lost_events of the windows in the
                 output; lost_unknown_windows: windows whose lost_events is
                 null
  statuses       {status: windows} of the windows in the output (text too)

In text output, not_shown is the "not shown: N windows" line's N (0 when
there is none), and incomplete is windows - complete from the summary line
(what JSON's incomplete_windows counts: every window not complete).

Fields a format does not have are null. Exits 1, saying why, when the file
is not what FORMAT says (no summary, a line that does not parse).
"""
import json
import re
import sys

# The text's summary line (helper/render/session_text.cpp, trace_summary_lines):
# "2 windows (2 complete), 36 events, 0 lost; stopped after 28 ms: --max-windows reached".
TEXT_SUMMARY = re.compile(
    r"^(\d+) windows? \((\d+) complete\), (\d+) events?, (\d+) lost; stopped after (\d+) ms: (.+)$")
# Its stop reasons, spelt for people, back to the JSON's stop_reason.
TEXT_STOP_REASONS = {"--max-windows reached": "max_windows", "--max-events reached": "max_events",
                     "--duration-ms reached": "duration", "the process exited": "target_exited",
                     "the process ran another program (exec)": "target_changed",
                     "the output's reader went away": "output_closed"}
# An event line of the text output: its W:SEQ reference first.
TEXT_EVENT = re.compile(r"^  \d+:\d+\s")
BPFTRACE_HIT = re.compile(r"^\d+ [<>] \S+ \d+ 0x[0-9a-f]+$")
BPFTRACE_LOST = re.compile(r"^Lost (\d+) events")
TEXT_NOT_SHOWN = re.compile(r"^not shown: (\d+) windows?")
TEXT_NOT_TRACED = re.compile(r"^not traced: (\d+) start calls?")
# A window line's status words: "complete", "incomplete (the process exited)", ...
TEXT_STATUS = re.compile(r"^window \d+(?: \(session \d+\))?  thread \d+  (.+?)  ran ")


def fail(message):
    sys.exit("drain_count: %s" % message)


def from_summary(result, summary):
    result["summary_events"] = summary["events"]
    result["events"] = summary["events"]
    result["windows"] = summary["windows"]
    result["complete"] = summary["complete_windows"]
    result["incomplete"] = summary["incomplete_windows"]
    result["windows_opened"] = summary.get("windows_opened")
    result["windows_without_records"] = summary.get("windows_without_records")
    result["not_shown"] = sum(summary.get("windows_not_shown", {}).values())
    result["lost"] = summary["lost"]
    result["stop"] = summary["stop_reason"]
    result["starts_refused"] = summary.get("starts_refused")


class WindowCheck:
    """The windows of a json, jsonl or serve output, one by one (--window-events)."""

    def __init__(self, per_window):
        self.per_window = per_window
        self.counts = dict(end_records_lost_shown=0, lossy_windows=0, unmarked_windows=0, marked_no_loss=0,
                           lost_shown=0, lost_unknown_windows=0)
        self.statuses = {}

    def add(self, window):
        self.statuses[window["status"]] = self.statuses.get(window["status"], 0) + 1
        if self.per_window is None:
            return
        events = window["events"]
        seqs = [event["seq"] for event in events]
        in_sequence = seqs == list(range(len(seqs)))
        end_lost = bool(window.get("end_record_lost"))
        lost = window.get("lost_events")
        if lost is None:
            self.counts["lost_unknown_windows"] += 1
        else:
            self.counts["lost_shown"] += lost
        self.counts["end_records_lost_shown"] += end_lost
        lossy = len(events) < self.per_window or not in_sequence or lost != 0 or end_lost
        marked = bool(window.get("possible_loss")) and window["status"] != "complete"
        if lossy:
            self.counts["lossy_windows"] += 1
            self.counts["unmarked_windows"] += not marked
        elif window.get("possible_loss"):
            self.counts["marked_no_loss"] += 1

    def put(self, result):
        result["statuses"] = self.statuses
        if self.per_window is not None:
            result.update(self.counts)


def count(form, path, per_window=None):
    result = dict.fromkeys(["events", "output_events", "summary_events", "windows", "complete", "incomplete",
                            "windows_opened", "windows_without_records", "not_shown", "lost", "stop",
                            "output_windows", "starts_refused", "statuses", "end_records_lost_shown",
                            "lossy_windows", "unmarked_windows", "marked_no_loss", "lost_shown",
                            "lost_unknown_windows"])
    check = WindowCheck(per_window)
    if form == "text":
        events = windows = not_shown = 0
        refused = None
        statuses = {}
        summary = None
        with open(path, errors="replace") as f:
            for line in f:
                if TEXT_EVENT.match(line):
                    events += 1
                elif line.startswith("window "):
                    windows += 1
                    status = TEXT_STATUS.search(line)
                    if status:
                        statuses[status[1]] = statuses.get(status[1], 0) + 1
                elif TEXT_SUMMARY.match(line):
                    summary = TEXT_SUMMARY.match(line)
                elif (match := TEXT_NOT_SHOWN.match(line)):
                    not_shown += int(match[1])
                elif (match := TEXT_NOT_TRACED.match(line)):
                    refused = int(match[1])
        if summary is None:
            fail("%s: no summary line" % path)
        result.update(windows=int(summary[1]), complete=int(summary[2]), events=int(summary[3]),
                      summary_events=int(summary[3]), lost=int(summary[4]), stop=TEXT_STOP_REASONS.get(summary[6], summary[6]),
                      incomplete=int(summary[1]) - int(summary[2]), not_shown=not_shown, starts_refused=refused,
                      output_events=events, output_windows=windows, statuses=statuses)
    elif form == "json":
        with open(path) as f:
            document = json.load(f)
        if document.get("error") is not None:
            fail("%s: error %s" % (path, json.dumps(document["error"])))
        from_summary(result, document["summary"])
        result["output_windows"] = len(document["windows"])
        result["output_events"] = sum(len(window["events"]) for window in document["windows"])
        for window in document["windows"]:
            check.add(window)
        check.put(result)
    elif form in ("jsonl", "serve"):
        events = windows = 0
        summary = None
        with open(path) as f:
            for number, line in enumerate(f, 1):
                try:
                    message = json.loads(line)
                except ValueError:
                    fail("%s:%d: not JSON" % (path, number))
                kind = message.get("type") if form == "jsonl" else message.get("event")
                if kind == "window":
                    windows += 1
                    events += len(message["window"]["events"])
                    check.add(message["window"])
                elif kind == "summary":
                    summary = message["summary"]
                elif kind == "session_ended":
                    summary = message["summary"]
                    for window in message.get("windows") or []:
                        windows += 1
                        events += len(window["events"])
                        check.add(window)
        if summary is None:
            fail("%s: no summary" % path)
        from_summary(result, summary)
        result.update(output_events=events, output_windows=windows)
        check.put(result)
        if form == "serve":
            result["events"] = events  # what the protocol delivered
    elif form == "bpftrace":
        hits = lost = 0
        with open(path, errors="replace") as f:
            for line in f:
                if BPFTRACE_HIT.match(line):
                    hits += 1
                elif (match := BPFTRACE_LOST.match(line)):
                    lost += int(match[1])
        result.update(events=hits, output_events=hits, lost=lost)
    else:
        fail("unknown format %s" % form)
    return result


def main(argv):
    if len(argv) == 5 and argv[3] == "--window-events" and argv[4].isdigit():
        per_window = int(argv[4])
    elif len(argv) == 3:
        per_window = None
    else:
        sys.exit(__doc__)
    print(json.dumps(count(argv[1], argv[2], per_window)))


if __name__ == "__main__":
    main(sys.argv)
