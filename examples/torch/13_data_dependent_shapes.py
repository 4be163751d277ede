#!/usr/bin/env python3
"""examples/torch/13_data_dependent_shapes.py: reference workload (13), boolean-mask indexing
and nonzero: operations whose output shape depends on the data.

bad:   x[mask] and mask.nonzero() each step. The size of the result lives on the GPU; torch
       copies the count to the host and waits for it (rule host-sync) before it can allocate
       the output.
fixed: the same sums with fixed shapes: torch.where(mask, x, 0).sum() and mask.sum(), which
       stay on the device; the results are read once after the loop.
    python3 13_data_dependent_shapes.py bad|fixed [--sync-debug]
"""

import sys

import torch

from workload import result, setup, step_loop, timed

NAME = "13_data_dependent_shapes"
STEPS = 40  # keep in step with 13_data_dependent_shapes.expect
ELEMENTS = 1 << 16


def main():
    variant, sync_debug, device = setup(NAME, sys.argv)
    gen = torch.Generator(device=device)
    gen.manual_seed(13)
    # Integers in float32: sums are exact, so both variants print the same numbers.
    data = torch.randint(-50, 50, (STEPS, ELEMENTS), device=device, generator=gen).float()

    sums, counts = [], []
    with step_loop(NAME, sync_debug):
        for step in timed(range(STEPS)):
            x = data[step]
            mask = x > 0
            if variant == "bad":
                sums.append(x[mask].sum())  # @site mask-index
                counts.append(mask.nonzero().shape[0])  # a host int: the size was read back
            else:
                sums.append(torch.where(mask, x, torch.zeros_like(x)).sum())
                counts.append(mask.sum())
    total = int(torch.stack(sums).sum().item())
    positives = int(sum(int(c) for c in counts)) if variant == "bad" else \
        int(torch.stack(counts).sum().item())
    result(NAME, variant, steps=STEPS, positive_sum=total, positives=positives)
    return 0


if __name__ == "__main__":
    sys.exit(main())
