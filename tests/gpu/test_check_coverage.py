#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/gpu/test_check_coverage.py: CPU self-test of check_coverage.py with hand-made databases
(the tables syncspy and its CUPTI module write; docs/schema.md, docs/cupti.md), no GPU.

One recording holds a program call at each level check_coverage.py must tell apart: a runtime
call seen at the runtime level (a shared libcudart), a runtime call of a static runtime seen
through the driver call nested in it, a driver call of a library (cuBLAS-like) seen at the
driver level, and a polling loop stored as one S7 row of 3 queries. It must pass; then each
alteration must fail the right check: a recorded call removed (missed), a call recorded twice
(extra), a kernel the GPU ran with no launch recorded, a stream sync CUPTI saw but syncspy did
not, and a known count that is off.
Run from anywhere: python3 tests/gpu/test_check_coverage.py
"""
import os
import sqlite3
import sys

from selftest import SelfTest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "check_coverage.py")

APIS = [(1, "cudaMemcpyAsync", "runtime", "E1"), (2, "cudaStreamSynchronize", "runtime", "S2"),
        (3, "cuStreamSynchronize", "driver", "S2"), (4, "cuLaunchKernel", "driver", "E1"),
        (5, "cudaEventQuery", "runtime", "S7"), (6, "cuMemcpyHtoDAsync_v2", "driver", "E1"),
        (7, "__cudaLaunchKernel", "runtime", "E1")]
# syncspy's rows: (tid, api_id, class, start, end, dir, count)
CALLS = [
    (7, 1, "E1", 1000, 1300, 1, 1),         # cudaMemcpyAsync, shared runtime
    (7, 3, "S2", 2050, 2450, None, 1),      # static runtime's cudaStreamSynchronize
    (8, 4, "E1", 3000, 3100, None, 1),      # cuBLAS's cuLaunchKernel
    (7, 5, "S7", 4000, 4900, None, 3),      # a loop of 3 cudaEventQuery
    (7, 7, "E1", 5000, 5200, None, 1),      # <<<>>>
]
# CUPTI's API records: (correlation, layer, tid, start, end, name)
GPU_API = [
    (1, "runtime", 77, 1010, 1290, "cudaMemcpyAsync_v3020"),
    (2, "driver", 77, 1020, 1280, "cuMemcpyHtoDAsync_v2"),       # nested: the runtime's own
    (3, "runtime", 77, 2040, 2460, "cudaStreamSynchronize_v3020"),
    (4, "driver", 77, 2060, 2440, "cuStreamSynchronize"),         # nested, recorded by syncspy
    (5, "driver", 88, 3010, 3090, "cuLaunchKernel"),
    (6, "runtime", 77, 4000, 4100, "cudaEventQuery_v3020"),
    (7, "runtime", 77, 4400, 4500, "cudaEventQuery_v3020"),
    (8, "runtime", 77, 4800, 4900, "cudaEventQuery_v3020"),
    (9, "runtime", 77, 5010, 5190, "cudaLaunchKernel_v7000"),
]
# CUPTI's GPU rows: (kind, correlation, detail)
GPU_ACTIVITY = [("memcpy", 1, None), ("sync", 3, 3), ("kernel", 5, None), ("kernel", 9, None)]


def make(path, calls=CALLS, gpu_api=GPU_API, gpu_activity=GPU_ACTIVITY):
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE meta(key TEXT, value);
        INSERT INTO meta VALUES ('cupti', 'on');
        CREATE TABLE apis(id INTEGER PRIMARY KEY, name TEXT, layer TEXT, class TEXT);
        CREATE TABLE dirs(id INTEGER PRIMARY KEY, name TEXT);
        INSERT INTO dirs VALUES (1, 'H2D'), (2, 'D2H'), (6, 'memset');
        CREATE TABLE calls(id INTEGER PRIMARY KEY, tid INTEGER, api_id INTEGER, class TEXT,
                           start_ns INTEGER, end_ns INTEGER, dir INTEGER, count INTEGER);
        CREATE TABLE gpu_api(correlation_id INTEGER, layer TEXT, cbid INTEGER, tid INTEGER,
                             start_ns INTEGER, end_ns INTEGER, name TEXT);
        CREATE TABLE gpu_activity(id INTEGER PRIMARY KEY, kind TEXT, start_ns INTEGER,
                                  end_ns INTEGER, correlation_id INTEGER, detail INTEGER);
    """)
    db.executemany("INSERT INTO apis VALUES (?,?,?,?)", APIS)
    db.executemany("INSERT INTO calls(tid, api_id, class, start_ns, end_ns, dir, count)"
                   " VALUES (?,?,?,?,?,?,?)", calls)
    db.executemany("INSERT INTO gpu_api VALUES (?,?,0,?,?,?,?)", gpu_api)
    db.executemany("INSERT INTO gpu_activity(kind, start_ns, end_ns, correlation_id, detail)"
                   " VALUES (?, 1, 2, ?, ?)", gpu_activity)
    db.commit()
    db.close()


cases = SelfTest(SCRIPT, make)


def expect(label, want_rc, want_text, args=(), **tables):
    """check_coverage.py DB t [ARGS]: the rank label "t" first."""
    cases.expect(label, want_rc, want_text, args=["t"] + list(args), **tables)


expect("a complete recording passes", 0,
       ["PASS  coverage t: every wrapped runtime/driver call CUPTI saw was recorded",
        "7 calls of 5 functions seen", "PASS  coverage t: no call recorded twice",
        "PASS  coverage t: kernels the GPU ran = launch calls recorded  (cupti 2 kernels",
        "PASS  coverage t: stream synchronize records of CUPTI = S2 calls recorded"])
expect("known counts that hold pass", 0, ["PASS  coverage t: launches = 2"],
       args=["--expect", "launches=2,copies=1,stream_syncs=1"])
expect("a known count that is off fails", 1, ["FAIL  coverage t: copies = 2"],
       args=["--expect", "copies=2"])
expect("a call syncspy missed fails", 1,
       ["FAIL  coverage t: every wrapped", "missed: driver/cuLaunchKernel 1",
        "FAIL  coverage t: kernels the GPU ran = launch calls recorded"],
       calls=[c for c in CALLS if c[1] != 4])
expect("a call recorded twice fails", 1,
       ["FAIL  coverage t: no call recorded twice", "runtime/cudaMemcpyAsync 1"],
       calls=CALLS + [(7, 1, "E1", 1005, 1295, 1, 1)])
expect("the static runtime's sync missed fails", 1,
       ["missed: runtime/cudaStreamSynchronize 1",
        "FAIL  coverage t: stream synchronize records of CUPTI = S2 calls recorded"],
       calls=[c for c in CALLS if c[1] != 3])
expect("a call recorded before CUPTI started fails", 1,
       ["FAIL  coverage t: CUPTI saw the process from its first recorded call on"],
       calls=[(7, 7, "E1", -9000, -8800, None, 1)] + CALLS)  # before the window
expect("a call after CUPTI's last record (the exit's teardown) passes", 0,
       ["PASS  coverage t: CUPTI saw the process from its first recorded call on",
        "0 recorded call(s) before CUPTI's window, 1 after it"],
       calls=CALLS + [(7, 7, "E1", 90000000, 90000200, None, 1)])  # after the window
expect("a polling loop short of a query fails", 1,
       ["missed: runtime/cudaEventQuery 1"],
       calls=[c if c[1] != 5 else c[:6] + (2,) for c in CALLS])
sys.exit(cases.exit_status())
