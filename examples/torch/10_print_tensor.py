#!/usr/bin/env python3
"""examples/torch/10_print_tensor.py: reference workload (10), printing a CUDA tensor inside the
step loop.

bad:   print(loss) every step. Formatting a CUDA tensor reads it on the host (several D2H copies,
       each followed by a stream sync: rule host-sync), so a log line stops the pipeline.
fixed: the losses stay on the device; after the loop they are stacked, read with one `.cpu()`
       and printed from host memory. Same values (the line lacks the bad one's device='cuda:0').
    python3 10_print_tensor.py bad|fixed [--sync-debug]
"""

import sys

import torch
import torch.nn.functional as F

from workload import mlp, result, setup, step_loop, timed

NAME = "10_print_tensor"
STEPS = 30  # keep in step with 10_print_tensor.expect
BATCH, IN_FEATURES, HIDDEN, OUT_FEATURES = 256, 32, 64, 4


def main():
    variant, sync_debug, device = setup(NAME, sys.argv)
    torch.set_printoptions(precision=4, sci_mode=False)
    gen = torch.Generator(device=device)
    gen.manual_seed(7)
    inputs = torch.randn(BATCH, IN_FEATURES, device=device, generator=gen)
    targets = torch.sin(inputs[:, :OUT_FEATURES])
    model = mlp(device, IN_FEATURES, HIDDEN, OUT_FEATURES)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    kept = []
    with step_loop(NAME, sync_debug):
        for step in timed(range(STEPS)):
            optimizer.zero_grad(set_to_none=True)
            loss = F.mse_loss(model(inputs), targets)
            loss.backward()
            optimizer.step()
            if variant == "bad":
                print("step %d loss %s" % (step, loss.detach()))  # @site print
            else:
                kept.append(loss.detach())
    if variant == "fixed":
        for step, value in enumerate(torch.stack(kept).cpu()):  # one read, after the loop
            print("step %d loss %s" % (step, value))
    result(NAME, variant, steps=STEPS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
