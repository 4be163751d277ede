#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/gpu/check_coverage.py: is everything the program did seen by syncspy? Cross-checks a
database recorded with SYNCSPY_CUPTI=1 against CUPTI's own records of the same run (issue 3:
the static runtime, cuBLAS and the driver API "fully seen").

  check_coverage.py DB NAME [--expect KEY=N,...]

CUPTI is the oracle: it sees every runtime and driver call and all work the GPU ran, whoever
made it. For the calls that overlap the window in which CUPTI was recording (its first to its
last API record, widened by TOLERANCE_NS), the checks are:

  api     for every runtime and driver function that syncspy wraps (the `apis` table), the
          calls CUPTI saw equal the calls syncspy recorded, per function, where CUPTI's calls
          are counted once per call the program made: a driver record nested in a runtime
          record of the same thread is the runtime's own call, which syncspy records as the
          runtime call (DRIVER-3). Names compare without _v2/_ptsz/_ptds/_vNNNN suffixes.
  kernels kernels the GPU ran (CUPTI, except those of graph launches) = launch calls recorded
  copies  copies the GPU ran = copy calls recorded (H2D, D2H, D2D, H2H, peer)
  memsets memsets the GPU ran = memset calls recorded
  syncs   CUPTI's synchronization records of each type (context, stream, event, stream wait)
          = the recorded calls of that kind (S1, S2, S3, E3)
  start   no recorded call before CUPTI's window: CUPTI started before the first call ran
          (calls after its last record are the exit's teardown, once CUPTI flushed: counted,
          not failed; a static runtime unloads its library then)

--expect KEY=N adds checks of the recorded counts themselves (keys: launches, copies, memsets,
event_syncs, stream_syncs, ctx_syncs), for a program whose counts are known. Prints one
"PASS|FAIL  coverage NAME: ..." line per check and then the per-function table; exits 1 on any
failure, 2 when the database cannot be checked (no CUPTI tables)."""
import bisect
import os
import re
import sqlite3
import sys
from collections import Counter, defaultdict

if len(sys.argv) < 3:
    print(__doc__, file=sys.stderr)
    sys.exit(2)
if not os.path.isfile(sys.argv[1]):
    print("check_coverage: %s: no such database" % sys.argv[1], file=sys.stderr)
    sys.exit(2)
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True)
name = sys.argv[2]
expect = {}
if len(sys.argv) == 5 and sys.argv[3] == "--expect":
    expect = {k: int(v) for k, v in (kv.split("=") for kv in sys.argv[4].split(","))}
failures = 0
lines = []


def check(what, ok, detail=""):
    global failures
    lines.append(("PASS" if ok else "FAIL") + "  coverage %s: %s" % (name, what)
                 + ("  (%s)" % detail if detail else ""))
    failures += not ok


def base(api):
    """cudaMemcpyAsync_ptsz_v7000 -> cudaMemcpyAsync; __cudaLaunchKernel -> cudaLaunchKernel."""
    api = api.lstrip("_")
    while True:
        stripped = re.sub(r"_(v\d+|ptsz|ptds)$", "", api)
        if stripped == api:
            return api
        api = stripped


tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
if not {"gpu_api", "gpu_activity"} <= tables:
    print("check_coverage: %s has no CUPTI tables (meta.cupti: %s)" % (
        sys.argv[1], db.execute("SELECT value FROM meta WHERE key = 'cupti'").fetchone()),
        file=sys.stderr)
    sys.exit(2)

# --- CUPTI's calls, once per call of the program
api_rows = db.execute("SELECT correlation_id, layer, tid, start_ns, end_ns, name FROM gpu_api"
                      " WHERE name IS NOT NULL ORDER BY start_ns").fetchall()
TOLERANCE_NS = 2000  # the two clocks agree within 1 us on the H200; a wrapper brackets its call
window = ((min(r[3] for r in api_rows) - TOLERANCE_NS, max(r[4] for r in api_rows) + TOLERANCE_NS)
          if api_rows else (0, 0))
wrapped = {(layer, base(api)) for api, layer in db.execute(
    "SELECT name, layer FROM apis WHERE layer IN ('runtime', 'driver')")}

# A driver record inside a runtime record of its thread is the runtime's own call (runtime
# records do not nest). The program's calls: runtime records, and the driver records outside.
program_calls = []  # [start, end, runtime key, keys syncspy may have recorded it under]
runtime_by_tid = defaultdict(list)
api_of_correlation = {}
for corr, layer, tid, s, e, api in api_rows:
    if layer == "runtime":
        call = [s, e, ("runtime", base(api)), {("runtime", base(api))}]
        runtime_by_tid[tid].append(call)
        program_calls.append(call)
        api_of_correlation.setdefault(corr, base(api))
starts_by_tid = {tid: [c[0] for c in calls] for tid, calls in runtime_by_tid.items()}
for corr, layer, tid, s, e, api in api_rows:
    if layer != "driver":
        continue
    calls = runtime_by_tid.get(tid, [])
    i = bisect.bisect_right(starts_by_tid.get(tid, []), s) - 1
    if i >= 0 and calls[i][1] >= e:
        # a runtime the program carries statically: syncspy sees the driver call it makes
        calls[i][3].add(("driver", base(api)))
    else:
        program_calls.append([s, e, ("driver", base(api)), {("driver", base(api))}])
        api_of_correlation.setdefault(corr, base(api))
program_calls.sort(key=lambda c: c[0])

# --- syncspy's calls, matched one to one: a recorded call of one of the keys of a program call,
# whose time overlaps it (the wrapper brackets the real call). An S7 row stands for `count`
# queries (SCHEMA-5).
rows_by_key = defaultdict(list)  # key -> [[start, end, capacity]], by start
for layer, api, s, e, n in db.execute(
        "SELECT a.layer, a.name, c.start_ns, c.end_ns, c.count FROM calls c"
        " JOIN apis a ON a.id = c.api_id WHERE a.layer IN ('runtime', 'driver')"
        " ORDER BY c.start_ns"):
    rows_by_key[(layer, base(api))].append([s, e, n])
first_live = defaultdict(int)


def take(key, s, e):
    """Uses one query of the first recorded call of KEY that overlaps [s, e]."""
    rows = rows_by_key.get(key, [])
    i = first_live[key]
    # program calls come in start order: a row used up or ended before s is dead for good
    while i < len(rows) and (rows[i][2] == 0 or rows[i][1] < s - TOLERANCE_NS):
        i += 1
    first_live[key] = i
    for j in range(i, len(rows)):
        if rows[j][0] > e + TOLERANCE_NS:
            return False
        if rows[j][2] > 0 and rows[j][1] >= s - TOLERANCE_NS:
            rows[j][2] -= 1
            return True
    return False


seen = Counter()
missed = []
for s, e, key, keys in program_calls:
    relevant = sorted(k for k in keys if k in wrapped)
    if any(take(k, s, e) for k in relevant):
        seen[key] += 1
    elif key[0] == "runtime":
        missed.append((s, e, key))  # maybe a static runtime's: second pass
    elif relevant:
        missed.append((s, e, key))

# Second pass: a runtime the program carries statically (nvcc's default, cuBLAS's) reports its
# calls to CUPTI but not the driver calls it makes; syncspy records those driver calls (its
# only way in). A runtime call is seen when a recorded driver call lies inside it.
driver_rows = sorted((r[0], r[1], key, r) for key, rows in rows_by_key.items()
                     if key[0] == "driver" for r in rows)
driver_starts = [r[0] for r in driver_rows]
still_missed = Counter()
for s, e, key in missed:
    found = False
    if key[0] == "runtime":
        i = bisect.bisect_left(driver_starts, s - TOLERANCE_NS)
        while i < len(driver_rows) and driver_rows[i][0] <= e + TOLERANCE_NS:
            row = driver_rows[i][3]
            if row[2] > 0 and row[1] <= e + TOLERANCE_NS:
                row[2] -= 1
                found = True
                break
            i += 1
    if found:
        seen[key] += 1
    elif key in wrapped:
        still_missed[key] += 1
missed = still_missed
extra = Counter()
outside = after = 0
for key, rows in rows_by_key.items():
    for s, e, left in rows:
        if left > 0:
            if e < window[0]:  # before CUPTI's first record
                outside += left
            elif s > window[1]:  # after its last: the exit's teardown, once CUPTI flushed
                after += left
            else:
                extra[key] += left
keys = sorted(set(seen) | set(missed) | set(extra))
check("every wrapped runtime/driver call CUPTI saw was recorded",
      not missed and seen,
      "%d calls of %d functions seen; missed: %s" % (
          sum(seen.values()), len(seen),
          ", ".join("%s/%s %d" % (k[0], k[1], n) for k, n in missed.most_common(8)) or "none"))
check("no call recorded twice or without a call of the program",
      not extra, ", ".join("%s/%s %d" % (k[0], k[1], n) for k, n in extra.most_common(8))
      or "none")
# syncspy starts CUPTI before the process's first call runs (ss_first_call): no recorded call
# lies outside CUPTI's window, not even the first.
check("CUPTI saw the process from its first recorded call on", outside == 0,
      "%d recorded call(s) before CUPTI's window, %d after it (at exit, once CUPTI flushed)"
      % (outside, after))

# --- GPU work against the calls that made it
def one(sql, *args):
    return db.execute(sql, args).fetchone()[0] or 0


graph_kernels = sum(1 for (corr,) in db.execute(
    "SELECT correlation_id FROM gpu_activity WHERE kind = 'kernel'")
    if "Graph" in api_of_correlation.get(corr, ""))
kernels = one("SELECT count(*) FROM gpu_activity WHERE kind = 'kernel'") - graph_kernels
launches = one("SELECT count(*) FROM calls c JOIN apis a ON a.id = c.api_id"
               " WHERE (a.name LIKE '%LaunchKernel%' OR a.name LIKE '%LaunchCooperativeKernel%')"
               " AND c.end_ns >= ? AND c.start_ns <= ?", *window)
check("kernels the GPU ran = launch calls recorded", kernels == launches and kernels > 0,
      "cupti %d kernels (+%d of graphs), syncspy %d launches" % (kernels, graph_kernels, launches))
gpu_copies = one("SELECT count(*) FROM gpu_activity WHERE kind = 'memcpy'")
copies = one("SELECT count(*) FROM calls c JOIN dirs d ON d.id = c.dir"
             " WHERE d.name != 'memset' AND c.end_ns >= ? AND c.start_ns <= ?", *window)
check("copies the GPU ran = copy calls recorded", gpu_copies == copies,
      "cupti %d, syncspy %d" % (gpu_copies, copies))
gpu_memsets = one("SELECT count(*) FROM gpu_activity WHERE kind = 'memset'")
memsets = one("SELECT count(*) FROM calls c JOIN dirs d ON d.id = c.dir"
              " WHERE d.name = 'memset' AND c.end_ns >= ? AND c.start_ns <= ?", *window)
check("memsets the GPU ran = memset calls recorded", gpu_memsets == memsets,
      "cupti %d, syncspy %d" % (gpu_memsets, memsets))
# CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_*: 1 event synchronize, 2 stream wait event,
# 3 stream synchronize, 4 context synchronize
# (E3 also holds the waits for a memory value, cuStreamWaitValue*, which CUPTI records as no
# synchronization: only the event waits are compared)
sync_kinds = [("context synchronize", 4, "S1", "%"), ("stream synchronize", 3, "S2", "%"),
              ("event synchronize", 1, "S3", "%"),
              ("stream wait event", 2, "E3", "%StreamWaitEvent%")]
sync_counts = {}
for label, cupti_type, cls, api_like in sync_kinds:
    gpu = one("SELECT count(*) FROM gpu_activity WHERE kind = 'sync' AND detail = ?", cupti_type)
    host = one("SELECT count(*) FROM calls c JOIN apis a ON a.id = c.api_id WHERE c.class = ?"
               " AND a.name LIKE ? AND c.end_ns >= ? AND c.start_ns <= ?",
               cls, api_like, *window)
    sync_counts[cls] = host
    check("%s records of CUPTI = %s calls recorded" % (label, cls), gpu == host,
          "cupti %d, syncspy %d" % (gpu, host))

# --- known counts of the program
recorded = {"launches": launches, "copies": copies, "memsets": memsets,
            "ctx_syncs": sync_counts["S1"], "stream_syncs": sync_counts["S2"],
            "event_syncs": sync_counts["S3"]}
for key, want in sorted(expect.items()):
    check("%s = %d, as the program made them" % (key, want), recorded.get(key) == want,
          "recorded %s" % recorded.get(key))

cupti_tids = {r[0] for r in db.execute("SELECT DISTINCT tid FROM gpu_api")}
shim_tids = {r[0] for r in db.execute("SELECT DISTINCT tid FROM calls")}
print("\n".join(lines))
print("  window %.3f s; %d recorded calls before it (before CUPTI started), %d after its last"
      " record (the exit's teardown); CUPTI thread ids also in calls.tid: %d of %d" % (
          (window[1] - window[0]) / 1e9, outside, after, len(cupti_tids & shim_tids),
          len(cupti_tids)))
print("  %-8s %-36s %8s %8s %8s" % ("layer", "program's call", "seen", "missed", "extra"))
for k in keys:
    print("  %-8s %-36s %8d %8d %8d" % (k[0], k[1], seen[k], missed[k], extra[k]))
sys.exit(1 if failures else 0)
