#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/gpu/test_check_clock.py: CPU self-test of check_clock.py with a hand-made sampled
recording (three windows with two pauses between, as SYNCSPY_CUPTI_SAMPLE=auto with CUPTI
detached leaves it: docs/cupti.md CUPTI-8), no GPU.

The recording as the H200 gives it since the correlation-id fix must pass; then each alteration
must fail its check: correlation ids restarting at each attach (what the H200 gave before the
fix: a later window's kernels join an earlier window's launch records), the GPU rows of the
windows after a re-attach shifted by 200 us against the host's clock, and a recording that was
never paused. Run from anywhere: python3 tests/gpu/test_check_clock.py
"""
import os
import sqlite3
import sys

from selftest import SelfTest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "check_clock.py")
TID = 100
STEP_NS = 1000000


def make(path, restart_ids=False, shift_ns=0, paused=True):
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE apis(id INTEGER PRIMARY KEY, name TEXT);
        CREATE TABLE calls(id INTEGER PRIMARY KEY, tid INTEGER, api_id INTEGER, class TEXT,
                           start_ns INTEGER, end_ns INTEGER);
        CREATE TABLE gpu_api(correlation_id INTEGER, layer TEXT, cbid INTEGER, tid INTEGER,
                             start_ns INTEGER, end_ns INTEGER, name TEXT, cupti_tid INTEGER);
        CREATE TABLE gpu_activity(id INTEGER PRIMARY KEY, kind TEXT, start_ns INTEGER,
                                  end_ns INTEGER, device INTEGER, stream_id INTEGER,
                                  correlation_id INTEGER);
        CREATE TABLE gpu_paused(start_ns INTEGER, end_ns INTEGER);
        INSERT INTO apis VALUES (1, '__cudaLaunchKernel'), (2, 'cudaStreamSynchronize');
    """)
    # 30 steps; windows: steps 0-9, 15-19 and 25-29 (paused over 10-14 and 20-24)
    windows = [(0, 10), (15, 20), (25, 30)]
    if paused:
        db.execute("INSERT INTO gpu_paused VALUES (?, ?)", (10 * STEP_NS, 15 * STEP_NS))
        db.execute("INSERT INTO gpu_paused VALUES (?, ?)", (20 * STEP_NS, 25 * STEP_NS))
    for w, (first, last) in enumerate(windows):
        correlation = 1 if restart_ids else (w << 32) + 1
        shift = shift_ns if w > 0 else 0
        for step in range(first, last):
            t = step * STEP_NS
            for k in range(3):  # three launches, then a sync
                start = t + k * 20000
                db.execute("INSERT INTO calls(tid, api_id, class, start_ns, end_ns)"
                           " VALUES (?, 1, 'E1', ?, ?)", (TID, start, start))
                db.execute("INSERT INTO gpu_api VALUES (?, 'runtime', 211, ?, ?, ?,"
                           " 'cudaLaunchKernel_v7000', 7)",
                           (correlation, TID, start + 1000 + shift, start + 5000 + shift))
                db.execute("INSERT INTO gpu_activity(kind, start_ns, end_ns, device, stream_id,"
                           " correlation_id) VALUES ('kernel', ?, ?, 0, 7, ?)",
                           (start + 30000 + shift, start + 90000 + shift, correlation))
                correlation += 1
            db.execute("INSERT INTO calls(tid, api_id, class, start_ns, end_ns)"
                       " VALUES (?, 2, 'S2', ?, ?)", (TID, t + 70000, t + 400000))
    db.commit()
    db.close()


cases = SelfTest(SCRIPT, make)

cases.expect("the recording the H200 gives passes", 0,
       ["PASS  clock: after a re-attach, >= 99%", "PASS  clock: after a re-attach, no kernel",
        "(30 of 30)"])
cases.expect("correlation ids restarting at each attach fail", 1,
       ["FAIL  clock: after a re-attach, no kernel starts before its launch record"],
       restart_ids=True)
cases.expect("GPU rows 200 us off the host's clock after a re-attach fail", 1,
       ["FAIL  clock: after a re-attach, >= 99% of CUPTI's launch records"], shift_ns=200000)
cases.expect("a recording never paused fails", 1,
       ["FAIL  clock: the timeline was paused and re-attached at least once"], paused=False)
sys.exit(cases.exit_status())
