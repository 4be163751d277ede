#!/usr/bin/env python3
"""examples/corpus/t06_nonzero_sparse_update.py: corpus workload (PyTorch). A hand-written
sparse embedding update: each step finds the rows touched by the batch with `torch.nonzero`
and updates only those. `nonzero` has a data-dependent output size: torch reads the count back
to the host and waits every step.
Planted: `torch.nonzero` every step.
Clean: setup, allocator growth, the final read.
"""
import sys

import torch

STEPS, ROWS, DIM, BATCH = 50, 1 << 16, 64, 4096


def main():
    torch.manual_seed(0)
    dev = torch.device("cuda")
    table = torch.zeros(ROWS, DIM, device=dev)  # SYNCSPY-CLEAN: setup allocation
    ids_all = torch.randint(0, ROWS, (STEPS, BATCH), device=dev)  # SYNCSPY-CLEAN: setup allocation
    counts = torch.zeros(ROWS, device=dev)  # SYNCSPY-CLEAN: setup allocation

    for step in range(STEPS):
        ids = ids_all[step]
        touched = torch.zeros(ROWS, dtype=torch.bool, device=dev)  # SYNCSPY-CLEAN: allocator growth in the first steps
        touched[ids] = True  # SYNCSPY-PROBLEM: a Python scalar through an index tensor: copied from pageable memory and synchronized every step
        rows = torch.nonzero(touched).squeeze(1)  # SYNCSPY-PROBLEM: torch.nonzero every step
        table[rows] += (rows.float() % 7).unsqueeze(1) * 0.01  # SYNCSPY-CLEAN: allocator growth in the first steps
        counts[rows] += 1

    total = counts.sum().item()  # SYNCSPY-CLEAN: final read
    digest = table.sum().item()  # SYNCSPY-CLEAN: final read
    print("t06_nonzero_sparse_update: steps=%d touched=%d digest=%.2f result=OK" % (STEPS, int(total), digest))
    return 0


if __name__ == "__main__":
    sys.exit(main())
