#!/usr/bin/env python3
"""examples/torch/09_nonblocking_pageable.py: reference workload (9), `.to(device,
non_blocking=True)` from pageable memory against pinned memory.

A DataLoader (num_workers=0, for determinism and speed) yields CPU batches; each is moved to the
GPU with non_blocking=True and used in a training step.
bad:   DataLoader(pin_memory=False): the batch is pageable, so the "non-blocking" copy is a
       cudaMemcpyAsync from pageable memory, which the driver stages and which blocks the host
       (rule pageable-async-copy, S5). torch's set_sync_debug_mode does not flag it.
fixed: DataLoader(pin_memory=True): the batch is pinned, the copy only enqueues (E1).
The loss is read once, after the loop.
    python3 09_nonblocking_pageable.py bad|fixed [--sync-debug]
"""

import math
import sys

import torch
import torch.nn.functional as F

from workload import mlp, result, setup, step_loop, timed

NAME = "09_nonblocking_pageable"
BATCHES = 40  # keep in step with 09_nonblocking_pageable.expect
BATCH, IN_FEATURES, HIDDEN, OUT_FEATURES = 1024, 256, 128, 8  # 1 MiB of inputs per batch


def main():
    variant, sync_debug, device = setup(NAME, sys.argv)
    cpu_gen = torch.Generator().manual_seed(99)
    inputs = torch.randn(BATCHES * BATCH, IN_FEATURES, generator=cpu_gen)
    targets = torch.tanh(inputs[:, :OUT_FEATURES])
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(inputs, targets), batch_size=BATCH, shuffle=False,
        num_workers=0, pin_memory=(variant == "fixed"))
    model = mlp(device, IN_FEATURES, HIDDEN, OUT_FEATURES)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)

    losses = []
    with step_loop(NAME, sync_debug):
        for x, y in timed(loader):
            x = x.to(device, non_blocking=True)  # @site copy
            y = y.to(device, non_blocking=True)
            optimizer.zero_grad(set_to_none=True)
            loss = F.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
            losses.append(loss.detach())
    host_losses = torch.stack(losses).cpu().tolist()
    first, last = host_losses[0], host_losses[-1]
    ok = len(host_losses) == BATCHES and math.isfinite(last) and last < first
    result(NAME, variant, batches=len(host_losses), first_loss=first, final_loss=last,
           loss_fell="yes" if ok else "no")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
