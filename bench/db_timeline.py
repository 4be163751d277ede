#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/db_timeline.py DB [BUCKET_MS]: when a recording's GPU timeline was on, beside what the
program did meanwhile, for reading where a sampled run's cost went (issue 17 item 1).

Per bucket of BUCKET_MS (default 50) from the first recorded call: calls, sync points (S1-S7),
kernels that started on the GPU then (CUPTI's rows), and the share of the bucket the timeline
was off (gpu_paused). Then the sync points per second in buckets wholly on against those wholly
off, after the first sync point of the loop (the first bucket with more than MIN_SYNCS, default
3): in a loop with a sync per step, the step rate traced against untraced, what CUPTI-6 measures
inside the shim. Reads the database only (Python's sqlite3)."""
import sqlite3
import sys


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    bucket = int(float(sys.argv[2]) * 1e6) if len(sys.argv) > 2 else 50_000_000
    db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
    meta = dict(db.execute("SELECT key, value FROM meta WHERE key LIKE 'cupti%'"))
    print("# " + " ".join("%s=%s" % kv for kv in sorted(meta.items())))
    t0 = db.execute("SELECT min(start_ns) FROM calls").fetchone()[0]
    t1 = db.execute("SELECT max(end_ns) FROM calls").fetchone()[0]
    if t0 is None:
        print("no calls")
        return 1
    n = (t1 - t0) // bucket + 1
    calls, syncs, kernels, off = [0] * n, [0] * n, [0] * n, [0] * n
    for start, sync in db.execute(
            "SELECT c.start_ns, k.sync_point FROM calls c JOIN classes k ON k.class = c.class"):
        calls[(start - t0) // bucket] += 1
        syncs[(start - t0) // bucket] += sync
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "gpu_activity" in tables:
        for (start,) in db.execute("SELECT start_ns FROM gpu_activity WHERE kind = 'kernel' AND "
                                   "start_ns >= ? AND start_ns <= ?", (t0, t1)):
            kernels[(start - t0) // bucket] += 1
    if "gpu_paused" in tables:
        for start, end in db.execute("SELECT start_ns, coalesce(end_ns, ?) FROM gpu_paused",
                                     (t1,)):
            for i in range(max(0, (start - t0) // bucket), min(n, (end - t0) // bucket + 1)):
                lo, hi = t0 + i * bucket, t0 + (i + 1) * bucket
                off[i] += max(0, min(hi, end) - max(lo, start))
    print("%8s %7s %6s %7s %5s" % ("ms", "calls", "syncs", "kernels", "off%"))
    for i in range(n):
        if calls[i] or kernels[i]:
            print("%8d %7d %6d %7d %5.0f" % (i * bucket // 1_000_000, calls[i], syncs[i],
                                            kernels[i], 100.0 * off[i] / bucket))
    min_syncs = 3
    first = next((i for i in range(n) if syncs[i] > min_syncs), None)
    if first is None:
        return 0
    on = [syncs[i] for i in range(first, n - 1) if off[i] == 0]
    paused = [syncs[i] for i in range(first, n - 1) if off[i] >= bucket]
    rate = lambda v: sum(v) / (len(v) * bucket / 1e9) if v else float("nan")
    print("sync points per s from %d ms: on %.0f (%d buckets), off %.0f (%d buckets)" % (
        first * bucket // 1_000_000, rate(on), len(on), rate(paused), len(paused)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
