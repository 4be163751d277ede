#!/usr/bin/env python3
"""examples/torch/11_synchronize_per_step.py: reference workload (11), `torch.cuda.synchronize()`
every step.

bad:   torch.cuda.synchronize() at the end of each step (often left over from timing code):
       cudaDeviceSynchronize, the host waits for every stream of the device (rule host-sync, S1).
fixed: no synchronize in the loop; the losses are read once at the end.
    python3 11_synchronize_per_step.py bad|fixed [--sync-debug]
"""

import math
import sys

import torch
import torch.nn.functional as F

from workload import mlp, result, setup, step_loop, timed

NAME = "11_synchronize_per_step"
STEPS = 50  # keep in step with 11_synchronize_per_step.expect
BATCH, IN_FEATURES, HIDDEN, OUT_FEATURES = 512, 64, 128, 8


def main():
    variant, sync_debug, device = setup(NAME, sys.argv)
    gen = torch.Generator(device=device)
    gen.manual_seed(11)
    inputs = torch.randn(BATCH, IN_FEATURES, device=device, generator=gen)
    targets = torch.tanh(inputs[:, :OUT_FEATURES] * 2)
    model = mlp(device, IN_FEATURES, HIDDEN, OUT_FEATURES)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)

    losses = []
    with step_loop(NAME, sync_debug):
        for _ in timed(range(STEPS)):
            optimizer.zero_grad(set_to_none=True)
            loss = F.mse_loss(model(inputs), targets)
            loss.backward()
            optimizer.step()
            losses.append(loss.detach())
            if variant == "bad":
                torch.cuda.synchronize()  # @site synchronize
    host_losses = torch.stack(losses).cpu().tolist()
    first, last = host_losses[0], host_losses[-1]
    ok = math.isfinite(last) and last < first
    result(NAME, variant, steps=STEPS, first_loss=first, final_loss=last,
           loss_fell="yes" if ok else "no")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
