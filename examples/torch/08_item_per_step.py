#!/usr/bin/env python3
"""examples/torch/08_item_per_step.py: reference workload (8), `loss.item()` every step.

bad:   losses.append(loss.item()) each step. `.item()` copies the scalar to the host and calls
       cudaStreamSynchronize: the host waits for the whole step (rule host-sync, S2, at the
       native site in libtorch_cuda.so until Python frames are attributed).
fixed: the losses are accumulated on the device (a detached running sum and a stacked history);
       one `.cpu()` at the end reads them all.
    python3 08_item_per_step.py bad|fixed [--sync-debug]
"""

import math
import sys

import torch
import torch.nn.functional as F

from workload import mlp, result, setup, step_loop, timed

NAME = "08_item_per_step"
STEPS = 60  # keep in step with 08_item_per_step.expect
BATCH, IN_FEATURES, HIDDEN, OUT_FEATURES = 512, 64, 128, 8


def main():
    variant, sync_debug, device = setup(NAME, sys.argv)
    gen = torch.Generator(device=device)
    gen.manual_seed(1234)
    inputs = torch.randn(BATCH, IN_FEATURES, device=device, generator=gen)
    targets = torch.tanh(inputs @ torch.randn(IN_FEATURES, OUT_FEATURES, device=device,
                                              generator=gen))
    model = mlp(device, IN_FEATURES, HIDDEN, OUT_FEATURES)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)

    host_losses, device_losses = [], []
    with step_loop(NAME, sync_debug):
        for _ in timed(range(STEPS)):
            optimizer.zero_grad(set_to_none=True)
            loss = F.mse_loss(model(inputs), targets)
            loss.backward()
            optimizer.step()
            if variant == "bad":
                host_losses.append(loss.item())  # @site item
            else:
                device_losses.append(loss.detach())  # stays on the GPU, no sync
    if variant == "fixed":
        host_losses = torch.stack(device_losses).cpu().tolist()  # one sync, after the loop
    first, last = host_losses[0], host_losses[-1]
    ok = math.isfinite(last) and last < first
    result(NAME, variant, steps=len(host_losses), first_loss=first, final_loss=last,
           loss_fell="yes" if ok else "no")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
