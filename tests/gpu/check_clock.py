#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/gpu/check_clock.py: checks that a sampled GPU timeline (SYNCSPY_CUPTI_SAMPLE=auto with
CUPTI detached between windows, docs/cupti.md CUPTI-5 and CUPTI-8) stays on the host's clock
after each re-attach, on a GPU machine (issue 17 item 1).

  check_clock.py DB

The database must have been recorded with the timeline paused at least once (gpu_paused rows).
For each recording window (the time between two pauses), per window:
  - every kernel starts after the start of the CUPTI launch record of the same correlation id;
  - each CUPTI launch record (runtime or driver) starts within 50 us of a launch call the shim
    recorded on the same thread (before it where the shim recorded the driver call beneath a
    runtime one) (CUPTI's thread ids mapped to the host's: one time axis).
Checks the windows after the first re-attach in full (>= 99% of launch records matched, no
kernel before its launch) and prints one line per window. Exits 1 on any failure."""
import os
import sqlite3
import sys

if len(sys.argv) != 2 or not os.path.isfile(sys.argv[1]):
    print("usage: check_clock.py DB (an existing database)", file=sys.stderr)
    sys.exit(2)
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
failures = 0


def check(name, ok, detail=""):
    global failures
    print(("PASS" if ok else "FAIL") + "  clock: " + name + (f"  ({detail})" if detail else ""))
    failures += not ok


tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
if not {"gpu_activity", "gpu_api", "gpu_paused"} <= tables:
    check("gpu_activity, gpu_api and gpu_paused tables present", False, ", ".join(sorted(tables)))
    sys.exit(1)
pauses = db.execute("SELECT start_ns, end_ns FROM gpu_paused ORDER BY start_ns").fetchall()
check("the timeline was paused and re-attached at least once", len(pauses) >= 1 and
      all(e is not None for _, e in pauses[:1]), f"{len(pauses)} pauses")
# windows: [-inf, p0.start), [p0.end, p1.start), ..., [pN.end, +inf)
edges = [(None, pauses[0][0] if pauses else None)]
for i, (_, end) in enumerate(pauses):
    nxt = pauses[i + 1][0] if i + 1 < len(pauses) else None
    if end is not None:
        edges.append((end, nxt))

launch_calls = "(SELECT c.tid, c.start_ns FROM calls c JOIN apis p ON p.id = c.api_id" \
               " WHERE p.name LIKE '%aunch%')"
reattached_launches = reattached_matched = reattached_late = 0
for n, (lo, hi) in enumerate(edges):
    where = "(a.name LIKE 'cudaLaunch%' OR a.name LIKE 'cuLaunch%')"
    args = []
    if lo is not None:
        where += " AND a.start_ns >= ?"
        args.append(lo)
    if hi is not None:
        where += " AND a.start_ns < ?"
        args.append(hi)
    launches = db.execute("SELECT count(*) FROM gpu_api a WHERE " + where, args).fetchone()[0]
    matched = db.execute(
        "SELECT count(*) FROM gpu_api a WHERE " + where + " AND EXISTS (SELECT 1 FROM " +
        launch_calls + " h WHERE h.tid = a.tid AND a.start_ns BETWEEN h.start_ns - 50000"
        " AND h.start_ns + 50000)", args).fetchone()[0]
    late = db.execute(
        "SELECT count(*) FROM gpu_activity g JOIN gpu_api a USING (correlation_id) WHERE " +
        where + " AND g.kind = 'kernel' AND g.start_ns < a.start_ns", args).fetchone()[0]
    print(f"      window {n}: {launches} launch records, {matched} within 50 us of a host"
          f" launch call, {late} kernels before their launch")
    if n >= 1:
        reattached_launches += launches
        reattached_matched += matched
        reattached_late += late
check("after a re-attach, >= 99% of CUPTI's launch records start within 50 us of the host's"
      " launch call on the same thread", reattached_launches > 0 and
      reattached_matched >= 0.99 * reattached_launches,
      f"{reattached_matched} of {reattached_launches}")
check("after a re-attach, no kernel starts before its launch record", reattached_launches > 0 and
      reattached_late == 0, reattached_late)
sys.exit(1 if failures else 0)
