#!/usr/bin/env python3
"""examples/corpus/t09_empty_cache_per_step.py: corpus workload (PyTorch). A memory-anxious
training loop that calls `torch.cuda.empty_cache()` after every step "to avoid fragmentation":
each call synchronizes and hands the cached blocks back to the driver, so the next step's
forward pass has to cudaMalloc them again.
Planted: `torch.cuda.empty_cache()` every step.
Clean: setup, the final read.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

STEPS = 40


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    x = torch.randn(8192, 512, device=dev)  # SYNCSPY-CLEAN: setup allocation
    y = torch.randn(8192, 16, device=dev)  # SYNCSPY-CLEAN: setup allocation
    model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 16)).to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    for step in range(STEPS):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        del loss
        torch.cuda.empty_cache()  # SYNCSPY-PROBLEM: empty_cache every step

    with torch.no_grad():
        final = torch.nn.functional.mse_loss(model(x), y).item()  # SYNCSPY-CLEAN: final read
    print("t09_empty_cache_per_step: steps=%d loss=%.4f result=OK" % (STEPS, final))
    return 0


if __name__ == "__main__":
    sys.exit(main())
