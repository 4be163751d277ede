#!/usr/bin/env python3
"""examples/corpus/t04_tensor_in_if.py: corpus workload (PyTorch). Training with a divergence
guard and best-model tracking written with CUDA tensors in Python conditions: `if not
torch.isfinite(loss):` and `if loss < best:` each turn a GPU boolean into a Python bool, which
copies it to the host and waits for the step.
Planted: the two tensor conditions in the step loop.
Clean: setup, allocator growth, the best-weights snapshot (device to device), the final read.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

STEPS = 70


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    x = torch.rand(2048, 48, device=dev)  # SYNCSPY-CLEAN: setup allocation
    y = x.sum(dim=1, keepdim=True).sqrt()
    model = torch.nn.Sequential(torch.nn.Linear(48, 96), torch.nn.SiLU(), torch.nn.Linear(96, 1)).to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    best = torch.tensor(float("inf"), device=dev)  # SYNCSPY-CLEAN: setup
    best_state = None
    improved = 0

    for step in range(STEPS):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.smooth_l1_loss(model(x), y)  # SYNCSPY-CLEAN: allocator growth in the first steps
        if not torch.isfinite(loss):  # SYNCSPY-PROBLEM: tensor as a Python bool every step
            raise RuntimeError("diverged at step %d" % step)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: AdamW state on the first step
        if loss < best:  # SYNCSPY-PROBLEM: tensor comparison in Python control flow every step
            best = loss.detach()
            best_state = [p.detach().clone() for p in model.parameters()]
            improved += 1

    final = best.item()  # SYNCSPY-CLEAN: final read
    nparams = sum(t.numel() for t in best_state)
    print("t04_tensor_in_if: steps=%d improved=%d best=%.4f params=%d result=OK" % (STEPS, improved, final, nparams))
    return 0


if __name__ == "__main__":
    sys.exit(main())
