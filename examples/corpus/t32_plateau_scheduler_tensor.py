#!/usr/bin/env python3
"""examples/corpus/t32_plateau_scheduler_tensor.py: corpus workload (PyTorch). A regression
model whose learning rate is driven by torch.optim.lr_scheduler.ReduceLROnPlateau, stepped
after every optimizer step with a smoothed training loss. The author kept the exponential
moving average of the loss on the GPU (`ema = 0.9 * ema + 0.1 * loss.detach()`) so as not to
read it, and then hands that CUDA tensor to `scheduler.step(ema)`; the scheduler converts its
metric with `float(metrics)`, which copies the scalar to the host and waits for the whole step
(forward, backward, Adam), every step. (Stepping the scheduler once per epoch on a validation
loss, or with a value already on the host, avoids it.)
Planted: `scheduler.step(ema)` with a CUDA tensor, every step.
Clean: setup, allocator growth in the first steps, the final read.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

STEPS, BATCH, FEATURES, CHUNKS = 90, 2048, 128, 6


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    xs = torch.randn(CHUNKS, BATCH, FEATURES, device=dev)  # SYNCSPY-CLEAN: setup allocation
    w_true = torch.randn(FEATURES, 1, device=dev) / FEATURES ** 0.5  # SYNCSPY-CLEAN: setup allocation
    ys = (xs @ w_true).tanh() + 0.3 * (xs[..., :1] * xs[..., 1:2])  # SYNCSPY-CLEAN: setup allocation
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, 1024), torch.nn.SiLU(), torch.nn.Linear(1024, 1024), torch.nn.SiLU(), torch.nn.Linear(1024, 1)).to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=4, threshold=1e-3)

    ema, lrs = None, set()
    for step in range(STEPS):
        xb, yb = xs[step % CHUNKS], ys[step % CHUNKS]
        loss = torch.nn.functional.mse_loss(model(xb), yb)  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
        ema = loss.detach() if ema is None else 0.9 * ema + 0.1 * loss.detach()
        scheduler.step(ema)  # SYNCSPY-PROBLEM: ReduceLROnPlateau calls float() on the CUDA tensor every step
        lrs.add(opt.param_groups[0]["lr"])

    with torch.no_grad():
        final = torch.nn.functional.mse_loss(model(xs[0]), ys[0]).item()  # SYNCSPY-CLEAN: final read
    print("t32_plateau_scheduler_tensor: steps=%d lr_levels=%d lr=%.2e final=%.3f result=OK" % (STEPS, len(lrs), opt.param_groups[0]["lr"], final))
    return 0


if __name__ == "__main__":
    sys.exit(main())
