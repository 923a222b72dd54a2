#!/usr/bin/env python3
"""Draws the Chrome trace-event JSON that `xref trace export` writes as an
SVG picture of a timeline: one track per thread, nested slices per call, the
arguments of one call in a details panel, the way Perfetto UI and
chrome://tracing lay it out. Used for the picture in docs/trace.md (those
viewers need a network or a desktop session this build machine lacks); it
reads only the exported file.

usage: timeline_snapshot.py CHROME_JSON OUT.svg [--window N] [--details NAME]
"""
import argparse
import hashlib
import html
import json
import sys

WIDTH = 1280
LABEL_WIDTH = 170
ROW = 22
TRACK_GAP = 14
TOP = 64


def color_of(name):
    """A stable, readable fill per function name."""
    digest = hashlib.sha1(name.encode()).digest()
    hue = digest[0] * 360 // 256
    return "hsl(%d, 55%%, 62%%)" % hue


def nest(slices):
    """Rows by nesting: a slice sits one row below the slice that encloses it."""
    ordered = sorted(slices, key=lambda s: (s["ts"], -s["dur"]))
    stack = []
    for s in ordered:
        end = s["ts"] + s["dur"]
        while stack and stack[-1]["ts"] + stack[-1]["dur"] < end - 1e-9:
            stack.pop()
        s["row"] = len(stack)
        stack.append(s)
    return ordered


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chrome_json")
    parser.add_argument("out_svg")
    parser.add_argument("--window", type=int, default=None,
                        help="the time range of this window (default: the first)")
    parser.add_argument("--details", default=None, help="show the arguments of the first call of this name")
    options = parser.parse_args()

    with open(options.chrome_json) as f:
        events = json.load(f)["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}
    slices = [dict(e) for e in events if e.get("ph") == "X"]
    windows = [s for s in slices if s.get("cat") == "window"]
    if not windows:
        sys.exit("timeline_snapshot: no window slices in " + options.chrome_json)
    chosen = windows[0]
    if options.window is not None:
        wanted = "window %d" % options.window
        chosen = next((w for w in windows if w["name"] == wanted), None)
        if chosen is None:
            sys.exit("timeline_snapshot: no %s" % wanted)
    margin = chosen["dur"] * 0.04
    begin, end = chosen["ts"] - margin, chosen["ts"] + chosen["dur"] + margin
    scale = (WIDTH - LABEL_WIDTH - 20) / (end - begin)

    def x_of(ts):
        return LABEL_WIDTH + (ts - begin) * scale

    tracks = {}
    for s in slices:
        if s["ts"] + s["dur"] >= begin and s["ts"] <= end:
            tracks.setdefault(s["tid"], []).append(s)

    out = []
    y = TOP
    detail = None
    for tid in sorted(tracks):
        rows = nest(tracks[tid])
        height = (max(s["row"] for s in rows) + 1) * ROW
        out.append('<rect x="0" y="%d" width="%d" height="%d" fill="#f6f7f9"/>' % (y - 4, WIDTH, height + 8))
        out.append('<text x="10" y="%d" class="track">%s</text>' %
                   (y + 15, html.escape(names.get(tid, "thread %d" % tid))))
        for s in rows:
            x0 = max(x_of(s["ts"]), LABEL_WIDTH)
            x1 = min(x_of(s["ts"] + s["dur"]), WIDTH - 20)
            w = max(x1 - x0, 1.5)
            top = y + s["row"] * ROW
            fill = "#4a5a78" if s.get("cat") == "window" else color_of(s["name"])
            out.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s" stroke="#ffffff" '
                       'stroke-width="0.6"/>' % (x0, top, w, ROW - 2, fill))
            label = s["name"]
            room = int(w / 7)
            if room >= 3:
                text = label if len(label) <= room else label[:room - 1] + "…"
                color = "#ffffff" if s.get("cat") == "window" else "#111111"
                out.append('<text x="%.1f" y="%d" class="slice" fill="%s">%s</text>' %
                           (x0 + 4, top + 14, color, html.escape(text)))
            if detail is None and options.details and s["name"] == options.details:
                detail = s
                out.append('<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="none" stroke="#1a73e8" '
                           'stroke-width="2.5"/>' % (x0, top, w, ROW - 2))
        y += height + TRACK_GAP

    # Time ruler: microseconds from the window's start.
    ruler = ['<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#888"/>' % (LABEL_WIDTH, TOP - 14, WIDTH - 20, TOP - 14)]
    span = end - begin
    step = 10 ** max(0, len(str(int(span / 8))) - 1)
    for factor in (1, 2, 5, 10):
        if span / (step * factor) <= 10:
            step *= factor
            break
    tick = 0.0
    while chosen["ts"] + tick <= end:
        x = x_of(chosen["ts"] + tick)
        ruler.append('<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#888"/>' % (x, TOP - 18, x, y))
        ruler.append('<text x="%.1f" y="%d" class="tick">%g µs</text>' % (x + 3, TOP - 20, tick))
        tick += step

    panel = []
    if detail is not None:
        panel_top = y + 6
        panel.append('<rect x="0" y="%d" width="%d" height="%d" fill="#ffffff" stroke="#d0d4da"/>' %
                     (panel_top, WIDTH, 30 + 18 * (2 + len(detail.get("args", {})))))
        panel.append('<text x="12" y="%d" class="head">%s  —  %.3f µs</text>' %
                     (panel_top + 22, html.escape(detail["name"]), detail["dur"]))
        line = panel_top + 44
        for key, value in detail.get("args", {}).items():
            if isinstance(value, dict):
                value = ", ".join("%s %s" % (k, v) for k, v in value.items())
            panel.append('<text x="24" y="%d" class="arg">%s</text><text x="170" y="%d" class="arg">%s</text>' %
                         (line, html.escape(key), line, html.escape(str(value))))
            line += 18
        y = line + 10

    title = "%s  ·  %d threads  ·  %.1f µs" % (chosen["name"], len(tracks), chosen["dur"])
    svg = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="DejaVu Sans, sans-serif">' %
           (WIDTH, y + 10),
           '<style>.track{font-size:13px;fill:#222;font-weight:bold}.slice{font-size:12px}'
           '.tick{font-size:11px;fill:#555}.head{font-size:14px;font-weight:bold;fill:#222}'
           '.arg{font-size:12px;fill:#333;font-family:DejaVu Sans Mono, monospace}'
           '.title{font-size:15px;fill:#222}</style>',
           '<rect width="100%" height="100%" fill="#ffffff"/>',
           '<text x="10" y="22" class="title">%s</text>' % html.escape(title)]
    svg += ruler + out + panel + ["</svg>"]
    with open(options.out_svg, "w") as f:
        f.write("\n".join(svg) + "\n")


if __name__ == "__main__":
    main()
