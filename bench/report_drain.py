#!/usr/bin/env python3
"""The "Event path: drain speed (issue 16)" section of docs/performance.md
(between its drain-bench markers), from what bench/run_drain.sh left in a
work directory: results.tsv (one line per run) and context.json (the run's
parameters, the machine, the commands).

  report_drain.py WORK_DIR > section.md
"""
import csv
import json
import os
import sys

FORMATS = ["text", "json", "jsonl", "serve"]
LABELS = {
    "text": "xref trace (text)",
    "json": "xref trace --json",
    "jsonl": "xref trace --jsonl",
    "serve": "xref serve session",
    "bpftrace": "bpftrace printf",
}
PER_CORE_GOAL = 1_000_000  # events per second per helper core
RATIO_GOAL = 0.5  # xref's CPU per event over bpftrace's
LOSS_THREADS = 4  # no loss at this many target threads


def quartiles(values):
    """(min, q1, median, q3, max), linear interpolation (bench/report_lib.sh's summary)."""
    v = sorted(values)
    if not v:
        return (None,) * 5

    def q(p):
        pos = (len(v) - 1) * p
        lo = int(pos)
        hi = min(lo + 1, len(v) - 1)
        return v[lo] + (pos - lo) * (v[hi] - v[lo])

    return v[0], q(0.25), q(0.5), q(0.75), v[-1]


def plural(n, word):
    return "{} {}{}".format(n, word, "" if n == 1 else "s")


def median(values):
    return quartiles(values)[2]


def num(text):
    return None if text in ("-", "", None) else float(text)


def fmt_int(x):
    return "—" if x is None else "{:,.0f}".format(x)


def fmt(x, digits=2):
    return "—" if x is None else "{:,.{d}f}".format(x, d=digits)


def load(work):
    rows = []
    with open(os.path.join(work, "results.tsv")) as f:
        for row in csv.DictReader(f, delimiter="\t"):
            for key in row:
                if key not in ("variant", "kind", "binary"):
                    row[key] = num(row[key])
            row["cpu_s"] = row["user_s"] + row["sys_s"]
            row["loop_s"] = row["loop_ns"] / 1e9
            rows.append(row)
    with open(os.path.join(work, "context.json")) as f:
        context = json.load(f)
    return rows, context


def per_round(rows):
    """{kind: [one dict per round with both its loaded and idle run]}: events,
    CPU, per-event figures."""
    by = {(int(r["round"]), r["variant"]): r for r in rows}
    rounds = sorted({int(r["round"]) for r in rows})
    out = {}
    for kind in FORMATS + ["bpftrace"]:
        out[kind] = []
        for n in rounds:
            loaded, idle = by.get((n, kind)), by.get((n, kind + "_idle"))
            if loaded is None or idle is None:
                continue
            events = loaded["events"]
            marginal_us = (loaded["cpu_s"] - idle["cpu_s"]) / events * 1e6
            out[kind].append({
                "round": n,
                "calls": loaded["calls"],
                "events": events,
                "expected": loaded["calls"] * 4,
                "lost": loaded["lost"] or 0,
                "incomplete": loaded["incomplete"],
                "events_per_s": events / loaded["loop_s"],
                "calls_per_s": loaded["calls"] / loaded["loop_s"],
                "cpu_s": loaded["cpu_s"],
                "idle_cpu_s": idle["cpu_s"],
                "wall_s": loaded["wall_s"],
                "total_us": loaded["cpu_s"] / events * 1e6,
                "marginal_us": marginal_us,
                "per_core": 1e6 / marginal_us if marginal_us > 0 else None,
                "bytes": loaded["output_bytes"],
            })
    # Ratios to the same round's bpftrace.
    bpf = {r["round"]: r for r in out["bpftrace"]}
    for kind in FORMATS:
        for r in out[kind]:
            b = bpf.get(r["round"])
            r["ratio_marginal"] = r["marginal_us"] / b["marginal_us"] if b and b["marginal_us"] > 0 else None
            r["ratio_total"] = r["total_us"] / b["total_us"] if b else None
    return out


def col(runs, key):
    return [r[key] for r in runs if r.get(key) is not None]


def med(runs, key):
    values = col(runs, key)
    return median(values) if values else None


def iqr_text(runs, key, digits=2, suffix="×"):
    _, q1, _, q3, _ = quartiles(col(runs, key))
    if q1 is None:
        return "—"
    return "{}–{}{}".format(fmt(q1, digits), fmt(q3, digits), suffix)


def verdict(value, q1, q3, goal, higher_is_better, unit):
    """met / missed on the median, and whether the middle half of the rounds is on one side."""
    if value is None:
        return "no figure"
    ok = value >= goal if higher_is_better else value <= goal
    settled = (q1 >= goal if higher_is_better else q3 <= goal) if ok else (q3 < goal if higher_is_better else q1 > goal)
    spread = "middle half of the rounds {}".format(unit(q1, q3))
    if ok:
        return ("**met**: {} ({})" if settled else "**met on the median**, {}, but not settled: {}").format(
            unit(value), spread)
    return ("**missed**: {} ({})" if settled else "**missed on the median**: {}, but not settled: {}").format(
        unit(value), spread)


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    work = argv[1]
    rows, c = load(work)
    runs = per_round(rows)
    rounds = c["rounds"]
    threads = c["variant_threads"]
    sweep = [int(t) for t in c["sweep"].split()]
    lines = []
    say = lines.append

    say("<!-- drain-bench:begin -->")
    say("## Event path: drain speed (issue 16)")
    say("")
    say("Generated by `bench/run_drain.sh` on {}, commit {}; the helper measured is a copy of "
        "`build/helper/xref` as built {} (taken at the start of the run). Do not edit by hand: rerun the benchmark (see the end of this section)."
        .format(c["started"], c["commit"], c["xref_built"]))
    say("")
    say("Binaries:")
    say("")
    dirty = [d for d in (c.get("now_dirty") or "").split(";") if d]
    say("- **now**: commit {}{}; built {}.".format(
        c["commit"], "" if not dirty else " (uncommitted in helper/, bpf/, shared/ at the start: {})".format(
            ", ".join("`{}` {}".format(*d.split(" ", 1)) if " " in d else "`{}`".format(d) for d in dirty)),
        c["xref_built"]))
    if c.get("before_label"):
        say("- **before**: {}; the binary given as `BEFORE`, built {}, copied at the start.".format(
            c["before_label"], c["before_built"]))
    say("")
    say("### What is measured")
    say("")
    say("How fast the helper takes events from its ring buffer through windows to its output, and "
        "what each event costs the helper in CPU time, in every output format, beside bpftrace printing "
        "the same hits.")
    say("")
    say("`build/bench/drain_target --threads N` (`bench/drain_target.c`, built `-O2 -fPIE` with no other "
        "flags, as users build) loops on N threads as fast as it can: `handle_request(i)`, which calls "
        "`validate(i)` once (both `noipa`; the call is a real call, not a tail jump). Under `xref trace "
        "--start handle_request --functions validate` each call is one window of **4 events**: the entry and "
        "the return of each function. The target starts its loop on a go byte, sent once the tracer has "
        "attached (its attach message, and both entries holding `int3` in the target's memory), and ends it "
        "{:,} ms later by itself, inside the tracer's {:,} ms: every call of the loop is traced, and the "
        "target's count of calls is the ground truth (4 × calls events)."
        .format(c["loop_ms"], c["trace_ms"]))
    say("")
    say("| variant | what runs (output to a file) |")
    say("|---|---|")
    say("| xref trace (text) | `{}` |".format(c["text_command"].replace("PID", "P")))
    say("| xref trace --json, --jsonl | the same with `--json`, `--jsonl` |")
    say("| xref serve session | `xref serve` driven by `bench/serve_client.py`: hello, `session.start` with "
        "argv `{}` and context `{{\"pid\": P}}`, every line until `session_ended` written to a file unparsed; "
        "the CPU time is xref serve's alone, not the client's |".format(c["serve_argv"]))
    say("| bpftrace printf | bpftrace 0.17, `-p P`, a `uprobe` and a `uretprobe` on both functions, each "
        "printing the thread, the kind, `nsecs` and one register (`arg0` at an entry, `retval` at a return), "
        "filtered on the PID; `interval:ms:{}` exits |".format(c["trace_ms"]))
    say("| … idle | each of the above on a target that never gets its go byte: 0 events; the fixed cost of "
        "start-up, attach, {:,} ms of waiting, detach and exit |".format(c["trace_ms"]))
    if c.get("small_ring"):
        say("| loss under pressure (`ring_now`{}) | `--jsonl` with `--ringbuf-bytes {}`, {} target threads: a ring "
            "buffer too small for the rate, so that events are lost |".format(
                ", `ring_before`" if c.get("before_label") else "", c["small_ring"], c["compare_threads"]))
    if c.get("before_label"):
        say("| before vs now (`cmp_…`) | `--jsonl` and text at {} target threads, default ring buffer, with the "
            "current binary and with the binary before issue 16 ({}); the before binary's idle runs give its "
            "marginal cost |".format(c["compare_threads"], c["before_label"]))
    say("")
    say("**Helper CPU** is the tracer process's user + system time, from `wait4` when it exits "
        "(`bench/rusage_run.py`; for serve, `bench/serve_client.py` waits for xref serve). **Events** are "
        "what the tracer reports: xref's `summary.events` (each run checks that the output holds exactly "
        "those), for serve the events of the window events and `session_ended` it sent, for bpftrace its "
        "printed lines. **Per event**, total: CPU / events, start-up included; **marginal**: (CPU − the "
        "same round's idle CPU of the same variant) / events, what one more event costs; **events per "
        "helper core-second** = 1 / marginal. **Events/s**: events / the target's loop time. Ratios to "
        "bpftrace are taken within a round; the tables give medians over {} (each round runs every "
        "variant once, each in a fresh target, in an order rotated from round to round), with the "
        "interquartile range of the per-round ratio.".format(plural(rounds, "round")))
    say("")
    say("A run counts only when it is checked: the tracer exited with status 0 on its duration; the "
        "target's loop ended before the tracer did; the target made calls and the tracer reported events, "
        "no more than 4 × calls; for xref, with nothing lost, exactly 4 × calls events in one complete "
        "window per call, and with loss, every missing event counted in `lost`; the output holds the "
        "events the summary counts; an idle run saw 0 calls and 0 events. A run that fails stops the "
        "script with the reason, and nothing is written. The before-vs-now and small-ring runs are held to "
        "the first checks only (status 0, stopped on its duration, the loop inside the trace, no more than "
        "4 × calls events): what they kept and counted as lost is their result, given below as it came.")
    say("")
    say("### Machine")
    say("")
    say("- kernel {}, {} × {}".format(c["kernel"], c["cpus"], c["cpu_model"]))
    say("- {}".format(c["bpftrace_version"]))
    say("- load average (1, 5, 15 min) before the run: {}; after: {}".format(c["load_before"], c["load_after"]))
    if c.get("lock"):
        say("- every run held `flock` on {}, so no test or build that takes them ran during a run".format(
            " and ".join(c["lock"].split(":"))))
    say("")

    # --- the formats ---
    say("### Formats, {} target threads (medians of {})".format(threads, plural(rounds, "round")))
    say("")
    say("| variant | target calls | events | of 4 × calls | lost | events/s | helper CPU | idle CPU | "
        "µs CPU per event, total | µs per event, marginal | events per helper core-second | "
        "marginal ÷ bpftrace (IQR) | total ÷ bpftrace | output bytes per event |")
    say("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for kind in FORMATS + ["bpftrace"]:
        r = runs[kind]
        if not r:
            continue
        share = median([x["events"] / x["expected"] for x in r]) * 100
        ratio = "—" if kind == "bpftrace" else "**{}×** ({})".format(fmt(med(r, "ratio_marginal")),
                                                                       iqr_text(r, "ratio_marginal"))
        total_ratio = "—" if kind == "bpftrace" else "{}×".format(fmt(med(r, "ratio_total")))
        say("| {} | {} | {} | {:.1f} % | {} | {} | {} s | {} s | {} | {} | {} | {} | {} | {} |".format(
            LABELS[kind], fmt_int(med(r, "calls")), fmt_int(med(r, "events")), share, fmt_int(med(r, "lost")),
            fmt_int(med(r, "events_per_s")), fmt(med(r, "cpu_s"), 3), fmt(med(r, "idle_cpu_s"), 3),
            fmt(med(r, "total_us")), fmt(med(r, "marginal_us")), fmt_int(med(r, "per_core")), ratio,
            total_ratio, fmt(median([x["bytes"] / x["events"] for x in r]), 0)))
    say("")
    say("Each tracer's probes cost the target differently, so in the same {:,} ms loop the target makes a "
        "different number of calls under each; events/s is the rate the target made events at and the "
        "tracer reported them. \"Of 4 × calls\" is the share of the loop's events the tracer reported."
        .format(c["loop_ms"]))
    say("")
    say(load_text(runs, c))
    say("")

    # --- goals ---
    loss_runs = [x for x in rows if x["loaded"] and x["kind"] != "bpftrace" and x["threads"] == LOSS_THREADS
                 and (x["variant"] in FORMATS or x["variant"].startswith("sweep_"))]
    lossy = [x for x in loss_runs if (x["lost"] or 0) > 0]
    say("### Goals")
    say("")
    say("| goal | " + " | ".join(LABELS[k] for k in FORMATS) + " |")
    say("|---|" + "---|" * len(FORMATS))
    cells = []
    for kind in FORMATS:
        _, q1, m, q3, _ = quartiles(col(runs[kind], "per_core"))
        cells.append(verdict(m, q1, q3, PER_CORE_GOAL, True, lambda a, b=None: (
            "{:,.0f} events/s".format(a) if b is None else "{:,.0f}–{:,.0f}".format(a, b))))
    say("| ≥ 1,000,000 events/s per helper core (1 / marginal CPU per event) | " + " | ".join(cells) + " |")
    cells = []
    for kind in FORMATS:
        _, q1, m, q3, _ = quartiles(col(runs[kind], "ratio_marginal"))
        cells.append(verdict(m, q1, q3, RATIO_GOAL, False, lambda a, b=None: (
            "{:.2f}×".format(a) if b is None else "{:.2f}–{:.2f}×".format(a, b))))
    say("| CPU per event ≤ 0.5× bpftrace's (marginal, per round) | " + " | ".join(cells) + " |")
    cells = []
    for kind in FORMATS:
        mine = [x for x in loss_runs if x["kind"] == kind]
        bad = [x for x in mine if (x["lost"] or 0) > 0]
        if not mine:
            cells.append("not run at {} threads".format(LOSS_THREADS))
        elif not bad:
            cells.append("**met**: 0 lost in {} of {} runs".format(len(mine), len(mine)))
        else:
            cells.append("**missed**: loss in {} of {} runs (median {} lost)".format(
                len(bad), len(mine), fmt_int(median([x["lost"] for x in bad]))))
    say("| no loss at {} threads (default ring buffer; jsonl includes the sweep's {}-thread runs) | ".format(
        LOSS_THREADS, LOSS_THREADS) + " | ".join(cells) + " |")
    say("")
    if loss_runs:
        say("At {} target threads, {} of {} xref runs lost events.".format(LOSS_THREADS, len(lossy), len(loss_runs)))
        say("")

    # --- what each tracer saw ---
    say("### What each tracer saw")
    say("")
    say("| variant | target calls | 4 × calls | events reported | lost (counted) | missing, not counted | "
        "incomplete windows |")
    say("|---|---:|---:|---:|---:|---:|---:|")
    for kind in FORMATS + ["bpftrace"]:
        r = runs[kind]
        if not r:
            continue
        missing = [max(0, x["expected"] - x["events"] - x["lost"]) for x in r]
        say("| {} | {} | {} | {} | {} | {} | {} |".format(
            LABELS[kind], fmt_int(med(r, "calls")), fmt_int(med(r, "expected")), fmt_int(med(r, "events")),
            fmt_int(med(r, "lost")), fmt_int(median(missing)),
            "—" if kind == "bpftrace" else fmt_int(med(r, "incomplete"))))
    say("")
    say(saw_text(runs, threads))
    say("")

    # --- thread sweep ---
    say("### Thread sweep: `--jsonl`, default ring buffer (medians of {})".format(plural(rounds, "round")))
    say("")
    say("| target threads | target calls | events | of 4 × calls | lost | runs with loss | incomplete windows | "
        "events/s | µs CPU per event, total | µs per event, marginal |")
    say("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    idle = {int(x["round"]): x["cpu_s"] for x in rows if x["variant"] == "jsonl_idle"}
    zero_loss = {}
    for t in sweep:
        r = [x for x in rows if x["variant"] == "sweep_{}".format(t)]
        if not r:
            continue
        lossy_runs = sum(1 for x in r if (x["lost"] or 0) > 0)
        zero_loss[t] = lossy_runs == 0
        marginal = [(x["cpu_s"] - idle[int(x["round"])]) / x["events"] * 1e6 for x in r if int(x["round"]) in idle]
        say("| {} | {} | {} | {:.1f} % | {} | {} of {} | {} | {} | {} | {} |".format(
            t, fmt_int(median([x["calls"] for x in r])), fmt_int(median([x["events"] for x in r])),
            median([x["events"] / (4 * x["calls"]) for x in r]) * 100, fmt_int(median([x["lost"] for x in r])),
            lossy_runs, len(r), fmt_int(median([x["incomplete"] for x in r])),
            fmt_int(median([x["events"] / x["loop_s"] for x in r])),
            fmt(median([x["cpu_s"] / x["events"] * 1e6 for x in r])), fmt(median(marginal) if marginal else None)))
    say("")
    say("The marginal figure subtracts the same round's `--jsonl` idle run ({} target threads; an idle "
        "target's thread count does not change what the helper does).".format(threads))
    say("")
    say(sweep_text(zero_loss))
    say("")

    before_now_section(say, rows, c)
    small_ring_section(say, rows, c)

    # --- every run ---
    say("### Every run")
    say("")
    say("| round | variant | threads | target calls | loop ms | events | lost | incomplete windows | user s | sys s | "
        "wall s | output MB |")
    say("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for x in rows:
        say("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
            int(x["round"]), x["variant"], int(x["threads"]), fmt_int(x["calls"]),
            fmt_int(x["loop_ns"] / 1e6) if x["loaded"] else "—", fmt_int(x["events"]), fmt_int(x["lost"]),
            fmt_int(x["incomplete"]), fmt(x["user_s"], 3), fmt(x["sys_s"], 3), fmt(x["wall_s"], 2),
            fmt(x["output_bytes"] / 1e6, 1)))
    say("")

    # --- commands ---
    say("### The exact commands")
    say("")
    say("```sh")
    say("build/bench/drain_target --threads {} --seconds {:g}   # go byte on stdin; the sweep: --threads {}"
        .format(threads, c["loop_ms"] / 1000, " ".join(str(t) for t in sweep)))
    say(c["text_command"] + "            # and with --json, --jsonl")
    if c.get("small_ring"):
        say("{} --jsonl --ringbuf-bytes {} > out.jsonl   # ring_now, {} target threads".format(
            c["text_command"].split(" > ")[0], c["small_ring"], c["compare_threads"]))
    if c.get("before_label"):
        say("BEFORE trace --pid PID ...   # cmp_before_*, ring_before: the same arguments with the before binary")
    say("python3 bench/serve_client.py --xref build/helper/xref --pid PID --out out.jsonl --result result.json \\")
    say("    -- " + " ".join(json.loads(c["serve_argv"])))
    say("bpftrace -p PID -e '")
    say(c["bpftrace_program"] + "'")
    say("```")
    say("")
    say("### Rerun")
    say("")
    say("Build, then as root from the repository root:")
    say("")
    say("```sh")
    say("cmake --build build --target xref drain_target")
    say("sudo bash bench/run_drain.sh")
    say("# with the engine before issue 16 beside it (its own build of commit 92087e7):")
    say("git worktree add /tmp/xref-before 92087e7 && cmake -S /tmp/xref-before -B /tmp/xref-before/build \\")
    say("    -DCMAKE_BUILD_TYPE=RelWithDebInfo && cmake --build /tmp/xref-before/build --target xref")
    say("sudo BEFORE=/tmp/xref-before/build/helper/xref BEFORE_LABEL=\"92087e7 (before issue 16)\" bash bench/run_drain.sh")
    say("```")
    say("")
    say("It rewrites only this section, and measures a copy of `build/helper/xref` taken at its start. "
        "`ROUNDS` (5), `THREADS` (the sweep, \"1 2 4 8 16\"), `VARIANT_THREADS` (4), `COMPARE_THREADS` (16), "
        "`SMALL_RING` (65536; 0 leaves the small-ring runs out), `TRACE_MS` (2000) and "
        "`LOOP_MS` (1500) change the run; `BEFORE=/path/to/xref` adds the before-vs-now runs with that binary "
        "(an xref of the engine before issue 16; `BEFORE_LABEL` names it in the report, e.g. "
        "`BEFORE_LABEL=\"92087e7 (before issue 16)\"`); with `LOCK=FILE[:FILE…]` every run holds `flock` on all of them; "
        "`KEEP_WORK=1` keeps the work directory (`python3 bench/report_drain.py WORK | python3 bench/doc_section.py "
        "put docs/performance.md drain-bench` rewrites the section from it). "
        "This run: {}, {} threads, sweep {}, loop {:,} ms in a {:,} ms trace{}{}.".format(
            plural(rounds, "round"), threads, c["sweep"], c["loop_ms"], c["trace_ms"],
            "; before: `BEFORE_LABEL=\"{}\"`".format(c["before_label"]) if c.get("before_label") else "",
            ", each run holding " + " and ".join(c["lock"].split(":")) if c.get("lock") else ""))
    say("<!-- drain-bench:end -->")
    print("\n".join(lines))


def accounting(x):
    """What a run kept and counted against its ground truth: 4 × calls events.

    summary.lost counts ring-buffer records, and each window has a fifth,
    hidden one (its end record): kept + lost - 4 × calls is the end records
    lost when nothing went missing uncounted. From --jsonl output those are
    known (the windows with end_record_lost, and the windows of which not one
    record came through); `silent` is what is left, the events neither kept
    nor counted."""
    expected = 4 * x["calls"]
    lost = x["lost"] or 0
    gap = x["events"] + lost - expected
    end_lost = None
    if x["kind"] != "text" and x["end_records_lost_shown"] is not None and x["windows_without_records"] is not None \
            and not x["not_shown"]:
        end_lost = x["end_records_lost_shown"] + x["windows_without_records"]
    return {
        "expected": expected, "lost": lost, "gap": gap, "end_lost": end_lost,
        "silent": None if end_lost is None else gap - end_lost,
        # text: the end records lost are not in its output, but they are
        # one per window at most
        "in_bounds": gap >= 0 and gap <= (x["windows_opened"] if x["windows_opened"] is not None else x["calls"]),
    }


def range_text(values, digits=0):
    values = [v for v in values if v is not None]
    if not values:
        return "—"
    lo, hi = min(values), max(values)
    f = fmt_int if digits == 0 else (lambda v: fmt(v, digits))
    return f(lo) if lo == hi else "{}…{}".format(f(lo), f(hi))


def cmp_runs(rows, binary, kind):
    """The cmp_ runs of one binary and output, each with its idle CPU (the same round's)."""
    idle_variant = "cmp_before_{}_idle".format(kind) if binary == "before" else "{}_idle".format(kind)
    idle = {int(x["round"]): x["cpu_s"] for x in rows if x["variant"] == idle_variant}
    out = []
    for x in rows:
        if x["variant"] != "cmp_{}_{}".format(binary, kind):
            continue
        y = dict(x)
        y.update(accounting(x))
        y["idle_cpu_s"] = idle.get(int(x["round"]))
        y["share"] = x["events"] / y["expected"]
        y["events_per_s"] = x["events"] / x["loop_s"]
        y["total_us"] = x["cpu_s"] / x["events"] * 1e6 if x["events"] else None
        y["marginal_us"] = ((x["cpu_s"] - y["idle_cpu_s"]) / x["events"] * 1e6
                            if x["events"] and y["idle_cpu_s"] is not None else None)
        out.append(y)
    return out


def before_now_section(say, rows, c):
    if not c.get("before_label") or not any(x["variant"].startswith("cmp_") for x in rows):
        return
    t = c["compare_threads"]
    label = binary_labels(c)
    n_rounds = len({int(x["round"]) for x in rows})
    say("### Before vs now, {} target threads (default ring buffer, medians of {})".format(
        t, plural(n_rounds, "round")))
    say("")
    say("The same trace (`--jsonl`, and text) of the same target build at {} target threads, with the binary "
        "before issue 16 and the current one, each run in a fresh target, in the same rotated rounds as the rest. "
        "**Kept**: `summary.events` (the output holds exactly those in every run below unless said); **lost**: "
        "`summary.lost`. Marginal CPU subtracts the same binary's idle run of the same round.".format(t))
    say("")
    say("| output | binary | target calls | events kept | of 4 × calls | events kept/s | lost (`summary.lost`) | "
        "runs with loss | windows not complete | helper CPU | µs CPU per event, total | µs per event, marginal |")
    say("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    table = {}
    for kind in ("jsonl", "text"):
        for binary in ("before", "now"):
            r = cmp_runs(rows, binary, kind)
            table[binary, kind] = r
            if not r:
                continue
            say("| {} | {} | {} | {} | {:.1f} % | {} | {} | {} of {} | {} | {} s | {} | {} |".format(
                "`--jsonl`" if kind == "jsonl" else "text", label[binary], fmt_int(med(r, "calls")),
                fmt_int(med(r, "events")), med(r, "share") * 100, fmt_int(med(r, "events_per_s")),
                fmt_int(med(r, "lost")), sum(1 for x in r if x["lost"] > 0), len(r), fmt_int(med(r, "incomplete")),
                fmt(med(r, "cpu_s"), 3), fmt(med(r, "total_us")), fmt(med(r, "marginal_us"))))
    say("")
    # now over before, per round
    parts = []
    for kind in ("jsonl", "text"):
        now = {int(x["round"]): x for x in table.get(("now", kind), [])}
        before = {int(x["round"]): x for x in table.get(("before", kind), [])}
        common = sorted(set(now) & set(before))
        if not common:
            continue
        kept = [now[n]["events"] / before[n]["events"] for n in common if before[n]["events"]]
        share = [now[n]["share"] - before[n]["share"] for n in common]
        more = sum(1 for n in common if now[n]["events"] > before[n]["events"])
        cpu = [now[n]["marginal_us"] / before[n]["marginal_us"] for n in common
               if now[n]["marginal_us"] and before[n]["marginal_us"] and before[n]["marginal_us"] > 0]
        parts.append(
            "{}: now kept more events than before in **{} of {}** rounds (now ÷ before, per round: median {}×, "
            "range {}×; share of 4 × calls {:+.1f} points on the median){}.".format(
                "`--jsonl`" if kind == "jsonl" else "Text", more, len(common), fmt(median(kept)) if kept else "—",
                range_text(kept, 2), median(share) * 100,
                "; marginal CPU per event now ÷ before: median {}×".format(fmt(median(cpu))) if cpu else ""))
    say(" ".join(parts))
    say("")
    say("Each binary's probes cost the target differently, so the target made a different number of calls "
        "under each; kept events are compared as counts and as a share of each run's own 4 × calls.")
    say("")
    say("**Every event kept or counted.** Ground truth: every call is 4 events, so kept + lost − 4 × calls "
        "(\"difference\") would be 0 if `summary.lost` counted events only. It counts ring-buffer records, "
        "and every window has a fifth one, its hidden end record: with loss, the difference is the end records "
        "lost, which the `--jsonl` windows show (`end_record_lost`, plus `summary.windows_without_records`, "
        "windows of which not one record came through). **Silent** = difference − end records lost: events "
        "neither kept nor counted, which must be 0. Text output does not say which windows lost their end "
        "record; there the difference must lie between 0 and one per window.")
    say("")
    accounting_table(say, rows, [v for v in ("cmp_before_jsonl", "cmp_now_jsonl", "cmp_before_text",
                                             "cmp_now_text")], label)
    say("")
    say(accounting_verdict(rows, ["cmp_before_jsonl", "cmp_now_jsonl", "cmp_before_text", "cmp_now_text"], label))
    say("")


def binary_labels(c):
    return {"now": "now, {}".format(c["commit"]), "before": "before, {}".format(c.get("before_label"))}


def signed(x):
    return "0" if x == 0 else "{:+,}".format(int(x))


def accounting_table(say, rows, variants, label):
    say("| round | variant | binary | target calls | 4 × calls | kept | lost | difference | end records lost | "
        "silent | windows opened | without records | not complete | windows shown that lost events | of them "
        "not marked |")
    say("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for x in sorted((x for x in rows if x["variant"] in variants),
                    key=lambda x: (variants.index(x["variant"]), x["round"])):
        a = accounting(x)
        say("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
            int(x["round"]), x["variant"], x["binary"], fmt_int(x["calls"]),
            fmt_int(a["expected"]), fmt_int(x["events"]), fmt_int(a["lost"]), signed(a["gap"]),
            fmt_int(a["end_lost"]) if a["end_lost"] is not None else (
                "in text: not shown" if x["kind"] == "text" else "unknown"),
            ("**{}**".format(signed(a["silent"])) if a["silent"] else "0") if a["silent"] is not None else (
                "within 0…windows" if a["in_bounds"] else "**outside 0…windows**"),
            fmt_int(x["windows_opened"]), fmt_int(x["windows_without_records"]), fmt_int(x["incomplete"]),
            fmt_int(x["lossy_windows"]), fmt_int(x["unmarked_windows"])))


def accounting_verdict(rows, variants, label):
    parts = []
    for v in variants:
        r = [x for x in rows if x["variant"] == v]
        if not r:
            continue
        acc = [accounting(x) for x in r]
        binary = label[r[0]["binary"]]
        if r[0]["kind"] == "text":
            zero = sum(1 for a in acc if a["gap"] == 0)
            ok = sum(1 for a in acc if a["in_bounds"])
            parts.append("- {}, text: difference 0 in {} of {} runs, within 0…one per window in {} of {}{}.".format(
                binary, zero, len(r), ok, len(r), "" if ok == len(r) else " (**a run outside: events missing "
                "uncounted, or counted twice**)"))
        else:
            known = [a for a in acc if a["silent"] is not None]
            silent0 = sum(1 for a in known if a["silent"] == 0)
            unmarked = sum(int(x["unmarked_windows"] or 0) for x in r)
            parts.append("- {}, `--jsonl`: silent 0 in **{} of {}** runs{}{}; windows in the output that lost events "
                         "and are not marked incomplete with `possible_loss`: {}.".format(
                             binary, silent0, len(r),
                             "" if len(known) == len(r) else " ({} runs with windows not shown: not decomposed)".format(
                                 len(r) - len(known)),
                             "" if silent0 == len(known) else " (**silent loss: {}**)".format(
                                 ", ".join(signed(a["silent"]) for a in known if a["silent"])),
                             "**none**" if unmarked == 0 else "**{}**".format(fmt_int(unmarked))))
    return "\n".join(parts)


def small_ring_section(say, rows, c):
    variants = [v for v in ("ring_before", "ring_now") if any(x["variant"] == v for x in rows)]
    if not variants:
        return
    label = binary_labels(c)
    n_rounds = len({int(x["round"]) for x in rows})
    say("### Loss accounting under pressure: {} target threads, `--jsonl --ringbuf-bytes {}`".format(
        c["compare_threads"], c["small_ring"]))
    say("")
    say("A ring buffer of {:,} bytes (the default is 4 MiB) cannot hold what {} threads make between two drains, "
        "so most records are lost: what matters here is that every one is accounted for. Medians of {}:".format(
            c["small_ring"], c["compare_threads"], plural(n_rounds, "round")))
    say("")
    say("| binary | target calls | 4 × calls | events kept | of 4 × calls | lost (`summary.lost`) | difference | "
        "end records lost | silent (every run) | windows opened | windows in the output | without records | "
        "not complete | windows that lost events, not marked (every run) |")
    say("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for v in variants:
        r = [x for x in rows if x["variant"] == v]
        acc = [accounting(x) for x in r]
        say("| {} | {} | {} | {} | {:.1f} % | {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
            label[r[0]["binary"]], fmt_int(median([x["calls"] for x in r])),
            fmt_int(median([a["expected"] for a in acc])), fmt_int(median([x["events"] for x in r])),
            median([x["events"] / a["expected"] for x, a in zip(r, acc)]) * 100,
            fmt_int(median([a["lost"] for a in acc])), signed(median([a["gap"] for a in acc])),
            fmt_int(median([a["end_lost"] for a in acc if a["end_lost"] is not None]) if any(
                a["end_lost"] is not None for a in acc) else None),
            range_text([a["silent"] for a in acc]),
            fmt_int(median([x["windows_opened"] for x in r if x["windows_opened"] is not None]) if any(
                x["windows_opened"] is not None for x in r) else None),
            fmt_int(median([x["output_windows"] for x in r])),
            fmt_int(median([x["windows_without_records"] for x in r if x["windows_without_records"] is not None])
                    if any(x["windows_without_records"] is not None for x in r) else None),
            fmt_int(median([x["incomplete"] for x in r])),
            range_text([x["unmarked_windows"] for x in r])))
    say("")
    say(accounting_verdict(rows, variants, label))
    say("")
    notes = []
    for v in variants:
        r = [x for x in rows if x["variant"] == v]
        false_alarms = sum(int(x["marked_no_loss"] or 0) for x in r)
        unknown = median([x["lost_unknown_windows"] for x in r if x["lost_unknown_windows"] is not None] or [0])
        wwr = median([x["windows_without_records"] for x in r if x["windows_without_records"] is not None] or [0])
        notes.append("- {}: {} windows of the output marked `possible_loss` with all 4 events and nothing lost; "
                     "a median {} windows with `lost_events` null (their end record and its result both gone: "
                     "status `unknown`); a median {} windows counted in `windows_without_records` only (not one "
                     "record, nor their result, came through: they are not in the output).".format(
                         label[r[0]["binary"]], fmt_int(false_alarms), fmt_int(unknown), fmt_int(wwr)))
    say("What else the windows say:")
    say("")
    say("\n".join(notes))
    say("")
    say("Per run:")
    say("")
    accounting_table(say, rows, variants, label)
    say("")


def saw_text(runs, threads):
    """Why the tracers' counts differ, from the figures."""
    parts = []
    b = runs["bpftrace"]
    x = runs["jsonl"] or runs["json"]
    if b and x:
        parts.append(
            "In the same {}-thread loop the target made a median {} calls under bpftrace and {} under xref "
            "(`--jsonl`): each tracer's hit costs the target differently (bpftrace's `uretprobe` swaps the "
            "return address at the entry and traps again in the return trampoline; xref probes the `ret` "
            "instruction itself), so the two did not see the same calls, and events are compared as a share "
            "of each run's own 4 × calls.".format(
                threads, fmt_int(med(b, "calls")), fmt_int(med(x, "calls"))))
        missing_b = median([max(0, r["expected"] - r["events"] - r["lost"]) for r in b])
        lost_b = med(b, "lost")
        if missing_b == 0 and (lost_b or 0) == 0:
            parts.append("bpftrace printed every hit: {} lines, 4 × its calls.".format(fmt_int(med(b, "events"))))
        else:
            parts.append(
                "bpftrace printed a median {} of its 4 × {} hits; {} were reported lost (its \"Lost N events\" "
                "lines: the perf buffer was full), {} missing without a word.".format(
                    fmt_int(med(b, "events")), fmt_int(med(b, "calls")), fmt_int(lost_b), fmt_int(missing_b)))
    for kind in FORMATS:
        r = runs[kind]
        if r and any(y["lost"] > 0 for y in r):
            parts.append(
                "{}: a median {} events lost of {} (counted in `summary.lost`; their windows are "
                "incomplete, or not shown when every event of a window was lost).".format(
                    LABELS[kind], fmt_int(med(r, "lost")), fmt_int(med(r, "expected"))))
    return " ".join(parts)


def load_text(runs, c):
    """How busy the helper was: whether these runs reach its ceiling."""
    busy = {}
    for kind in FORMATS:
        r = runs[kind]
        if r:
            busy[kind] = median([(x["cpu_s"] - x["idle_cpu_s"]) / (x["events"] / x["events_per_s"]) * 100 for x in r])
    if not busy or not runs["bpftrace"] and not any(runs[k] for k in FORMATS):
        return ""
    rates = [med(runs[k], "events_per_s") for k in FORMATS if runs[k]]
    return ("The helper was far from busy: its marginal CPU time was {} of one core over the loop ({}). "
            "The rate is the target's: every event is a uprobe trap, and {} CPUs made {}–{} events/s in these "
            "runs, so they measure the helper's cost per event, and 1 / marginal is its ceiling per core, not "
            "a rate reached here. The user/system split of the CPU time is the kernel's tick sampling; only "
            "the sum is exact.".format(
                "{:.0f}–{:.0f} %".format(min(busy.values()), max(busy.values())),
                ", ".join("{} {:.0f} %".format(k, v) for k, v in busy.items()),
                c["cpus"], fmt_int(min(rates)), fmt_int(max(rates))))


def sweep_text(zero_loss):
    if not zero_loss:
        return "The sweep was not run."
    largest = None
    for t in sorted(zero_loss):
        if not zero_loss[t]:
            break
        largest = t
    if largest is not None and largest == max(zero_loss):
        return ("No loss at any thread count of the sweep, up to **{}** target threads (default ring buffer, "
                "4 MiB).".format(largest))
    if largest is None:
        text = ("Every thread count lost events with the default ring buffer (4 MiB), already at {} "
                "thread{}.".format(min(zero_loss), "" if min(zero_loss) == 1 else "s"))
    else:
        text = ("The largest thread count with zero loss in every round, and at every smaller count, is "
                "**{}** (default ring buffer, 4 MiB).".format(largest))
    above = [t for t in sorted(zero_loss) if zero_loss[t] and largest is not None and t > largest]
    if above:
        text += " (Zero loss again at {}: the target's calls slow down with more threads than CPUs.)".format(
            ", ".join(str(t) for t in above))
    return text


if __name__ == "__main__":
    main(sys.argv)
