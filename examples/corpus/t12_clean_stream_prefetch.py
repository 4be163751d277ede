#!/usr/bin/env python3
"""examples/corpus/t12_clean_stream_prefetch.py: corpus workload (PyTorch), CLEAN. A
prefetching loader: the dataset is pinned once at setup; a side stream copies batch i+1 with
non_blocking=True (a real asynchronous copy from pinned memory) while the default stream
trains on batch i; the streams are ordered with wait_stream and record_stream, so nothing waits
on the host inside the loop. The model is evaluated once at the end.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

STEPS, BATCH, CHUNKS = 60, 2048, 8


class Prefetcher:
    def __init__(self, xs, ys, dev):
        self.xs, self.ys, self.dev = xs, ys, dev
        self.stream = torch.cuda.Stream()
        self.next = None

    def preload(self, i):
        with torch.cuda.stream(self.stream):
            k = i % CHUNKS
            xb = self.xs[k].to(self.dev, non_blocking=True)  # SYNCSPY-CLEAN: async copy from pinned memory on the side stream
            yb = self.ys[k].to(self.dev, non_blocking=True)  # SYNCSPY-CLEAN: async copy from pinned memory on the side stream
            self.next = (xb, yb)

    def get(self, i):
        torch.cuda.current_stream().wait_stream(self.stream)
        xb, yb = self.next
        xb.record_stream(torch.cuda.current_stream())
        yb.record_stream(torch.cuda.current_stream())
        if i + 1 < STEPS:
            self.preload(i + 1)
        return xb, yb


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    xs = [torch.randn(BATCH, 128).pin_memory() for _ in range(CHUNKS)]  # SYNCSPY-CLEAN: setup, pinned dataset
    ys = [(x[:, :2].sum(dim=1, keepdim=True) > 0).float().pin_memory() for x in xs]  # SYNCSPY-CLEAN: setup, pinned dataset
    model = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1)).to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loader = Prefetcher(xs, ys, dev)
    loader.preload(0)

    for step in range(STEPS):
        xb, yb = loader.get(step)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(model(xb), yb)  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.zero_grad()
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: momentum buffers on the first step

    final = loss.item()  # SYNCSPY-CLEAN: final read
    print("t12_clean_stream_prefetch: steps=%d loss=%.3f result=OK" % (STEPS, final))
    return 0


if __name__ == "__main__":
    sys.exit(main())
