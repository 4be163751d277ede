#!/usr/bin/env python3
"""examples/corpus/t45_clean_dataloader_pinned.py: corpus workload (PyTorch), CLEAN. The
standard input pipeline done right: a `torch.utils.data.DataLoader` over a CPU TensorDataset
with `pin_memory=True`, so every batch arrives in page-locked memory (from the pinned-memory
caching host allocator, which asks the driver only while it grows, in the first batches),
and the training step moves it with `.to(dev, non_blocking=True)`: a real asynchronous copy
(PyTorch CUDA semantics notes, "Use pinned memory buffers"), ordered before the forward pass
on the same stream, which the host does not wait for. (Pinned blocks are recycled only after
the copy that used them has completed: the allocator records an event on the stream.)
Losses are summed on the GPU and read once, after the epochs.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

EPOCHS, SAMPLES, BATCH, FEATURES, CLASSES = 2, 16384, 512, 512, 20


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(SAMPLES, FEATURES, generator=gen)
    y = (x[:, :CLASSES] * 3.0).argmax(dim=1)
    loader = DataLoader(TensorDataset(x, y), batch_size=BATCH, shuffle=True, generator=gen, pin_memory=True, drop_last=True)
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, CLASSES)).to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
    steps = 0

    for epoch in range(EPOCHS):
        for xb, yb in loader:  # SYNCSPY-CLEAN: pinned host blocks allocated in the first batches, then reused
            xb = xb.to(dev, non_blocking=True)  # SYNCSPY-CLEAN: async copy from pinned memory
            yb = yb.to(dev, non_blocking=True)  # SYNCSPY-CLEAN: async copy from pinned memory
            loss = torch.nn.functional.cross_entropy(model(xb), yb)  # SYNCSPY-CLEAN: allocator growth in the first steps
            opt.zero_grad(set_to_none=True)
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
            loss_sum += loss.detach()
            steps += 1

    mean = loss_sum.item() / steps  # SYNCSPY-CLEAN: final read
    ok = 0.0 < mean < 5.0 and steps == EPOCHS * (SAMPLES // BATCH)
    print("t45_clean_dataloader_pinned: steps=%d finite=%d result=OK" % (steps, int(ok)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
