"""gdb-python/xref/window_render.py without gdb: the same window text as the
LLDB plugin's (tests/lldb/lldb_client_test.cpp, WindowRender), through fake
symbols, from the same window (tests/support/sample_window.json). `python3 window_text_test.py` (ctest: gdb_window_text)."""

import bisect
import importlib.util
import json
import os
import sys

_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "gdb-python", "xref", "window_render.py")
_spec = importlib.util.spec_from_file_location("window_render", _PATH)
window_render = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(window_render)

BIAS = 0x555555554000


class FakeSymbols:
    def __init__(self):
        self.places = {}  # static VA of a function start -> (name, file:line)
        self.breakpoints = {}

    def live(self, address):
        if address.live is not None:
            return address.live
        return None if address.static_va is None else address.static_va + BIAS

    def describe(self, address):
        at = self.live(address)
        if at is None:
            return window_render.CodePlace()
        starts = sorted(self.places)
        index = bisect.bisect_right(starts, at - BIAS) - 1
        if index < 0:
            return window_render.CodePlace()
        name, file_line = self.places[starts[index]]
        return window_render.CodePlace(name, at - BIAS - starts[index], file_line)

    def breakpoints_at(self, live_address):
        return [self.breakpoints[live_address]] if live_address in self.breakpoints else []


# The window both front ends' render tests use (tests/lldb/lldb_client_test.cpp too).
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support", "sample_window.json")) as _f:
    SAMPLE = json.load(_f)


def expect_equal(seen, expected):
    if seen != expected:
        raise AssertionError("\n  seen:     %r\n  expected: %r" % (seen, expected))


def main():
    symbols = FakeSymbols()
    symbols.places = {0x1c20: ("svc::handle_request(request*)", "service.cc:170"),
                      0x1d10: ("worker_main", "service.cc:231"), 0x1960: ("apply_fee", "service.cc:60"),
                      0x1a10: ("price_order", "service.cc:66"), 0x1b70: ("settle", "service.cc:139")}
    symbols.breakpoints = {0x555555555c20: 1, 0x1b70 + BIAS: 4}
    expect_equal(window_render.render_window(SAMPLE, 2, symbols), [
        "window 3 (session 2)  tid 4243  complete  6 events  lost 0  0.353 ms  req=0x7f00",
        "  3:0   > svc::handle_request(request*)  from worker_main+0xa2 service.cc:231  [bp 1]",
        "  3:1     > apply_fee  from price_order+0x9c service.cc:66 (unverified)  price=0x3e80 delta=-1",
        "  3:2     < apply_fee  fee=<unreadable: EFAULT>",
        "  3:3     > settle [tail]  from svc::handle_request(request*)+0xd0 service.cc:170  [bp 4]",
        "  3:10    ~ settle [unwound]",
        "  3:11  < svc::handle_request(request*)"])

    symbols = FakeSymbols()
    symbols.places = {0x1c20: ("forward", "t.cc:10")}
    window = json.loads(r'''{"window_id": 1, "tid": 7, "status": "complete", "lost_events": 0,
      "events": [
        {"seq": 0, "kind": "entry", "depth": 0, "target_va": "0x1c20", "probe_va": "0x1c20", "fetches": []},
        {"seq": 1, "kind": "tail_exit", "depth": 0, "target_va": "0x1c20", "probe_va": "0x1c30", "fetches": []},
        {"seq": 2, "kind": "stop", "depth": 0, "target_va": "0x1c20", "probe_va": "0x1c28", "fetches": []}]}''')
    expect_equal(window_render.render_window(window, 1, symbols)[1:], [
        "  1:0  > forward  t.cc:10", "  1:1  < forward [tail]", "  1:2  | stop at forward+0x8 t.cc:10"])

    window = dict(SAMPLE, status="target_exited")
    expect_equal(window_render.window_status_text(window), "incomplete (the process exited)")
    window = dict(SAMPLE, possible_loss=True)
    expect_equal(window_render.window_status_text(window), "incomplete (events may be missing)")
    window = dict(SAMPLE, status="incomplete", possible_loss=True)
    expect_equal(window_render.window_status_text(window), "incomplete (events may be missing)")
    window = dict(SAMPLE, status="unknown", possible_loss=True)
    expect_equal(window_render.window_status_text(window),
                 "incomplete (ended, but its end record was lost, events may be missing)")
    window = dict(SAMPLE, status="open_at_stop", lost_events=None)
    expect_equal(window_render.render_window(window, 1, FakeSymbols())[0],
                 "window 3 (session 1)  tid 4243  incomplete (still open when the trace stopped)  6 events  lost ?"
                 "  0.353 ms  req=0x7f00")
    print("passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
