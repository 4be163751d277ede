#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/stack_cost.py: what a sync point's stacks (native and Python) cost, on a GPU.

Times two sync points made from Python and prints the median per call in ns of each:
  sync_ns  torch.cuda.current_stream().synchronize() on an idle stream (a cudaStreamSynchronize
           with nothing to wait for: the issue's "idle stream sync", about 1.5 us alone);
  item_ns  `.item()` of a fresh sum (a D2H copy and a stream sync, with the copy's latency).
torch releases the GIL around both, so the Python frames are taken the way docs/attribution.md
describes for GIL-released syncs. bench/stack_cost.sh runs it under the shim with
SYNCSPY_STACK_DEPTH=0 and =32; the difference is the stacks' cost (target: at most 2 us,
issue 'Attribution').

  stack_cost.py [N]   N calls of each (default 2000)
"""
import statistics
import sys
import time

import torch


def nested(depth, fn):
    """Calls fn DEPTH Python frames down: a sync point under a realistic Python stack."""
    return nested(depth - 1, fn) if depth else fn()


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    x = torch.ones(16, device="cuda")
    stream = torch.cuda.current_stream()
    for _ in range(200):  # warm-up: allocator, kernels, the shim's first-call work
        x.sum().item()
        stream.synchronize()
    torch.cuda.synchronize()

    def time_sync():
        t0 = time.perf_counter_ns()
        stream.synchronize()
        return time.perf_counter_ns() - t0

    sync = [nested(12, time_sync) for _ in range(n)]
    item = []
    for _ in range(n):
        s = x.sum()
        torch.cuda.synchronize()
        t0 = time.perf_counter_ns()
        s.item()
        item.append(time.perf_counter_ns() - t0)
    print(f"sync_ns median {statistics.median(sync):.0f}")
    print(f"item_ns median {statistics.median(item):.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
