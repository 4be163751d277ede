#!/usr/bin/env python3
"""examples/corpus/t70_clean_ctr_dense_fused_adam.py: corpus workload (PyTorch), CLEAN. A
click-through-rate model (user, item and category embeddings, a dot-product interaction and
an MLP) trained with dense embedding gradients and one `torch.optim.Adam(fused=True)` over all
parameters: the embedding tables' gradients are dense tensors written by the embedding
backward (a scatter-add kernel on the device, 2048 ids per table), and the fused kernel
updates every row with no host read.
Click logs are decoded on the host into one pinned buffer per field in setup; each batch is
uploaded with `.to(dev, non_blocking=True)`. A warm-up LambdaLR (host arithmetic), the loss
and a ranking metric (AUC from `argsort`, computed on the device at the end of each epoch,
outside the step loop) stay on the GPU; one final read of everything.
"""
import os
import random
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

EPOCHS, STEPS_PER_EPOCH, BATCH, USERS, ITEMS, CATS, DIM, WARMUP = 2, 30, 2048, 50000, 80000, 500, 32, 10


class CTRModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.user = torch.nn.Embedding(USERS, DIM)
        self.item = torch.nn.Embedding(ITEMS, DIM)
        self.cat = torch.nn.Embedding(CATS, DIM)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(3 * DIM + 3, 256), torch.nn.ReLU(), torch.nn.Linear(256, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))

    def forward(self, users, items, cats):
        u, i, c = self.user(users), self.item(items), self.cat(cats)
        dots = torch.stack([(u * i).sum(-1), (u * c).sum(-1), (i * c).sum(-1)], dim=-1)
        return self.mlp(torch.cat([u, i, c, dots], dim=-1)).squeeze(-1)


def auc(scores, labels):
    """Rank-sum AUC on the device (ties broken by order)."""
    ranks = torch.empty_like(scores)
    ranks[torch.argsort(scores)] = torch.arange(1, scores.numel() + 1, device=scores.device, dtype=scores.dtype)
    pos = labels.sum()
    neg = labels.numel() - pos
    return ((ranks * labels).sum() - pos * (pos + 1) / 2) / (pos * neg).clamp_min(1.0)


def decode_logs(rng, n):
    """The host-side log decoder: skewed ids, clicks from a hidden affinity."""
    users = [int(USERS * rng.random() ** 3) for _ in range(n)]
    items = [int(ITEMS * rng.random() ** 3) for _ in range(n)]
    cats = [i % CATS for i in items]
    clicks = [1.0 if rng.random() < 0.1 + 0.06 * ((u * 7 + i * 13) % 10) else 0.0 for u, i in zip(users, items)]
    fields = (torch.tensor(users), torch.tensor(items), torch.tensor(cats), torch.tensor(clicks))
    return [f.pin_memory() for f in fields]  # SYNCSPY-CLEAN: setup, the decoded logs pinned once


class Trainer:
    def __init__(self, dev):
        self.dev = dev
        self.model = CTRModel().to(dev)  # SYNCSPY-CLEAN: setup upload
        self.opt = torch.optim.Adam(self.model.parameters(), lr=3e-3, fused=True)
        self.sched = torch.optim.lr_scheduler.LambdaLR(self.opt, lambda s: min(1.0, (s + 1) / WARMUP))
        self.loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
        self.scores = torch.empty(STEPS_PER_EPOCH * BATCH, device=dev)  # SYNCSPY-CLEAN: setup allocation
        self.labels = torch.empty(STEPS_PER_EPOCH * BATCH, device=dev)  # SYNCSPY-CLEAN: setup allocation

    def step(self, k, fields):
        users, items, cats, clicks = (f.to(self.dev, non_blocking=True) for f in fields)  # SYNCSPY-CLEAN: asynchronous uploads from pinned memory
        logits = self.model(users, items, cats)  # SYNCSPY-CLEAN: allocator growth in the first steps
        loss = F.binary_cross_entropy_with_logits(logits, clicks)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps (dense embedding gradients)
        self.opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
        self.sched.step()
        self.loss_sum += loss.detach()
        self.scores[k * BATCH:(k + 1) * BATCH] = logits.detach()  # SYNCSPY-CLEAN: device-to-device copy into the epoch's score buffer
        self.labels[k * BATCH:(k + 1) * BATCH] = clicks  # SYNCSPY-CLEAN: device-to-device copy into the epoch's label buffer


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    logs = decode_logs(random.Random(0), STEPS_PER_EPOCH * BATCH)
    trainer = Trainer(dev)
    epoch_auc = []

    trainer.model.train()
    for epoch in range(EPOCHS):
        for k in range(STEPS_PER_EPOCH):
            fields = [f[k * BATCH:(k + 1) * BATCH] for f in logs]
            trainer.step(k, fields)
        epoch_auc.append(auc(trainer.scores, trainer.labels))  # SYNCSPY-CLEAN: once per epoch, outside the step loop

    aucs = torch.stack(epoch_auc).tolist()  # SYNCSPY-CLEAN: final read
    mean_loss = trainer.loss_sum.item() / (EPOCHS * STEPS_PER_EPOCH)  # SYNCSPY-CLEAN: final read
    ok = 0.0 < mean_loss < 0.75 and aucs[-1] > 0.5
    print("t70_clean_ctr_dense_fused_adam: epochs=%d steps=%d batch=%d result=OK" % (EPOCHS, EPOCHS * STEPS_PER_EPOCH, BATCH))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
