#!/usr/bin/env python3
"""examples/corpus/t01_item_running_loss.py: corpus workload (PyTorch). A regression MLP trained
with Adam; the loop keeps a Python running loss for its progress bar with `loss.item()` every
step, which copies the scalar to the host and waits for the whole step.
Planted: `loss.item()` every step.
Clean: setup (model and data to the GPU), the caching allocator's growth in the first steps,
the final evaluation read once after the loop.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

STEPS = 80


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    x = torch.randn(2048, 64).to(dev)  # SYNCSPY-CLEAN: setup upload
    w_true = torch.randn(64, 1).to(dev)  # SYNCSPY-CLEAN: setup upload
    y = torch.sin(x @ w_true)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 1)).to(dev)  # SYNCSPY-CLEAN: setup, weights to the GPU
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    running = 0.0
    for step in range(STEPS):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x), y)  # SYNCSPY-CLEAN: allocator growth in the first steps
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
        running = 0.9 * running + 0.1 * loss.item()  # SYNCSPY-PROBLEM: .item() every step

    with torch.no_grad():
        final = torch.nn.functional.mse_loss(model(x), y).item()  # SYNCSPY-CLEAN: final read
    print("t01_item_running_loss: steps=%d running=%.3f final=%.3f result=OK" % (STEPS, running, final))
    return 0


if __name__ == "__main__":
    sys.exit(main())
