#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/gpu/sample_replay.py: what sampling the GPU timeline costs the report's figures, measured
within one run (issue 17 item 1: GPU idle per sync site and copy/compute overlap within 10% of
continuous tracing).

Two runs of one program differ by themselves (on the H200 two continuous runs of a reference
workload differed by up to 41%: tests/gpu/results/2026-12-04-h200-session12), which hides the
error the sampler adds. This script removes that noise: from a recording traced whole
(SYNCSPY_CUPTI_SAMPLE=all, or a run auto left whole) it makes the recording the sampler would
have made of the same run, and compares the report's figures on the two. It measures what
sampling loses (which steps the windows saw, and how the report scales them: report/gpu.c,
GPU-IDLE-4), not what tracing does to the program's timing (sample_compare.sh and the
benchmarks measure that across runs).

The sampler, as cupti/cupti.c implements it (CUPTI-4, CUPTI-5):
  - it switches only at the end of a host sync point (S1-S6 rows, any thread), just after it;
  - the run starts traced, as auto does while launches are rare; here until the steady steps
    start (the report's steady_start_ns): the first sync point from there ends the continuous
    trace, as auto's does once the launch rate exceeds its budget;
  - a window closes at the first sync point at or after its end, and not before two sync points
    have ended since the one that opened it;
  - an off gap lasts OFF ns, and grows in proportion when the window before it was held open
    past ON (the duty cycle stays);
  - while off, CUPTI records nothing: GPU activity that started in an off interval, or whose
    launch (its gpu_api row) was made in one, is dropped with those API rows; each off interval
    becomes a gpu_paused row; the meta says auto sampled (cupti_sample, cupti_windows,
    cupti_pauses, cupti_paused_ns, cupti_traced_ns, cupti_auto_permille = budget / duty).

  sample_replay.py [--syncspy PATH] [--duty D[,D...]] [--phases N]
                   [--windows N | --window-steps K | --on-ms MS] [--keep DIR] [--summary-only]
                   DB|DB.xz|DIR ...

--duty: the share of the run traced (default 0.25, as auto at a 4% estimate against its 1%
budget); several give one replay each. --on-ms: the window length (auto uses 50 ms);
--windows N (default 8): instead, a window length that gives about N windows over the steady
steps (the corpus's loops last 0.01-10 s; 50 ms windows would leave most of them one window or
none): a stress test, windows of a step or two, where the choice of the syncs that open and
close a window weighs most. --window-steps K: windows of K steady steps, as auto's 50 ms hold
for a loop of 1-10 ms steps (5-50), fewer windows. --phases N (default 1): N replays per duty,
the sampling started at N points of one on+off period after the steady steps' start; the mean
difference over them is the sampling's bias, each one's its error.
Recordings already sampled, without GPU rows, or without a steady state are skipped, and said so.
Prints per recording and duty each figure: whole, replayed (the mean over the phases), the
bias and the mean error; then per kind of figure how many have a bias under 10%, the median
bias, how many replays are each within 10% (and within 10% or 1% of the step), the median
error, the figures a replay did not give, and the findings (above info) the replays lost or
added. Exit 0 when it ran, 2 on bad input. Standard library only.
"""

import argparse
import json
import lzma
import os
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sample_figures  # noqa: E402  (beside this script)

SYNC_CLASSES = ("S1", "S2", "S3", "S4", "S5", "S6")  # CUPTI-4: the sync points that switch
AUTO_BUDGET_PERMILLE = 10  # cupti/cupti.c
NO_SWITCH = "no sync point to switch at"  # a phase started after the loop's last one
SWITCH_AFTER_NS = 1  # a switch follows the end of the sync point that made it


class InputError(Exception):
    pass


def schedule(ticks, t_first, t_end, on_ns, off_ns):
    """The off intervals [(start, end)] the sampler leaves, from the sync points' ends (sorted),
    when it starts sampling (T_FIRST: the first sync point from then ends the continuous trace)
    and the run's end (CUPTI-4, as ss_cupti_sample_tick switches). The sampler reads its clock
    after the sync point's row was timed, so every switch lies SWITCH_AFTER_NS after that end:
    the sync that closes a window and the one that opens the next have the timeline off behind
    them, as in a real recording (cupti.c, follow_pauses_locked)."""
    off = []
    sample_off = False
    nxt = t_first
    window_open, window_open_tick = None, None
    off_since = None
    for k, now in enumerate(ticks):
        if now < nxt:
            continue
        if not sample_off and window_open_tick is not None and k - window_open_tick < 2:
            continue  # the window holds until a sync point inside it has ended
        sample_off = not sample_off
        if sample_off:
            phase = off_ns
            held = now - window_open if window_open is not None else 0
            if held > on_ns:
                phase = off_ns * held // on_ns
            off_since = now + SWITCH_AFTER_NS
        else:
            off.append((off_since, now + SWITCH_AFTER_NS))
            window_open, window_open_tick = now, k
            phase = on_ns
        nxt = now + phase
    if sample_off:
        off.append((off_since, max(t_end, off_since)))
    return off


def off_ns(on_ns, duty):
    """The gap after a window of ON_NS that traces DUTY of the time."""
    return int(on_ns * (1 - duty) / duty)


def replay(src, dst, duty, on_ns, start_ns):
    """Writes DST, the sampled recording of SRC: windows of ON_NS traced DUTY of the time, the
    continuous trace ended at the first sync point from START_NS on. Returns the off intervals,
    or a reason (str) to skip it."""
    shutil.copyfile(src, dst)
    db = sqlite3.connect(dst)
    try:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "gpu_activity" not in tables or "gpu_api" not in tables:
            return "no GPU timeline"
        meta = dict(db.execute("SELECT key, value FROM meta"))
        if meta.get("cupti_sample") or meta.get("cupti_pauses") not in (None, "0", 0):
            return "already sampled or paused"
        if not db.execute("SELECT count(*) FROM gpu_activity").fetchone()[0]:
            return "no GPU rows"
        t_first, t_end = db.execute("SELECT min(start_ns), max(end_ns) FROM calls").fetchone()
        if t_first is None:
            return "no calls"
        marks = ",".join("'%s'" % c for c in SYNC_CLASSES)
        ticks = [r[0] for r in db.execute(
            "SELECT end_ns FROM calls WHERE class IN (%s) ORDER BY end_ns" % marks)]
        off = schedule(ticks, start_ns, t_end, on_ns, off_ns(on_ns, duty))
        if not off:
            return NO_SWITCH
        db.execute("CREATE TEMP TABLE off(start_ns INTEGER, end_ns INTEGER)")
        db.executemany("INSERT INTO off VALUES (?, ?)", off)
        in_off = "EXISTS (SELECT 1 FROM temp.off o WHERE %s >= o.start_ns AND %s < o.end_ns)"
        # (the tables' columns named in full: inside the subquery a bare start_ns is off's)
        db.execute("DELETE FROM gpu_activity WHERE %s OR correlation_id IN (SELECT correlation_id"
                   " FROM gpu_api WHERE %s)" % (in_off % (("gpu_activity.start_ns",) * 2),
                                                in_off % (("gpu_api.start_ns",) * 2)))
        db.execute("DELETE FROM gpu_api WHERE " + in_off % (("gpu_api.start_ns",) * 2))
        db.execute("CREATE TABLE IF NOT EXISTS gpu_paused(start_ns INTEGER NOT NULL,"
                   " end_ns INTEGER NOT NULL)")
        db.executemany("INSERT INTO gpu_paused VALUES (?, ?)", off)
        paused = sum(e - s for s, e in off)
        wall = int(meta.get("end_mono_ns", t_end)) - int(meta.get("start_mono_ns", t_first))
        for key, value in (("cupti_sample", "auto"), ("cupti_windows", len(off) + 1),
                           ("cupti_pauses", len(off)), ("cupti_paused_ns", paused),
                           ("cupti_traced_ns", max(0, wall - paused)),
                           ("cupti_auto_permille", int(AUTO_BUDGET_PERMILLE / duty))):
            db.execute("DELETE FROM meta WHERE key = ?", (key,))
            db.execute("INSERT INTO meta VALUES (?, ?)", (key, str(value)))
        db.commit()
        return off
    finally:
        db.close()


def report(syncspy, path):
    run = subprocess.run([syncspy, "report", "--format", "json", path], capture_output=True,
                         text=True)
    if run.returncode != 0:
        raise InputError("%s: syncspy report exited %d: %s" % (path, run.returncode,
                                                                run.stderr.strip()))
    return json.loads(run.stdout)


def findings(rep):
    return {(f.get("rule"), (f.get("site") or "-").split(" ")[0]) for f in rep.get("findings", [])
            if f.get("severity") != "info"}


def recordings(paths):
    for p in paths:
        if os.path.isdir(p):
            for name in sorted(os.listdir(p)):
                if name.endswith(".sqlite") or name.endswith(".sqlite.xz"):
                    yield os.path.join(p, name)
        elif os.path.exists(p):
            yield p
        else:
            raise InputError("%s: no such file or directory" % p)


def kind_of(key):
    return key.split(" ")[0]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--syncspy", default=os.path.join(here, "..", "..", "report", "syncspy"))
    ap.add_argument("--duty", default="0.25")
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--windows", type=int, default=8)
    group.add_argument("--window-steps", type=float)
    group.add_argument("--on-ms", type=float)
    ap.add_argument("--phases", type=int, default=1)
    ap.add_argument("--keep", help="keep the replayed recordings in this directory")
    ap.add_argument("--summary-only", action="store_true")
    ap.add_argument("paths", nargs="+")
    args = ap.parse_args(argv[1:])
    try:
        duties = [float(d) for d in args.duty.split(",")]
    except ValueError:
        sys.stderr.write("sample_replay.py: --duty: not a number list: %s\n" % args.duty)
        return 2
    if any(not 0 < d < 1 for d in duties) or args.windows < 1 or args.phases < 1 or (
            args.window_steps is not None and args.window_steps <= 0):
        sys.stderr.write("sample_replay.py: --duty wants shares in (0, 1), --windows and"
                         " --phases numbers >= 1\n")
        return 2
    on_ns = int(args.on_ms * 1e6) if args.on_ms else None
    work = tempfile.mkdtemp(prefix="sample-replay-")
    rows, lost, added, skipped, compared = [], [], [], [], 0
    out = (lambda *a: None) if args.summary_only else print
    try:
        for path in recordings(args.paths):
            name = os.path.basename(path).split(".sqlite")[0]
            src = path
            if path.endswith(".xz"):
                src = os.path.join(work, name + ".sqlite")
                with lzma.open(path) as f, open(src, "wb") as g:
                    shutil.copyfileobj(f, g)
            whole = report(args.syncspy, src)
            step = {rk.get("rank"): (rk.get("steps") or {}).get("step_ns")
                    for rk in whole.get("ranks", [])}
            if not any(step.values()):
                skipped.append((name, "no steady state"))
                continue
            whole_fig = dict(sample_figures.figures(whole))
            step_ns = max(v for v in step.values() if v)
            spans = [((rk.get("steps") or {}).get("steady_start_ns"),
                      (rk.get("steps") or {}).get("steady_end_ns"))
                     for rk in whole.get("ranks", [])]
            spans = [sp for sp in spans if sp[0] is not None and sp[1] is not None]
            if not spans:
                skipped.append((name, "no steady state"))
                continue
            loop = (min(sp[0] for sp in spans), max(sp[1] for sp in spans))
            for duty in duties:
                values, windows_seen, lost_here, added_here = {}, [], set(), set()
                done, why = [], None  # the phases replayed; why one was not
                for j in range(args.phases):
                    dst = os.path.join(args.keep or work, "%s-replay-%g%s.sqlite" % (
                        name, duty, "-%d" % j if args.phases > 1 else ""))
                    # the window: given, of K steps, or about N over the steady steps
                    window_ns = on_ns or (int(args.window_steps * step_ns) if args.window_steps
                                          else max(1, int((loop[1] - loop[0]) * duty /
                                                          args.windows)))
                    start = loop[0] + int(j / args.phases * (window_ns + off_ns(window_ns, duty)))
                    got = replay(src, dst, duty, window_ns, start)
                    if isinstance(got, str):
                        why = got
                        if os.path.exists(dst) and not args.keep:
                            os.unlink(dst)
                        if got != NO_SWITCH:
                            break  # the recording's, not the phase's
                        continue  # this phase's start came too late in the loop
                    off = got
                    done.append(j)
                    windows_seen.append(len(off) + 1)
                    rep = report(args.syncspy, dst)
                    compared += 1
                    for key, value in sample_figures.figures(rep):
                        values.setdefault(key, {})[j] = value
                    w, s = findings(whole), findings(rep)
                    lost_here |= w - s
                    added_here |= s - w
                    if not args.keep:
                        os.unlink(dst)
                if why and why != NO_SWITCH:
                    skipped.append((name, why))
                    break
                if not done:
                    skipped.append((name, "%s (duty %g)" % (why, duty)))
                    continue
                out("%s duty %g: %s windows of %.1f ms, %d steps of %.3f ms" % (
                    name, duty, "-".join(str(n) for n in sorted({min(windows_seen),
                                                                 max(windows_seen)})),
                    window_ns / 1e6, max((rk.get("steps") or {}).get("steady") or 0
                                         for rk in whole.get("ranks", [])), step_ns / 1e6))
                for key in sorted(set(whole_fig) | set(values)):
                    a = whole_fig.get(key)
                    bs = [values.get(key, {}).get(j) for j in done]
                    diffs = [None if not (isinstance(a, int) and isinstance(b, int)) else
                             0.0 if a == b else (b - a) / a if a else float("inf") for b in bs]
                    rows.append((kind_of(key), a, bs, diffs, step_ns))
                    known = [d for d in diffs if d is not None]
                    given = [b for b in bs if isinstance(b, int)]
                    out("  %-62s %12s %12s %8s %8s" % (
                        key[:62], a, int(statistics.mean(given)) if given else None,
                        "%+.1f%%" % (statistics.mean(known) * 100) if known else "-",
                        "%.1f%%" % (statistics.mean(abs(d) for d in known) * 100)
                        if known else "-"))
                lost += [(name, duty) + f for f in sorted(lost_here)]
                added += [(name, duty) + f for f in sorted(added_here)]
                for f in sorted(lost_here):
                    out("  lost finding: %s at %s" % f)
                for f in sorted(added_here):
                    out("  added finding: %s at %s" % f)
    except (InputError, OSError, sqlite3.DatabaseError, lzma.LZMAError,
            json.JSONDecodeError) as e:
        sys.stderr.write("sample_replay.py: %s\n" % e)
        return 2
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print("# %d replays (duty %s, %s, %d phase%s each at most); %d skipped (below)" % (
        compared, args.duty, "%g ms windows" % args.on_ms if args.on_ms else
        "windows of %g steps" % args.window_steps if args.window_steps else
        "about %d windows over the steady steps" % args.windows, args.phases,
        "s" if args.phases > 1 else "", len(skipped)))
    print("# per figure (workload, duty, key): bias = its mean difference over the phases,")
    print("# error = each phase's difference; near = within 10% or within 1% of the step")
    print("%-24s %6s %10s %12s %10s %10s %10s %8s" % (
        "figure", "n", "|bias|<10%", "median|bias|", "error<10%", "near", "median|e|",
        "missing"))
    for kind in sorted({r[0] for r in rows}):
        rs = [r for r in rows if r[0] == kind]
        biases = [statistics.mean(d for d in r[3]) for r in rs
                  if all(d is not None for d in r[3])]
        errors = [(d, b, r) for r in rs for d, b in zip(r[3], r[2]) if d is not None]
        within = sum(1 for d, b, r in errors if abs(d) <= 0.10)
        near = sum(1 for d, b, r in errors if abs(d) <= 0.10 or abs(b - r[1]) <= 0.01 * r[4])
        missing = sum(1 for r in rs for d in r[3] if d is None)
        print("%-24s %6d %10s %11.1f%% %10s %10s %9.1f%% %8d" % (
            kind, len(rs), "%d/%d" % (sum(1 for x in biases if abs(x) <= 0.10), len(biases)),
            statistics.median(abs(x) for x in biases) * 100 if biases else 0,
            "%d/%d" % (within, len(errors)), "%d/%d" % (near, len(errors)),
            statistics.median(abs(d) for d, b, r in errors) * 100 if errors else 0, missing))
    print("findings above info lost by sampling: %d, added: %d" % (len(lost), len(added)))
    for f in lost:
        print("  lost: %s duty %g: %s at %s" % f)
    for f in added:
        print("  added: %s duty %g: %s at %s" % f)
    reasons = {}
    for name, why in skipped:
        reasons.setdefault(why, []).append(name)
    for why, names in sorted(reasons.items()):
        print("skipped (%s): %d" % (why, len(names)))
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends it quietly
    sys.exit(main(sys.argv))
