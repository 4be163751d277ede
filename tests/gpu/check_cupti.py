#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/gpu/check_cupti.py: checks a database recorded with SYNCSPY_CUPTI=1 from
examples/cuda/copies_syncs (docs/cupti.md), on a GPU machine.

  check_cupti.py DB

Checks: meta.cupti is 'on'; the GPU reported the program's 40 kernels and its 60 copies
(40 H2D async, 20 D2H); the pageable H2D copies show as pageable and the pinned ones as pinned;
every kernel, copy, memset and sync took a positive time; the 20 event records carry the time
the GPU reached them; kernel names are demangled (symbols kept); every kernel ran after the
start of the host call that launched it; CUPTI's launch records lie just after the host's
launch calls on the same thread (one time axis, thread ids mapped); every
cudaStreamSynchronize returned after the end of the GPU work queued on its stream before it.
Prints one line per check, exits 1 on any failure."""
import os
import sqlite3
import sys

if len(sys.argv) != 2 or not os.path.isfile(sys.argv[1]):
    print("usage: check_cupti.py DB (an existing database)", file=sys.stderr)
    sys.exit(2)
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
failures = 0


def check(name, ok, detail=""):
    global failures
    print(("PASS" if ok else "FAIL") + "  cupti: " + name + (f"  ({detail})" if detail else ""))
    failures += not ok


def one(sql):
    return db.execute(sql).fetchone()[0]


status = one("SELECT value FROM meta WHERE key = 'cupti'")
check("meta.cupti is on", status == "on", status)
tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
if "gpu_activity" not in tables:
    check("gpu_activity table present", False)
    sys.exit(1)
kernels = one("SELECT count(*) FROM gpu_activity WHERE kind = 'kernel'")
check("40 kernels", kernels == 40, kernels)
copies = one("SELECT count(*) FROM gpu_activity WHERE kind = 'memcpy'")
check("60 copies", copies == 60, copies)
pageable = one("SELECT count(*) FROM gpu_activity WHERE kind = 'memcpy' AND src_kind = 'pageable'")
pinned = one("SELECT count(*) FROM gpu_activity WHERE kind = 'memcpy' AND src_kind = 'pinned'")
check("20 copies from pageable memory, 20 from pinned", (pageable, pinned) == (20, 20),
      f"{pageable} pageable, {pinned} pinned")
# an event row is an instant (when the GPU reached it): start = end
bad_times = one("SELECT count(*) FROM gpu_activity WHERE kind != 'event' AND end_ns <= start_ns")
check("every kernel, copy, memset and sync has a positive duration", bad_times == 0, bad_times)
events = one("SELECT count(*) FROM gpu_activity WHERE kind = 'event' AND start_ns > 0")
check("20 event records, each with the time the GPU reached it", events == 20, events)
names = one("SELECT count(*) FROM gpu_activity WHERE kind = 'kernel' AND name LIKE '%(%'"
            " AND symbol LIKE '\\_Z%' ESCAPE '\\'")
check("kernel names demangled, symbols kept", names == kernels, f"{names} of {kernels}")
# kernel after its launch: the API record of the same correlation id started before the kernel
late = one("SELECT count(*) FROM gpu_activity g JOIN gpu_api a USING (correlation_id)"
           " WHERE g.kind = 'kernel' AND g.start_ns < a.start_ns")
joined = one("SELECT count(*) FROM gpu_activity g JOIN gpu_api a USING (correlation_id)"
             " WHERE g.kind = 'kernel'")
check("every kernel starts after its launch call", joined == kernels and late == 0,
      f"{joined} joined, {late} before their call")
# one time axis: each launch CUPTI saw starts within 50 us after a host launch call (CUPTI's thread ids
# are its own: the writer maps them to the host's, gpu_api.tid = calls.tid)
host = one("SELECT count(*) FROM gpu_api a WHERE a.name LIKE 'cudaLaunchKernel%' AND EXISTS"
           " (SELECT 1 FROM calls c JOIN apis p ON p.id = c.api_id"
           "  WHERE p.name = '__cudaLaunchKernel' AND c.tid = a.tid"
           "  AND a.start_ns BETWEEN c.start_ns AND c.start_ns + 50000)")
check("CUPTI's launch records start within 50 us after the host's launch calls, on the same"
      " thread (one time axis)", host == 40, host)
# A sync ends after the work it waited for: each cudaStreamSynchronize(B) returns after the end
# of every kernel and copy queued on B before it (the GPU rows' streams are CUPTI's ids: each
# is tied to a host stream through its launch call, gpu_api -> calls on the same thread).
work = db.execute(
    "SELECT g.stream_id, g.end_ns, a.start_ns, c.stream FROM gpu_activity g"
    " JOIN gpu_api a USING (correlation_id) JOIN calls c ON c.tid = a.tid"
    " AND a.start_ns BETWEEN c.start_ns AND c.start_ns + 50000"
    " WHERE g.kind IN ('kernel', 'memcpy') AND c.stream IS NOT NULL").fetchall()
syncs = db.execute("SELECT c.stream, c.start_ns, c.end_ns FROM calls c JOIN apis p"
                   " ON p.id = c.api_id WHERE p.name = 'cudaStreamSynchronize'").fetchall()
early = checked = 0
for stream, start, end in syncs:
    before = [w_end for _, w_end, api_start, host_stream in work
              if host_stream == stream and api_start < start]
    if before:
        checked += 1
        early += end < max(before)
check("every cudaStreamSynchronize returns after the GPU finished the work queued before it",
      checked == 20 and early == 0, f"{checked} syncs with work, {early} returned early")
sys.exit(1 if failures else 0)
