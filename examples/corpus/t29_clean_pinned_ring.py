#!/usr/bin/env python3
"""examples/corpus/t29_clean_pinned_ring.py: corpus workload (PyTorch), CLEAN. The fixed
version of t18's input pipeline: the CPU producer writes each batch into one slot of a ring of
three pinned host buffers (allocated once), the upload runs on a side stream with
non_blocking=True (a real asynchronous copy), the compute stream waits for it with
wait_stream, and record_stream tells the caching allocator where the batch is used. Before the
producer overwrites a slot it waits for the event recorded after that slot's previous upload,
three steps earlier: the wait that makes the ring safe, normally already satisfied. Losses stay
on the GPU; one read at the end.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

STEPS, BATCH, FEATURES, SLOTS = 60, 512, 256, 3


class PinnedRingLoader:
    def __init__(self, dev):
        self.dev = dev
        self.gen = torch.Generator().manual_seed(7)
        self.host_x = [torch.empty(BATCH, FEATURES, pin_memory=True) for _ in range(SLOTS)]  # SYNCSPY-CLEAN: setup, pinned ring
        self.host_y = [torch.empty(BATCH, 1, pin_memory=True) for _ in range(SLOTS)]  # SYNCSPY-CLEAN: setup, pinned ring
        self.uploaded = [torch.cuda.Event() for _ in range(SLOTS)]
        self.used = [False] * SLOTS
        self.stream = torch.cuda.Stream()

    def load(self, step):
        k = step % SLOTS
        if self.used[k]:
            self.uploaded[k].synchronize()  # SYNCSPY-CLEAN: the slot's previous upload (three steps ago) is done before the CPU overwrites it
        x = self.host_x[k]
        torch.randn(BATCH, FEATURES, generator=self.gen, out=x)
        self.host_y[k].copy_((x[:, :4].sum(dim=1, keepdim=True) > 0).float())
        with torch.cuda.stream(self.stream):
            xb = x.to(self.dev, non_blocking=True)  # SYNCSPY-CLEAN: async copy from pinned memory on the side stream
            yb = self.host_y[k].to(self.dev, non_blocking=True)  # SYNCSPY-CLEAN: async copy from pinned memory on the side stream
            self.uploaded[k].record(self.stream)
        self.used[k] = True
        return xb, yb


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 1)).to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
    loader = PinnedRingLoader(dev)
    compute = torch.cuda.current_stream()
    nxt = loader.load(0)

    for step in range(STEPS):
        xb, yb = nxt
        compute.wait_stream(loader.stream)
        xb.record_stream(compute)
        yb.record_stream(compute)
        if step + 1 < STEPS:
            nxt = loader.load(step + 1)
        loss = torch.nn.functional.binary_cross_entropy_with_logits(model(xb), yb)  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
        loss_sum += loss.detach()

    print("t29_clean_pinned_ring: steps=%d mean_loss=%.4f last=%.4f result=OK" % (STEPS, loss_sum.item() / STEPS, loss.item()))  # SYNCSPY-CLEAN: final read
    return 0


if __name__ == "__main__":
    sys.exit(main())
