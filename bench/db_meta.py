#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/db_meta.py DATABASE: what a recording did, as key=value words on one line, for the
benchmarks' raw lines (bench/reference_overhead.sh, bench/reference_ab.sh): its calls, its sync
points' stacks and their cost, the writer's CPU time, CUPTI's windows, switches and traced
time (docs/schema.md's meta keys; a key the recording lacks is left out). Read-only; prints
nothing for a file that is not a readable recording."""
import sqlite3
import sys

KEYS = ("stacks_taken", "stack_cost_native_ns", "stack_cost_python_ns", "stacks_repeated",
        "stack_cost_repeated_ns", "writer_cpu_ns", "capture_skipped_calls", "cupti_sample",
        "cupti_windows", "cupti_unsynced_closes", "cupti_detaches", "cupti_detach_deferrals", "cupti_detach_skips", "cupti_detach_ns", "cupti_attaches",
        "cupti_attach_ns", "cupti_traced_ns", "cupti_paused_ns", "cupti_auto_permille",
        "cupti_auto_measured_permille", "native_stacks_libgcc_sites")


def main(path):
    try:
        db = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
        meta = dict(db.execute("SELECT key, value FROM meta"))
        calls = db.execute("SELECT count(*) FROM calls").fetchone()[0]
    except sqlite3.Error:
        return 0
    print(" ".join(["calls=%d" % calls] + ["%s=%s" % (k, str(meta[k]).replace(" ", "_"))
                                           for k in KEYS if k in meta]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
