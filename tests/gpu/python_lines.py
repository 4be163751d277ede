#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tests/gpu/python_lines.py: a torch sync reached from each bytecode shape that can reach one, each
on a marked line, for the Python-frame attribution (issue 14, interpose/python.c): a boolean-mask
subscript, a bool conversion of a comparison, a format and a print of a CUDA tensor, iteration
over one, .item(), .tolist(), torch.nonzero, a plain call, and .item() on a threading.Thread.

Run under the shim; tests/gpu/check_python_lines.py then checks that every sync is named by its
own marked line (a SYNC marker comment; a MAY marker where torch may or may not sync). After each marked
line comes an unmarked call (noop()): a sync named by the next line the interpreter checks for
pending calls, as before the fix, lands there and fails the check."""
import threading

import torch


def noop():
    pass


h = torch.randn(4096, device="cuda")  # MAY:setup (CUDA starts; cudaMalloc is S6)
t = torch.rand(1024, device="cuda")  # MAY:setup
w = torch.tensor([0.25, -1.0, 2.0], device="cuda")  # MAY:setup (a pageable copy: S5)
torch.cuda.synchronize()  # SYNC:call
noop()
sel = h[h > 1.0]  # SYNC:mask-subscript
noop()
if t.abs().max() > 0.999:  # SYNC:bool-compare
    noop()
noop()
text = f"{w}"  # SYNC:format
noop()
print(w)  # SYNC:print
noop()
count = 0
for v in w:  # MAY:iteration
    count += 1
noop()
for v in w:  # MAY:iteration-2
    if v > 0:  # SYNC:iteration-bool
        count += 1
    noop()
noop()
value = w.sum().item()  # SYNC:item
noop()
values = w.tolist()  # SYNC:tolist
noop()
where = torch.nonzero(w)  # SYNC:nonzero
noop()
result = {}


def metrics():
    result["max"] = w.max().item()  # SYNC:thread
    noop()


worker = threading.Thread(target=metrics)
worker.start()
worker.join()
noop()
print(f"python_lines: done sel={sel.numel() > 0} count={count} values={len(values)} "
      f"nonzero={where.shape[0]} max={result['max']}")
