#!/usr/bin/env python3
"""bench/stack_cost.py: what a sync point's stacks (native and Python) cost, on a GPU.

Times N `.item()` calls (each a pinned D2H copy and a cudaStreamSynchronize, a sync point whose
Python frames are taken after torch releases the GIL) and prints the median per call in ns.
bench/stack_cost.sh runs it under the shim with SYNCSPY_STACK_DEPTH=0 and =32; the difference is
the stacks' cost (target: at most 2 us, issue 'Attribution')."""
import statistics
import sys
import time

import torch

n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
x = torch.ones(16, device="cuda")
for _ in range(200):  # warm-up: allocator, kernels, the shim's first-call work
    x.sum().item()
samples = []
for _ in range(n):
    s = x.sum()
    torch.cuda.synchronize()
    t0 = time.perf_counter_ns()
    s.item()
    samples.append(time.perf_counter_ns() - t0)
print(f"item_ns median {statistics.median(samples):.0f}")
