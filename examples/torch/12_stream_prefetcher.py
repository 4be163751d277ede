#!/usr/bin/env python3
"""examples/torch/12_stream_prefetcher.py: reference workload (12), a two-stream prefetcher
ordered by events.

Batches come from pinned host memory in both variants.
bad:   each batch is copied with .to(device, non_blocking=True) on the current (compute) stream
       right before it is used: the copy cannot overlap the previous step's compute (rule
       copy-on-compute-stream in C; see the .expect file for why torch hides it from the
       host-side heuristic).
fixed: a prefetcher copies batch i+1 on a side stream while batch i computes; the compute stream
       waits for it with an event (Stream.wait_event), and record_stream tells the caching
       allocator that the compute stream uses the tensor.
    python3 12_stream_prefetcher.py bad|fixed [--sync-debug]
"""

import math
import sys

import torch
import torch.nn.functional as F

from workload import mlp, result, setup, step_loop, timed

NAME = "12_stream_prefetcher"
BATCHES = 40  # keep in step with 12_stream_prefetcher.expect
BATCH, IN_FEATURES, HIDDEN, OUT_FEATURES = 1024, 512, 256, 8  # 2 MiB per batch


class Prefetcher:
    """Copies the next batch on its own stream; get() hands the current one to the caller."""

    def __init__(self, batches, device):
        self.batches = iter(batches)
        self.device = device
        self.stream = torch.cuda.Stream(device=device)
        self.ready = torch.cuda.Event()
        self.next = None
        self._load()

    def _load(self):
        host = next(self.batches, None)
        if host is None:
            self.next = None
            return
        with torch.cuda.stream(self.stream):
            self.next = tuple(t.to(self.device, non_blocking=True) for t in host)
            self.ready.record(self.stream)

    def get(self):
        if self.next is None:
            return None
        current = torch.cuda.current_stream(self.device)
        current.wait_event(self.ready)  # the GPU orders the streams; the host runs on
        batch = self.next
        for t in batch:
            t.record_stream(current)  # freed only after the compute stream is done with it
        self._load()  # the next copy starts now, under this step's compute
        return batch


def main():
    variant, sync_debug, device = setup(NAME, sys.argv)
    cpu_gen = torch.Generator().manual_seed(5)
    batches = []
    for _ in range(BATCHES):
        x = torch.randn(BATCH, IN_FEATURES, generator=cpu_gen)
        batches.append((x.pin_memory(), torch.tanh(x[:, :OUT_FEATURES]).pin_memory()))
    model = mlp(device, IN_FEATURES, HIDDEN, OUT_FEATURES)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)

    def train_step(x, y):
        optimizer.zero_grad(set_to_none=True)
        loss = F.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        return loss.detach()

    losses = []
    with step_loop(NAME, sync_debug):
        if variant == "bad":
            for hx, hy in timed(batches):
                x = hx.to(device, non_blocking=True)  # @site copy
                y = hy.to(device, non_blocking=True)
                losses.append(train_step(x, y))
        else:
            prefetcher = Prefetcher(batches, device)
            for batch in timed(iter(prefetcher.get, None)):
                losses.append(train_step(*batch))
    host_losses = torch.stack(losses).cpu().tolist()
    first, last = host_losses[0], host_losses[-1]
    ok = len(host_losses) == BATCHES and math.isfinite(last) and last < first
    result(NAME, variant, batches=len(host_losses), first_loss=first, final_loss=last,
           loss_fell="yes" if ok else "no")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
