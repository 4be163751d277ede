#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/gpu/check_order.py: checks the ties by stream order (CUPTI-13, report/gpu_order.c)
against the callbacks' (CUPTI-11) on recordings made with `correlate` in SYNCSPY_CUPTI_KINDS
(issue 17 item 1). A recording without callbacks (the default) is listed with the ops the
order tied, and counts as neither passed nor failed.

  check_order.py SYNCSPY DB...

For each database: the callbacks' tie of each GPU op (the kernel, copy or memset rows of one
correlation id) is the call the report joins its gpu_api record to (report/gpu.c: the earliest
call of its thread that started inside the record, else the last one that started before it,
at most 1 ms); the order's is the call `SYNCSPY_REPORT_TIES=order syncspy dump --table gpu_api`
names (thread and start). Per database: ops tied by the callbacks, the share the order ties to
the same call, to a call of the same site, to another call, or not at all; and the findings of
`syncspy report --format json` both ways: the same (rule, site) pairs, and each host-sync
finding's GPU idle time. A line per database, then the totals; exits 1 when a database's
ops of the callbacks are tied to a call of the same site by the order less than MIN_SITE of
the time, or the findings differ."""
import bisect
import json
import os
import sqlite3
import subprocess
import sys

MIN_SITE = 0.95
JOIN_NS = 1000000


def calls_by_thread(db):
    calls = {}
    for cid, tid, start, site in db.execute(
            "SELECT id, tid, start_ns, site_id FROM calls ORDER BY tid, start_ns, id"):
        calls.setdefault(tid, []).append((start, cid, site))
    return calls, {t: [c[0] for c in v] for t, v in calls.items()}


def join(calls, starts, tid, start, end):
    """report/gpu.c's join: a call started inside [start, end], else the last before start."""
    lst, st = calls.get(tid), starts.get(tid)
    if not lst:
        return None
    j = bisect.bisect_left(st, start)
    if j < len(st) and st[j] <= end:
        return lst[j]
    i = bisect.bisect_right(st, start) - 1
    if i >= 0 and start - st[i] <= JOIN_NS:
        return lst[i]
    return None


def ties(rows, calls, starts):
    out = {}
    for corr, tid, start, end in rows:
        if tid is None:
            continue
        c = join(calls, starts, tid, start, end)
        if c:
            out[corr] = c
    return out


def findings(syncspy, path, order):
    env = dict(os.environ)
    env.pop("SYNCSPY_REPORT_TIES", None)
    if order:
        env["SYNCSPY_REPORT_TIES"] = "order"
    out = subprocess.run([syncspy, "report", "--format", "json", path], env=env,
                         capture_output=True, text=True)
    if out.returncode != 0:
        return None
    found = {}
    for f in json.loads(out.stdout).get("findings", []):
        found[(f.get("rule"), f.get("site"))] = f.get("gpu_idle_ns")
    return found


def check(syncspy, path):
    db = sqlite3.connect(path)
    names = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if not {"gpu_api", "gpu_activity"} <= names:
        return None
    calls, starts = calls_by_thread(db)
    ops = [r[0] for r in db.execute(
        "SELECT DISTINCT correlation_id FROM gpu_activity WHERE kind IN"
        " ('kernel', 'memcpy', 'memset') AND start_ns > 0 AND correlation_id IS NOT NULL")]
    truth = ties(db.execute("SELECT correlation_id, tid, min(start_ns), max(end_ns) FROM gpu_api"
                            " GROUP BY correlation_id"), calls, starts)
    env = dict(os.environ, SYNCSPY_REPORT_TIES="order")
    dump = subprocess.run([syncspy, "dump", "--table", "gpu_api", "--format", "json", path],
                          env=env, capture_output=True, text=True)
    if dump.returncode != 0:
        raise SystemExit(f"{path}: dump failed: {dump.stderr.strip()}")
    order_rows = [(r["correlation_id"], r["tid"], r["start_ns"], r["end_ns"])
                  for r in json.loads(dump.stdout)[0]["rows"] if r["layer"] == "order"]
    order = ties(order_rows, calls, starts)
    n = same = same_site = other = none = 0
    for corr in ops:
        t = truth.get(corr)
        if not t:
            continue
        n += 1
        o = order.get(corr)
        if o is None:
            none += 1
        elif o[1] == t[1]:
            same += 1
            same_site += 1
        elif o[2] is not None and o[2] == t[2]:
            same_site += 1
        else:
            other += 1
    extra = sum(1 for corr in ops if corr not in truth and corr in order)
    f_cb, f_order = findings(syncspy, path, False), findings(syncspy, path, True)
    idle_off = []
    if f_cb is not None and f_order is not None:
        for key, idle in f_cb.items():
            o = f_order.get(key)
            if idle and o is not None:
                idle_off.append(abs(o - idle) / idle)
    same_findings = f_cb is not None and f_cb.keys() == (f_order or {}).keys()
    return {"ops": n, "same": same, "same_site": same_site, "other": other, "none": none,
            "extra": extra, "findings": len(f_cb or {}), "same_findings": same_findings,
            "idle_max_off": max(idle_off) if idle_off else 0.0,
            "only_cb": sorted(str(k) for k in (f_cb or {}).keys() - (f_order or {}).keys()),
            "only_order": sorted(str(k) for k in (f_order or {}).keys() - (f_cb or {}).keys())}


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    syncspy, failed, total = argv[1], 0, {"ops": 0, "same": 0, "same_site": 0, "none": 0}
    print("database\tops\tsame_call\tsame_site\tother\tuntied\textra\tfindings\tsame_findings"
          "\tidle_max_off\tverdict")
    for path in argv[2:]:
        r = check(syncspy, path)
        if r is None:
            print(f"{os.path.basename(path)}\t-\tno gpu_api/gpu_activity")
            continue
        n = max(r["ops"], 1)
        if not r["ops"]:
            print(f"{os.path.basename(path)}\t0\t-\t-\t-\t-\t{r['extra']}\t{r['findings']}"
                  f"\t{r['same_findings']}\t-\tno callbacks to compare with")
            continue
        ok = r["same_site"] / n >= MIN_SITE and r["same_findings"]
        failed += not ok
        for k in total:
            total[k] += r[k]
        print(f"{os.path.basename(path)}\t{r['ops']}\t{r['same'] / n:.4f}\t{r['same_site'] / n:.4f}"
              f"\t{r['other']}\t{r['none']}\t{r['extra']}\t{r['findings']}\t{r['same_findings']}"
              f"\t{r['idle_max_off']:.3f}\t{'ok' if ok else 'LOW'}"
              + (f"\tonly callbacks: {r['only_cb']} only order: {r['only_order']}"
                 if not r["same_findings"] else ""))
    n = max(total["ops"], 1)
    print(f"total\t{total['ops']}\t{total['same'] / n:.4f}\t{total['same_site'] / n:.4f}\t\t"
          f"{total['none']}\t\t\t\t\t{failed} databases below")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
