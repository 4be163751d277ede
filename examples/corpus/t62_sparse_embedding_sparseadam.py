#!/usr/bin/env python3
"""examples/corpus/t62_sparse_embedding_sparseadam.py: corpus workload (PyTorch). A
click-through-rate model for recommendation: user, item and category embedding tables with
`sparse=True`, a dense interaction MLP, BCE loss. The tables are trained with
`torch.optim.SparseAdam` and the MLP with Adam, as the PyTorch documentation suggests for
sparse gradients. SparseAdam's update is non-linear, so it calls `grad.coalesce()` on every
table's sparse gradient; on CUDA, coalescing sorts the indices and merges duplicates with
Thrust, whose `unique_by_key` returns the number of distinct rows to the host (a device-to-host
copy and a stream sync) before the values can be reduced. Three tables, three host waits per
step, each draining the backward pass queued before it. Dense embeddings with a fused or
foreach Adam (t70) update the rows on the device without a host read.
Planted: `self.sparse_opt.step()` in CTRTrainer.step, every step.
Clean: setup, allocator growth in the first steps, the dense optimizer, the final read.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

STEPS, BATCH, CHUNKS, USERS, ITEMS, CATS, DIM = 60, 2048, 6, 50000, 80000, 500, 32


class CTRModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.user = torch.nn.Embedding(USERS, DIM, sparse=True)
        self.item = torch.nn.Embedding(ITEMS, DIM, sparse=True)
        self.cat = torch.nn.Embedding(CATS, DIM, sparse=True)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(3 * DIM + 3, 256), torch.nn.ReLU(), torch.nn.Linear(256, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))

    def forward(self, users, items, cats):
        u, i, c = self.user(users), self.item(items), self.cat(cats)
        dots = torch.stack([(u * i).sum(-1), (u * c).sum(-1), (i * c).sum(-1)], dim=-1)
        return self.mlp(torch.cat([u, i, c, dots], dim=-1)).squeeze(-1)

    def sparse_parameters(self):
        return [self.user.weight, self.item.weight, self.cat.weight]


class CTRTrainer:
    def __init__(self, model, dev):
        self.model = model
        self.sparse_opt = torch.optim.SparseAdam(model.sparse_parameters(), lr=1e-2)
        self.dense_opt = torch.optim.Adam(model.mlp.parameters(), lr=1e-3)
        self.loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation

    def step(self, users, items, cats, clicks):
        logits = self.model(users, items, cats)  # SYNCSPY-CLEAN: allocator growth in the first steps
        loss = F.binary_cross_entropy_with_logits(logits, clicks)
        self.sparse_opt.zero_grad(set_to_none=True)
        self.dense_opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        self.sparse_opt.step()  # SYNCSPY-PROBLEM: SparseAdam coalesces each table's sparse gradient (Thrust unique_by_key returns the row count to the host), every step
        self.dense_opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
        self.loss_sum += loss.detach()


def zipf_ids(n_ids, shape, dev, gen):
    u = torch.rand(shape, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    return (n_ids * u.pow(3.0)).long().clamp_(max=n_ids - 1)


def make_logs(dev, gen):
    shape = (CHUNKS, BATCH)
    users, items = zipf_ids(USERS, shape, dev, gen), zipf_ids(ITEMS, shape, dev, gen)
    cats = items % CATS
    affinity = ((users * 7 + items * 13) % 10).float() / 10.0
    clicks = (torch.rand(shape, device=dev, generator=gen) < 0.1 + 0.6 * affinity).float()  # SYNCSPY-CLEAN: setup allocation
    return users, items, cats, clicks


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(21)
    users, items, cats, clicks = make_logs(dev, gen)
    model = CTRModel().to(dev)  # SYNCSPY-CLEAN: setup upload
    trainer = CTRTrainer(model, dev)

    model.train()
    for step in range(STEPS):
        k = step % CHUNKS
        trainer.step(users[k], items[k], cats[k], clicks[k])

    mean_loss = trainer.loss_sum.item() / STEPS  # SYNCSPY-CLEAN: final read
    ok = 0.0 < mean_loss < 0.75
    print("t62_sparse_embedding_sparseadam: steps=%d batch=%d tables=3 result=OK" % (STEPS, BATCH))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
