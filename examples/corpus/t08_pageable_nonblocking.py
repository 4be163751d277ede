#!/usr/bin/env python3
"""examples/corpus/t08_pageable_nonblocking.py: corpus workload (PyTorch). A CPU-side batch
generator feeds the GPU with `.to(device, non_blocking=True)`, but the batches live in ordinary
(pageable) memory: the copy is not asynchronous, the host waits for it every step and the
"non_blocking" buys nothing (pin_memory() or a pinned staging buffer would).
Planted: the non_blocking copies of pageable batches every step.
Clean: setup, allocator growth, the final read.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

STEPS, BATCH = 50, 4096


class CpuBatches:
    """Synthetic CPU data, as a Dataset/collate without pin_memory would hand it over."""

    def __init__(self, seed):
        self.gen = torch.Generator().manual_seed(seed)

    def __iter__(self):
        for _ in range(STEPS):
            x = torch.randn(BATCH, 256, generator=self.gen)
            yield x, x[:, :4].sum(dim=1, keepdim=True)


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 1)).to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    step = 0
    for xb, yb in CpuBatches(7):
        xb = xb.to(dev, non_blocking=True)  # SYNCSPY-PROBLEM: non_blocking copy from pageable memory every step
        yb = yb.to(dev, non_blocking=True)  # SYNCSPY-PROBLEM: non_blocking copy from pageable memory every step
        loss = torch.nn.functional.mse_loss(model(xb), yb)  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.zero_grad()
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()
        step += 1

    print("t08_pageable_nonblocking: steps=%d loss=%.3f result=OK" % (step, loss.item()))  # SYNCSPY-CLEAN: final read
    return 0


if __name__ == "__main__":
    sys.exit(main())
