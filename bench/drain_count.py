#!/usr/bin/env python3
"""What one tracer run of bench/run_drain.sh reported, read from its output
file after the run (never while it is timed).

  drain_count.py FORMAT FILE

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

Fields a format does not have are null. Exits 1, saying why, when the file
is not what FORMAT says (no summary, a line that does not parse).
"""
import json
import re
import sys

TEXT_SUMMARY = re.compile(
    r"^summary: windows=(\d+) complete=(\d+) events=(\d+) lost=(\d+) stop=(\S+) elapsed_ms=(\d+)")
# An event line of the text output: depth, then > (entry) or < (return).
TEXT_EVENT = re.compile(r"^\s*\d+\s+[<>]\s")
BPFTRACE_HIT = re.compile(r"^\d+ [<>] \S+ \d+ 0x[0-9a-f]+$")
BPFTRACE_LOST = re.compile(r"^Lost (\d+) events")


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


def count(form, path):
    result = dict.fromkeys(["events", "output_events", "summary_events", "windows", "complete", "incomplete",
                            "windows_opened", "windows_without_records", "not_shown", "lost", "stop",
                            "output_windows"])
    if form == "text":
        events = windows = 0
        summary = None
        with open(path, errors="replace") as f:
            for line in f:
                if TEXT_EVENT.match(line):
                    events += 1
                elif line.startswith("window "):
                    windows += 1
                elif line.startswith("summary: "):
                    summary = TEXT_SUMMARY.match(line)
        if summary is None:
            fail("%s: no summary line" % path)
        result.update(windows=int(summary[1]), complete=int(summary[2]), events=int(summary[3]),
                      summary_events=int(summary[3]), lost=int(summary[4]), stop=summary[5],
                      output_events=events, output_windows=windows)
    elif form == "json":
        with open(path) as f:
            document = json.load(f)
        if document.get("error") is not None:
            fail("%s: error %s" % (path, json.dumps(document["error"])))
        from_summary(result, document["summary"])
        result["output_windows"] = len(document["windows"])
        result["output_events"] = sum(len(window["events"]) for window in document["windows"])
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
                elif kind == "summary":
                    summary = message["summary"]
                elif kind == "session_ended":
                    summary = message["summary"]
                    for window in message.get("windows") or []:
                        windows += 1
                        events += len(window["events"])
        if summary is None:
            fail("%s: no summary" % path)
        from_summary(result, summary)
        result.update(output_events=events, output_windows=windows)
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
    if len(argv) != 3:
        sys.exit(__doc__)
    print(json.dumps(count(argv[1], argv[2])))


if __name__ == "__main__":
    main(sys.argv)
