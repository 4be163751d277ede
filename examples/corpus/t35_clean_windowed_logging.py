#!/usr/bin/env python3
"""examples/corpus/t35_clean_windowed_logging.py: corpus workload (PyTorch), CLEAN. A training
script organised the way Hugging Face's Trainer and Lightning organise theirs: the dataset
lives on the GPU and each epoch is shuffled there with `torch.randperm(n, device=dev)` (a
device-side sort: no copy, no wait) and gathered with integer indexing; the loss is summed in a
GPU tensor and read with `.item()` only at the logging steps, every LOG_EVERY = 10 steps, as
the mean over the window; the memory gauge `torch.cuda.memory_allocated()` is read every step
(the allocator's host-side counters: no CUDA call that waits); and a checkpoint of the
state_dict is serialized with torch.save once per epoch, outside the step loop (it copies every
parameter to the host). The windowed read is labelled clean: it is one wait per ten steps, the
documented way to log a loss, and the loop between two reads queues ahead freely; a user
would not be told to change it.
"""
import io
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

EPOCHS, STEPS_PER_EPOCH, BATCH, FEATURES, CLASSES, LOG_EVERY = 3, 30, 512, 384, 12, 10


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    n = STEPS_PER_EPOCH * BATCH
    gen = torch.Generator().manual_seed(9)
    x_cpu = torch.randn(n, FEATURES, generator=gen)
    w_cpu = torch.randn(FEATURES, CLASSES, generator=gen)
    xs = x_cpu.to(dev)  # SYNCSPY-CLEAN: setup upload
    ys = (x_cpu @ w_cpu + 0.5 * torch.randn(n, CLASSES, generator=gen)).argmax(dim=1).to(dev)  # SYNCSPY-CLEAN: setup upload
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, 1536), torch.nn.GELU(), torch.nn.LayerNorm(1536), torch.nn.Linear(1536, 1536), torch.nn.GELU(), torch.nn.Linear(1536, CLASSES)).to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
    window = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation

    log, checkpoints, peak = [], [], 0
    for epoch in range(EPOCHS):
        perm = torch.randperm(n, device=dev)  # SYNCSPY-CLEAN: once per epoch, a device-side shuffle (no wait)
        for step in range(STEPS_PER_EPOCH):
            idx = perm[step * BATCH:(step + 1) * BATCH]
            xb, yb = xs[idx], ys[idx]  # SYNCSPY-CLEAN: gathered batch, allocator growth in the first steps
            loss = torch.nn.functional.cross_entropy(model(xb), yb)  # SYNCSPY-CLEAN: allocator growth in the first steps
            opt.zero_grad(set_to_none=True)
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            opt.step()  # SYNCSPY-CLEAN: AdamW state allocated on the first step
            window += loss.detach()
            peak = max(peak, torch.cuda.memory_allocated())
            if (step + 1) % LOG_EVERY == 0:
                log.append(window.item() / LOG_EVERY)  # SYNCSPY-CLEAN: the logging read, once every LOG_EVERY steps
                window.zero_()
        buf = io.BytesIO()
        torch.save(model.state_dict(), buf)  # SYNCSPY-CLEAN: checkpoint once per epoch, outside the step loop
        checkpoints.append(buf.tell())

    assert peak > 0 and len(checkpoints) == EPOCHS and min(checkpoints) > 0
    with torch.no_grad():
        acc = (model(xs[:4096]).argmax(dim=1) == ys[:4096]).float().mean().item()  # SYNCSPY-CLEAN: final read
    print("t35_clean_windowed_logging: steps=%d logs=%d first=%.3f last=%.3f acc=%.3f result=OK" % (EPOCHS * STEPS_PER_EPOCH, len(log), log[0], log[-1], acc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
