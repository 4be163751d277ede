#!/usr/bin/env python3
"""examples/corpus/t11_clean_log_at_end.py: corpus workload (PyTorch), CLEAN. The loss history
is kept on the GPU (a preallocated tensor written in place each step) and read back once,
after the loop, for the log; the step loop itself never waits for the GPU.
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
    y = torch.cos(x[:, :1] * 2) + x[:, 1:2]
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 1)).to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = torch.zeros(STEPS, device=dev)  # SYNCSPY-CLEAN: setup allocation

    for step in range(STEPS):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x), y)  # SYNCSPY-CLEAN: allocator growth in the first steps
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: Adam state on the first step
        losses[step] = loss.detach()

    history = losses.tolist()  # SYNCSPY-CLEAN: final read, once
    print("t11_clean_log_at_end: steps=%d first=%.3f last=%.3f result=OK" % (STEPS, history[0], history[-1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
