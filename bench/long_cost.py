#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/long_cost.py DATABASE STDERR: the GPU timeline's cost to a long run under the default
sampler (bench/reference_ab.sh's `long` configuration; examples/torch/workload.py _long_run).

STDERR holds the workload's "long_step START END" lines (CLOCK_MONOTONIC ns, the recording's
time axis). A step lying wholly inside one of DATABASE's gpu_paused intervals ran with CUPTI
detached (CUPTI-8): untraced. Every other step was traced, or held an attach or a detach. Prints
one line of key=value words: steps, untraced (how many), traced_share (the traced steps' share
of the loop's time), cost (the mean step against the mean untraced step, - 1, in percent: what
the windows and their switches cost the run, each counted once; the host side's own cost is
the A/B's `host` configuration). Nothing when there are no steps or no untraced step (a file
that is not a recording has no pause); exit 2 with a message when STDERR cannot be read."""
import bisect
import sqlite3
import sys


def main(db_path, err_path):
    steps = []
    try:
        with open(err_path) as err:
            for line in err:
                w = line.split()
                if len(w) == 3 and w[0] == "long_step":
                    steps.append((int(w[1]), int(w[2])))
    except (OSError, ValueError) as e:
        print("long_cost.py: cannot read the steps of %s: %s" % (err_path, e), file=sys.stderr)
        return 2
    try:
        db = sqlite3.connect("file:%s?mode=ro" % db_path, uri=True)
        paused = sorted(db.execute("SELECT start_ns, end_ns FROM gpu_paused"
                                   " WHERE end_ns IS NOT NULL"))
    except sqlite3.Error:
        paused = []
    starts = [p[0] for p in paused]
    untraced = []
    for s, e in steps:
        i = bisect.bisect_right(starts, s) - 1
        untraced.append(i >= 0 and paused[i][1] >= e)
    times = [e - s for s, e in steps]
    base = [t for t, u in zip(times, untraced) if u]
    if not times or not base:
        return 0
    mean_all, mean_base = sum(times) / len(times), sum(base) / len(base)
    traced = sum(t for t, u in zip(times, untraced) if not u)
    print("steps=%d untraced=%d traced_share=%.2f cost=%.2f" % (
        len(times), len(base), 100.0 * traced / sum(times), (mean_all / mean_base - 1) * 100))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("usage: bench/long_cost.py DATABASE STDERR", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
