"""gdb-python/xref/probe_render.py without gdb: the text a probe session
prints at a stop, in `xref show` and at its end, as the front-end spec
writes it (the LLDB plugin prints the same), through a fake `describe`.
`python3 probe_text_test.py` (ctest: gdb_probe_text)."""

import importlib
import json
import os
import sys
import types

# The package's files without its __init__ (which needs gdb).
_package = types.ModuleType("xref_without_gdb")
_package.__path__ = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "gdb-python", "xref")]
sys.modules["xref_without_gdb"] = _package
probe_render = importlib.import_module("xref_without_gdb.probe_render")

PLACES = {0x555555557af0: "svc::validate(unsigned long, unsigned long) at trace_target.cpp:241",
          0x5555555581cf: "svc::handle_request(svc::Request*)+0x2f at trace_target.cpp:338"}


def describe(live):
    return PLACES.get(live, "")


STARTED = [{"address": "svc::validate", "static_va": "0x3af0", "module": "trace_target",
            "function": "svc::validate(unsigned long, unsigned long)", "live": "0x555555557af0",
            "probe_live": "0x555555557af0"},
           {"address": "0x3b1c", "static_va": "0x3b1c", "module": "trace_target",
            "function": "svc::validate(unsigned long, unsigned long)", "live": None, "probe_live": None}]

CALLER = {"hits": 420, "hits_added": 100, "new": True, "return_live": "0x5555555581d4",
          "call_site_live": "0x5555555581cf", "call_site_va": "0x41cf", "call_site_verified": True,
          "caller": "svc::handle_request(svc::Request*)", "caller_offset": "0x2f", "module": "trace_target"}

CHANGES = {"elapsed_ms": 1530, "since_ms": 1130, "hits_added": 120, "lost_events": 0, "lost_added": 0,
           "addresses": [
               {"address": "svc::validate", "location": "svc::validate", "function": "svc::validate",
                "module": "trace_target", "static_va": "0x3af0", "probe_va": "0x3af0", "hits": 520,
                "hits_added": 120, "passed": 520, "passed_added": 120, "threads": 4, "new_threads": [4243],
                "callers": {"method": "exact", "evidence": "observed", "complete": True, "sites": [
                    CALLER, {"hits": 7, "hits_added": 1, "new": False, "return_live": "0x7ffff7a00010",
                             "call_site_va": None, "call_site_verified": False}]},
                "groups": {"by": "d", "keys": 2, "complete": True,
                           "values": [{"key": "0x3", "hits": 260, "hits_added": 60, "new": False}]},
                "samples": [{"hit": 12, "tid": 4242, "timestamp_ns": 5,
                             "fetches": [{"name": "amount", "type": "u64", "value": "0x5"},
                                         {"name": "delta", "type": "s32", "value": "0xffffffff", "signed_value": -1},
                                         {"name": "gone", "type": "u64", "value": None,
                                          "error": "unreadable: EFAULT (14)"}],
                             "return_live": "0x5555555581d4", "call_site_live": "0x5555555581cf"}],
                "records_lost_added": 3},
               {"address": "0x3b1c", "location": "svc::validate+0x2c", "function": "svc::validate",
                "module": "trace_target", "static_va": "0x3b1c", "probe_va": "0x3b1c", "hits": 9, "hits_added": 0,
                "passed": 4, "passed_added": 0, "threads": 1, "new_threads": [], "samples": [],
                "records_lost_added": 0}]}


def expect_equal(seen, expected):
    if seen != expected:
        raise AssertionError("\n  seen:     %s\n  expected: %s" % (json.dumps(seen, indent=1),
                                                                 json.dumps(expected, indent=1)))


def main():
    expect_equal(probe_render.stop_lines(2, CHANGES, STARTED, describe), [
        "xref: probe session 2 at 1.53 s (+0.40 s): 120 new hits, 0 lost",
        "  svc::validate  svc::validate(unsigned long, unsigned long) at trace_target.cpp:241  hits 520 (+120)"
        "  threads 4, new 4243",
        "    callers (exact):",
        "      +100  svc::handle_request(svc::Request*)+0x2f at trace_target.cpp:338  (420 in all)  new",
        "      +1  0x7ffff7a00010 (return address)  (7 in all)",
        "    by d:",
        "      +60  0x3  (260 in all)",
        "    sample hit 12  tid 4242  amount=0x5 delta=-1 gone=<unreadable: EFAULT (14)>  from svc::handle_request(svc::Request*)+0x2f at "
        "trace_target.cpp:338",
        "    lost 3 samples (ring buffer full)",
        # No live address in the answer: the helper's name; no new hits: nothing more.
        "  0x3b1c  svc::validate+0x2c  hits 9 (no new hits)  passed 4 (+0)  threads 1"])

    # At most 8 new samples per address at a stop; group keys of tid in decimal.
    many = json.loads(json.dumps(CHANGES))
    many["hits_added"] = 1
    first = many["addresses"][0]
    first.pop("callers")
    first["records_lost_added"] = 0
    first["groups"] = {"by": "tid", "keys": 1, "complete": True,
                       "values": [{"key": "0x1093", "hits": 10, "hits_added": 10, "new": True}]}
    first["samples"] = [{"hit": hit, "tid": 4243, "timestamp_ns": hit, "fetches": []} for hit in range(1, 11)]
    many["addresses"] = [first]
    lines = probe_render.stop_lines(1, many, STARTED[:1], describe)
    expect_equal(lines[0], "xref: probe session 1 at 1.53 s (+0.40 s): 1 new hit, 0 lost")
    expect_equal(lines[2:5], ["    by tid:", "      +10  4243  (10 in all)  new", "    sample hit 1  tid 4243"])
    expect_equal(lines[-1], "    ... 2 more samples (xref show)")
    expect_equal(sum(1 for line in lines if line.startswith("    sample hit ")), 8)

    document = {"backend": "uprobe_multi", "summary": {"duration_ms": 2045, "hits": 20},
                "addresses": [{"address": "svc::validate", "location": "svc::validate", "hits": 20, "passed": 20,
                               "rate_per_s": 9.78, "threads": [{"tid": 4243, "hits": 20}],
                               "callers": {"method": "exact", "sites": [CALLER]},
                               "groups": {"by": "tid", "keys": 1, "values": [{"key": "0x1093", "hits": 20}]},
                               "hist": {"name": "amount", "buckets": [{"from": 64, "to": 127, "hits": 3}]},
                               "samples": [{"hit": 1, "tid": 4243, "fetches": [], "return_live": "0x5555555581d4"}]}]}
    expect_equal(probe_render.show_lines(3, document, "ended target_exited", STARTED[:1], describe), [
        "xref: probe session 3 (ended target_exited), 2045 ms, backend uprobe_multi",
        "  svc::validate  svc::validate(unsigned long, unsigned long) at trace_target.cpp:241  hits 20  passed 20"
        "  threads 1  rate 9.8/s",
        "    callers (exact):",
        "      420  svc::handle_request(svc::Request*)+0x2f at trace_target.cpp:338",
        "    by tid (1 key):",
        "      20  4243",
        "    hist amount:",
        "      [64, 127]  3",
        "    sample hit 1  tid 4243  from 0x5555555581d4 (return address)"])

    # --stacks: the frames by the debugger's names, the call before each return address.
    frames_places = {0x555555557e60: "svc::settle(unsigned long) at trace_target.cpp:300",
                     0x555555557eb4: "svc::settle(unsigned long)+0x54 at trace_target.cpp:303"}
    stack = {"key": "0x1", "hits": 6, "hits_added": 2, "new": False, "frames": [
        {"live": "0x555555557e60", "kind": "pc"},
        {"live": "0x555555557eb9", "kind": "return", "call_site_live": "0x555555557eb4"},
        {"live": "0x7ffff7a00010", "kind": "return"}]}
    stacked = json.loads(json.dumps(many))
    stacked["addresses"][0]["stacks"] = {"method": "frame_pointers", "stacks": [stack]}
    stacked["addresses"][0]["samples"] = []
    stacked["addresses"][0].pop("groups")
    lines = probe_render.stop_lines(1, stacked, STARTED[:1], lambda live: frames_places.get(live, ""))
    expect_equal(lines[2:], ["    stacks (frame_pointers):", "      +2  (6 in all)",
                             "          svc::settle(unsigned long) at trace_target.cpp:300",
                             "          svc::settle(unsigned long)+0x54 at trace_target.cpp:303",
                             "          0x7ffff7a00010"])
    shown_stacks = probe_render.show_lines(1, {"backend": "uprobe_multi", "summary": {"duration_ms": 5}, "addresses": [
        {"address": "svc::settle", "hits": 6, "passed": 6, "rate_per_s": 1.0, "threads": [],
         "stacks": {"method": "frame_pointers", "keys": 1, "unread": 0, "stacks": [stack]}, "samples": []}]},
        "running", STARTED[:1], lambda live: frames_places.get(live, ""))
    expect_equal(shown_stacks[2:4], ["    stacks (frame_pointers, 1 distinct stack, 0 unread):", "      6"])

    # --stop-when's stop comes first, with where the thread really is.
    stopped = json.loads(json.dumps(many))
    stopped["stop"] = {"address": "svc::validate", "address_index": 0, "tid": 4243, "hit": 9, "match": 3,
                       "fetches": [{"name": "id", "type": "u64", "value": "0x8"}], "signal_sent": True,
                       "filter": "amount > 300", "skip": 2, "return_live": "0x5555555581d4",
                       "call_site_live": "0x5555555581cf"}
    expect_equal(probe_render.stop_lines(1, stopped, STARTED[:1], describe)[1:4], [
        "xref: probe session 1 stopped thread 4243: hit 9 of svc::validate, the 3rd where --stop-when "
        "'amount > 300' held: id=0x8",
        "xref: (a signal from the probe: the thread stopped just after the probed instruction at "
        "svc::validate(unsigned long, unsigned long) at trace_target.cpp:241)",
        "xref: called from svc::handle_request(svc::Request*)+0x2f at trace_target.cpp:338"])
    stopped["stop"]["signal_sent"] = False
    stopped["stop"]["signal_error"] = 3
    expect_equal(probe_render.stop_lines(1, stopped, STARTED[:1], describe)[2],
                 "xref: the stop signal could not be sent (error 3): the thread did not stop")

    expect_equal(probe_render.end_line(3, "until_hits", {"hits": 5, "passed": 5, "records_received": 5,
                                                         "lost_events": 0}, None),
                 "xref: session 3 ended (until_hits): 5 hits, 5 passed, 5 samples, lost 0")
    expect_equal(probe_render.end_line(4, "target_exited", {"hits": 20, "passed": 20, "records_received": 8,
                                                            "lost_events": 0},
                                       {"code": "process_exited", "message": "process 7 exited during the probe"}),
                 "xref: session 4 ended (target_exited): 20 hits, 20 passed, 8 samples, lost 0; process 7 exited "
                 "during the probe")
    expect_equal(probe_render.end_line(5, "error", None, {"message": "the probe failed"}),
                 "xref: session 5 ended (error); the probe failed")

    # After session.release (the LLDB plugin's render_release prints the same).
    release_text = importlib.import_module("xref_without_gdb.release_text")
    released = {"session": 1, "reason": "breakpoint 2", "ended": False, "gap_us": 830, "process_stopped": True,
                "hits_may_be_lost": False,
                "released": [{"address": "tally", "function": "tally", "probe_live": "0x555555555250",
                              "ret_site": False, "at_ms": 41, "hits": 3, "passed": 3}]}
    expect_equal(release_text.release_lines(1, released, [0x555555555250]), [
        "xref: session 1 no longer observes tally at 0x555555555250 since 41 ms (breakpoint 2 there): 3 hits "
        "counted up to then"])
    released["hits_may_be_lost"] = True
    expect_equal(release_text.release_lines(1, released, [0x555555555250])[1],
                 "xref: warning: session 1's other sites were out for 830 us while the process ran: hits then "
                 "were not counted")
    expect_equal(release_text.release_lines(2, {"reason": "breakpoint 4", "ended": True, "released": []},
                                            [0x555555555250]),
                 ["xref: session 2 ended (released): breakpoint 4 is at its probe site 0x555555555250; what it "
                  "recorded is kept"])
    expect_equal(release_text.release_lines(2, {"reason": "breakpoint 4", "ended": False, "released": []}, [1]), [])
    document = {"summary": {"duration_ms": 118}, "backend": "uprobe_multi",
                "addresses": [{"address": "tally", "hits": 3, "passed": 3, "threads": [], "rate_per_s": 25.4,
                               "released": {"at_ms": 41, "reason": "breakpoint 2", "hits": 3, "passed": 3}}]}
    expect_equal(probe_render.show_lines(1, document, "running", [], describe)[2],
                 "    not observed since 41 ms (breakpoint 2): counted up to then")
    print("passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
