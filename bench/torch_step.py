#!/usr/bin/env python3
"""bench/torch_step.py: the step time of the torch reference loop, for overhead comparisons.

The loop of examples/torch/item_loop.py (an MLP step: forward, MSE loss, backward, SGD, and the
loss read back with `.item()` every step), at two sizes: "small" is item_loop's own model
(batch 512, hidden 128: launch-bound, so every microsecond the host spends per call shows) and
"large" (batch 8192, hidden 4096: the GPU's work dominates, as in real training).

  [SIZES="small large"] torch_step.py [--profiler] [STEPS]

Prints "step_us SIZE MEAN" per size: the mean step time over STEPS steps (default 300) after
50 steps of warm-up. --profiler wraps the timed steps in torch.profiler.profile with CPU and
CUDA activities, the overhead syncspy's CUPTI mode is compared with (bench/cupti_overhead.sh).
"""
import sys
import time

import torch
import torch.nn.functional as F

SIZES = {"small": (512, 64, 128, 8), "large": (8192, 1024, 4096, 1024)}


def run(size, steps, profile):
    batch, d_in, hidden, d_out = SIZES[size]
    torch.manual_seed(0)
    x = torch.randn(batch, d_in, device="cuda")
    y = torch.randn(batch, d_out, device="cuda")
    model = torch.nn.Sequential(torch.nn.Linear(d_in, hidden), torch.nn.ReLU(),
                                torch.nn.Linear(hidden, d_out)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(50):
        step()
    torch.cuda.synchronize()
    if profile:
        from torch.profiler import ProfilerActivity, profile as torch_profile
        context = torch_profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
    else:
        import contextlib
        context = contextlib.nullcontext()
    with context:
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        elapsed = time.perf_counter() - t0
    print("step_us %s %.1f" % (size, elapsed / steps * 1e6), flush=True)


def main():
    args = sys.argv[1:]
    profile = "--profiler" in args
    args = [a for a in args if a != "--profiler"]
    steps = int(args[0]) if args else 300
    import os
    for size in os.environ.get("SIZES", " ".join(SIZES)).split():
        run(size, steps, profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
