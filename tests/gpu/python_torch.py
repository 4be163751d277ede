# SPDX-License-Identifier: MIT
"""tests/gpu/python_torch.py: the Python package's guard with real torch on a GPU (run by
tests/gpu/python.sh under `python -m syncspy`). Checks, one PASS/FAIL line each:

  item        `.item()` inside no_sync raises SyncError naming this file's line (MARK:item)
  at_first    no_sync(at_first=True) raises right after `.item()`, before the next line
  pageable    a pageable `.to("cuda", non_blocking=True)` is a sync point (S5) at its line,
              which torch's sync debug mode does not flag (docs/architecture.md F11)
  empty_cache torch.cuda.empty_cache() frees cached blocks: cudaFree (S6) at its line
  clean       enqueues only (elementwise ops on the GPU) pass no_sync
  threads     another thread's `.item()` loop does not reach this thread's guard, and its own
              guard names its line
  budget      expect_syncs(max=N) with N the count no_sync saw passes; N-1 raises
  counts      counts() grows by what the guard counted
Exit 1 when any check fails."""
import sys
import threading

import torch

import syncspy

HERE = __file__
results = []


def check(name, ok, detail=""):
    results.append(ok)
    print("%s %s%s" % ("PASS" if ok else "FAIL", name, (": " + detail) if detail else ""),
          flush=True)


def line_of(mark):
    with open(HERE) as source:
        for number, text in enumerate(source, 1):
            if text.rstrip().endswith("# MARK:" + mark):
                return number
    raise LookupError(mark)


def names(error, mark):
    """The points of ERROR at MARK's line, as text."""
    line = line_of(mark)
    return [str(p) for p in error.points if p.file == HERE and p.line == line]


device = torch.device("cuda")
x = torch.randn(1024, device=device)
torch.cuda.synchronize()

try:
    with syncspy.no_sync():
        value = x.sum().item()  # MARK:item
    check("item", False, "no SyncError")
except syncspy.SyncError as error:
    found = names(error, "item")
    check("item", bool(found), "; ".join(found) or str(error))

after = []
try:
    with syncspy.no_sync(at_first=True):
        x.sum().item()  # MARK:first
        after.append(1)
    check("at_first", False, "no SyncError")
except syncspy.SyncError as error:
    check("at_first", not after and bool(names(error, "first")), str(error))

host = torch.randn(1 << 20)  # pageable
try:
    with syncspy.no_sync():
        host.to(device, non_blocking=True)  # MARK:pageable
    check("pageable", False, "no SyncError")
except syncspy.SyncError as error:
    found = names(error, "pageable")
    check("pageable", any(" S5 " in p for p in found), "; ".join(found) or str(error))

blocks = [torch.empty(64 << 20, device=device) for _ in range(4)]
del blocks
try:
    with syncspy.no_sync(classes="S6"):
        torch.cuda.empty_cache()  # MARK:empty_cache
    check("empty_cache", False, "no SyncError")
except syncspy.SyncError as error:
    found = names(error, "empty_cache")
    check("empty_cache", any("cudaFree S6" in p for p in found), "; ".join(found) or str(error))

try:
    with syncspy.no_sync():
        y = x * 2 + 1
        y = torch.relu(y)
    check("clean", True)
except syncspy.SyncError as error:
    check("clean", False, str(error))

worker_found = []


def worker():
    for _ in range(50):
        x.sum().item()
    try:
        with syncspy.no_sync():
            x.max().item()  # MARK:worker
    except syncspy.SyncError as error:
        worker_found.extend(names(error, "worker"))


try:
    with syncspy.no_sync():
        thread = threading.Thread(target=worker)
        thread.start()
        for _ in range(200):
            y = y * 1.0001  # enqueues only, while the worker syncs
        thread.join()
    check("threads", bool(worker_found), "; ".join(worker_found) or "the worker's guard named nothing")
except syncspy.SyncError as error:
    check("threads", False, "the main guard counted another thread's syncs: %s" % error)

with syncspy.expect_syncs(max=1000) as seen:
    x.sum().item()
n = seen.count
try:
    with syncspy.expect_syncs(max=n):
        x.sum().item()
    try:
        with syncspy.expect_syncs(max=n - 1):
            x.sum().item()
        check("budget", n == 0, "max=%d did not raise" % (n - 1))
    except syncspy.SyncError:
        check("budget", n >= 1, "%d sync point(s) per .item()" % n)
except syncspy.SyncError as error:
    check("budget", False, str(error))

before = syncspy.counts()
with syncspy.expect_syncs(max=1000) as seen:
    x.sum().item()
after_counts = syncspy.counts()
grown = sum(after_counts.values()) - sum(before.values())
check("counts", grown == seen.count, "counts() grew by %d, the guard counted %d (%s)"
      % (grown, seen.count, seen.by_class))
sys.exit(0 if all(results) else 1)
