#!/usr/bin/env python3
"""examples/corpus/t03_print_tensor.py: corpus workload (PyTorch). A training loop that logs
its loss and gradient norm with `print` of the tensors themselves every step; formatting a CUDA
tensor copies it to the host and waits for the step.
Planted: `print(...)` of CUDA tensors every step.
Clean: setup uploads, allocator growth, the final read.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

STEPS = 40


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_printoptions(precision=3)
    dev = "cuda"
    x = torch.randn(4096, 128, device=dev)  # SYNCSPY-CLEAN: setup allocation
    y = (x[:, :8] ** 2).sum(dim=1, keepdim=True)
    model = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.Tanh(), torch.nn.Linear(256, 1)).to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    for step in range(STEPS):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)  # SYNCSPY-CLEAN: allocator growth in the first steps
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 10.0)
        opt.step()
        print("step", step, "loss", loss.detach(), "grad_norm", grad_norm)  # SYNCSPY-PROBLEM: printing CUDA tensors every step

    final = loss.detach().cpu()  # SYNCSPY-CLEAN: final read
    print("t03_print_tensor: steps=%d final=%.3f result=OK" % (STEPS, float(final)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
