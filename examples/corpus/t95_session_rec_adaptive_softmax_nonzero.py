#!/usr/bin/env python3
"""examples/corpus/t95_session_rec_adaptive_softmax_nonzero.py: corpus workload (PyTorch).
Session-based next-item recommendation (GRU4Rec-style) over a catalogue of 50,000 items with
Zipf-like popularity: item embeddings, a two-layer GRU over 20-click session prefixes, and
`nn.AdaptiveLogSoftmaxWithLoss` (cutoffs 2,000 and 10,000) as the output layer, predicting the
next click at every position. The adaptive softmax is the textbook answer to a large output
vocabulary, but its forward (torch/nn/modules/adaptive.py) partitions the batch by cluster in
Python: for each of the three clusters it calls `target_mask.nonzero()` (a data-dependent
shape: CUDA nonzero copies the count to the host and waits for the stream), indexes
`target[target_mask]` with the boolean mask (nonzero again), and tests
`if row_indices.numel() == 0:` and `if used_rows != batch_size:` on the host. Six blocking reads
in the middle of every training step, the first behind the whole embedding and GRU forward
pass; between them the GPU idles while the host queues each cluster's projection, and the
backward pass is queued only after the last one.
Planted: the `self.crit(...)` line in SessionRecommender.forward, every step.
Clean: setup (the click log generated on the GPU, the model upload), allocator growth in the
first steps, the recall@20 evaluation with `crit.log_prob` after the loop (no partition, no
host read) and the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

STEPS, BATCH, SESSION, POOL, EVAL = 40, 256, 20, 8192, 512
N_ITEMS, EMB, HIDDEN, CUTOFFS = 50000, 128, 256, [2000, 10000]


class SessionRecommender(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(N_ITEMS, EMB)
        self.drop = torch.nn.Dropout(0.1)
        self.gru = torch.nn.GRU(EMB, HIDDEN, num_layers=2, batch_first=True)
        self.crit = torch.nn.AdaptiveLogSoftmaxWithLoss(HIDDEN, N_ITEMS, cutoffs=CUTOFFS, div_value=4.0)

    def encode(self, items):
        h, _ = self.gru(self.drop(self.emb(items)))
        return h

    def forward(self, items, target):
        h = self.encode(items)
        return self.crit(h.reshape(-1, HIDDEN), target.reshape(-1))  # SYNCSPY-PROBLEM: adaptive softmax partitions the batch on the host: nonzero() and target[mask] per cluster (blocking reads), every step


def make_sessions(n, dev, gen):
    """Popularity log-uniform over the catalogue; half the clicks follow a per-item 'also viewed' link."""
    link = torch.randint(0, N_ITEMS, (N_ITEMS,), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    u = torch.rand(n, SESSION + 1, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    popular = (torch.exp(u * math.log(N_ITEMS)) - 1.0).long().clamp(0, N_ITEMS - 1)
    follow = torch.rand(n, SESSION + 1, device=dev, generator=gen) < 0.5  # SYNCSPY-CLEAN: setup allocation
    clicks = torch.empty(n, SESSION + 1, dtype=torch.long, device=dev)  # SYNCSPY-CLEAN: setup allocation
    clicks[:, 0] = popular[:, 0]  # SYNCSPY-CLEAN: setup copy on the device
    for t in range(1, SESSION + 1):
        clicks[:, t] = torch.where(follow[:, t], link[clicks[:, t - 1]], popular[:, t])  # SYNCSPY-CLEAN: setup copy on the device
    return clicks[:, :-1].contiguous(), clicks[:, 1:].contiguous()


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(95)
    xs, ys = make_sessions(POOL + EVAL, dev, gen)
    model = SessionRecommender().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    losses = torch.zeros(STEPS, device=dev)  # SYNCSPY-CLEAN: setup allocation

    model.train()
    for step in range(STEPS):
        s = (step * BATCH) % POOL
        out = model(xs[s:s + BATCH], ys[s:s + BATCH])  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.zero_grad(set_to_none=True)
        out.loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
        losses[step] = out.loss.detach()  # SYNCSPY-CLEAN: the step's loss copied into the loss history on the device (asynchronous device-to-device copy)

    model.eval()
    with torch.no_grad():
        h = model.encode(xs[POOL:])[:, -1]  # SYNCSPY-CLEAN: evaluation after the loop
        top = model.crit.log_prob(h).topk(20, dim=1).indices  # SYNCSPY-CLEAN: evaluation after the loop, full log-probabilities (no partition)
        hits = (top == ys[POOL:, -1:]).any(dim=1).float().mean()
    first, last, recall = torch.stack([losses[:5].mean(), losses[-5:].mean(), hits]).tolist()  # SYNCSPY-CLEAN: final read
    ok = math.isfinite(first) and math.isfinite(last) and last < first and 0.0 <= recall <= 1.0
    print("t95_session_rec_adaptive_softmax_nonzero: steps=%d batch=%d session=%d items=%d clusters=%d result=%s" % (STEPS, BATCH, SESSION, N_ITEMS, len(CUTOFFS) + 1, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
