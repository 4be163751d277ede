#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/gpu/test_check_cupti.py: CPU self-test of check_cupti.py with a hand-made recording of
examples/cuda/copies_syncs (host calls, CUPTI's API records and GPU rows, as syncspy writes
them: docs/schema.md, docs/cupti.md), no GPU.

The recording as the H200 gives it must pass every check; then each alteration must fail its
check: a kernel that starts before its launch call, a stream sync that returns before the kernel
it waited for ended, a pageable copy reported pinned, kernel names left mangled, CUPTI off.
Run from anywhere: python3 tests/gpu/test_check_cupti.py
"""
import os
import sqlite3
import sys

from selftest import SelfTest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "check_cupti.py")
TID, STREAM_A, STREAM_B = 100, 1000, 2000
APIS = ["cudaMemcpyAsync", "__cudaLaunchKernel", "cudaEventRecord", "cudaStreamWaitEvent",
        "cudaStreamSynchronize", "cudaEventSynchronize", "cudaMemcpy"]


def make(path, kernel_late=0, sync_early=0, pinned_kind="pinned", demangled=True, cupti="on"):
    db = sqlite3.connect(path)
    db.executescript("""
        CREATE TABLE meta(key TEXT, value);
        CREATE TABLE apis(id INTEGER PRIMARY KEY, name TEXT);
        CREATE TABLE calls(id INTEGER PRIMARY KEY, tid INTEGER, api_id INTEGER, class TEXT,
                           start_ns INTEGER, end_ns INTEGER, stream INTEGER);
        CREATE TABLE gpu_api(correlation_id INTEGER, layer TEXT, cbid INTEGER, tid INTEGER,
                             start_ns INTEGER, end_ns INTEGER, name TEXT, cupti_tid INTEGER);
        CREATE TABLE gpu_activity(id INTEGER PRIMARY KEY, kind TEXT, start_ns INTEGER,
                                  end_ns INTEGER, device INTEGER, stream_id INTEGER,
                                  correlation_id INTEGER, bytes INTEGER, copy_kind INTEGER,
                                  src_kind TEXT, dst_kind TEXT, detail INTEGER, name TEXT,
                                  grid TEXT, block TEXT, symbol TEXT);
    """)
    db.execute("INSERT INTO meta VALUES ('cupti', ?)", (cupti,))
    db.executemany("INSERT INTO apis VALUES (?, ?)", list(enumerate(APIS, 1)))
    api = {name: i for i, name in enumerate(APIS, 1)}
    corr = [0]

    def call(name, cls, start, end, stream, cupti_name):
        db.execute("INSERT INTO calls(tid, api_id, class, start_ns, end_ns, stream)"
                   " VALUES (?,?,?,?,?,?)", (TID, api[name], cls, start, end, stream))
        corr[0] += 1
        db.execute("INSERT INTO gpu_api VALUES (?, 'runtime', 0, ?, ?, ?, ?, 7)",
                   (corr[0], TID, start + 1000, end - 500, cupti_name))
        return corr[0]

    def gpu(kind, start, end, stream, correlation, **extra):
        cols = ["kind", "start_ns", "end_ns", "device", "stream_id", "correlation_id"] + list(extra)
        db.execute("INSERT INTO gpu_activity(%s) VALUES (%s)" % (", ".join(cols), ", ".join("?" * len(cols))),
                   [kind, start, end, 0, stream, correlation] + list(extra.values()))

    name, symbol = ("combine(int const*, int*)", "_Z7combinePKiPi") if demangled else \
        ("_Z7combinePKiPi", "_Z7combinePKiPi")
    for i in range(20):
        t = 1000000000 + i * 1000000
        c1 = call("cudaMemcpyAsync", "S5", t, t + 60000, STREAM_A, "cudaMemcpyAsync_v3020")
        gpu("memcpy", t + 5000, t + 60000, 7, c1, bytes=4 << 20, copy_kind=1, src_kind="pageable",
            dst_kind="device")
        c2 = call("cudaMemcpyAsync", "E1", t + 61000, t + 65000, STREAM_A, "cudaMemcpyAsync_v3020")
        gpu("memcpy", t + 62000, t + 100000, 7, c2, bytes=4 << 20, copy_kind=1,
            src_kind=pinned_kind, dst_kind="device")
        c3 = call("__cudaLaunchKernel", "E1", t + 66000, t + 70000, STREAM_A, "cudaLaunchKernel_v7000")
        gpu("kernel", t + 100000, t + 150000, 7, c3, name=name, symbol=symbol)
        c4 = call("cudaEventRecord", "E2", t + 71000, t + 72000, STREAM_A, "cudaEventRecord_v3020")
        gpu("event", t + 150000, t + 150000, 7, c4, detail=1)
        call("cudaStreamWaitEvent", "E3", t + 73000, t + 74000, STREAM_B, "cudaStreamWaitEvent_v3020")
        c6 = call("__cudaLaunchKernel", "E1", t + 75000, t + 80000, STREAM_B, "cudaLaunchKernel_v7000")
        gpu("kernel", (t + 76000 - kernel_late) if i == 3 and kernel_late else t + 150000,
            t + 190000, 8, c6, name=name, symbol=symbol)
        c7 = call("cudaStreamSynchronize", "S2", t + 81000, t + 200000 - (sync_early if i == 5 else 0),
                  STREAM_B, "cudaStreamSynchronize_v3020")
        gpu("sync", t + 82000, t + 199000, 8, c7, detail=3)
        call("cudaEventSynchronize", "S3", t + 201000, t + 202000, None, "cudaEventSynchronize_v3020")
        c9 = call("cudaMemcpy", "S4", t + 203000, t + 240000, 1, "cudaMemcpy_v3020")
        gpu("memcpy", t + 210000, t + 230000, 9, c9, bytes=4 << 20, copy_kind=2, src_kind="device",
            dst_kind="pageable")
    db.commit()
    db.close()


cases = SelfTest(SCRIPT, make)

cases.expect("the recording the H200 gives passes", 0, ["PASS  cupti: every cudaStreamSynchronize",
                                                  "PASS  cupti: 40 kernels"])
cases.expect("a kernel before its launch call fails", 1,
       ["FAIL  cupti: every kernel starts after its launch call"], kernel_late=2000)
cases.expect("a sync returning before its work ended fails", 1,
       ["FAIL  cupti: every cudaStreamSynchronize returns after the GPU finished"], sync_early=20000)
cases.expect("pinned copies reported pageable fail", 1,
       ["FAIL  cupti: 20 copies from pageable memory, 20 from pinned"], pinned_kind="pageable")
cases.expect("mangled kernel names fail", 1, ["FAIL  cupti: kernel names demangled"], demangled=False)
cases.expect("CUPTI off fails", 1, ["FAIL  cupti: meta.cupti is on"], cupti="off: no driver")
sys.exit(cases.exit_status())
