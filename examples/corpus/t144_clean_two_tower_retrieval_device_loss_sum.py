#!/usr/bin/env python3
"""examples/corpus/t144_clean_two_tower_retrieval_device_loss_sum.py: corpus workload (PyTorch),
CLEAN. The two-tower retrieval model of t139 (user tower over the user id and the mean of the
last 20 items, item tower over the item id and its category, in-batch sampled softmax with the
logQ popularity correction, 4,096 interactions a step, 40,000 items) with the running loss kept
on the GPU (the fix of t139): `running += loss.detach()` adds the 0-dim CUDA loss into a 0-dim
CUDA accumulator, an asynchronous kernel, instead of `float(loss)`, whose `.item()` waited for
every step. The progress bar is updated once per epoch from the sum read after the step loop
(with the validation Recall@50), so nothing in the step loop reads the GPU and the host queues
each step while the previous one runs.
Clean: all of it; the marked lines are setup (the popularity table and the validation users
uploaded once), the loader's pinned host blocks (first batches only) and the pinned
`non_blocking=True` uploads, allocator growth in the first steps, the epoch's loss and
Recall@50 read once per epoch outside the step loop, the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

USERS, ITEMS, CATS, HIST, DIM, HIDDEN = 20000, 40000, 40, 20, 64, 1024
EPOCHS, BATCH, INTERACTIONS, VAL_USERS, TOP_K, TEMP = 3, 4096, 81920, 1024, 50, 0.05


def make_log(gen):
    """Interactions: each user likes two categories; items drawn Zipf-like inside them."""
    per_cat = ITEMS // CATS
    order = torch.randperm(ITEMS, generator=gen)  # order[c * per_cat + r]: rank r of category c
    item_cat = torch.empty(ITEMS, dtype=torch.long)
    item_cat[order] = torch.arange(ITEMS) // per_cat
    rank_w = 1.0 / (torch.arange(per_cat, dtype=torch.float64) + 5.0)
    fav = torch.randint(0, CATS, (USERS, 2), generator=gen)

    def draw(users, k):
        cat = fav[users[:, None], torch.randint(0, 2, (users.numel(), k), generator=gen)]
        rank = torch.multinomial(rank_w, users.numel() * k, replacement=True, generator=gen)
        return order[cat * per_cat + rank.view(users.numel(), k)]

    users = torch.randint(0, USERS, (INTERACTIONS + VAL_USERS,), generator=gen)
    hist = draw(users, HIST)
    target = draw(users, 1)[:, 0]
    counts = torch.bincount(target[:INTERACTIONS], minlength=ITEMS).double() + 1.0
    return users, hist, target, item_cat, (counts / counts.sum()).log().float()


class Tower(torch.nn.Module):
    def __init__(self, d_in):
        super().__init__()
        self.mlp = torch.nn.Sequential(torch.nn.Linear(d_in, HIDDEN), torch.nn.ReLU(),
                                       torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.ReLU(),
                                       torch.nn.Linear(HIDDEN, DIM))

    def forward(self, x):
        return F.normalize(self.mlp(x), dim=-1)  # SYNCSPY-CLEAN: growth, first steps and epoch


class TwoTower(torch.nn.Module):
    def __init__(self, item_cat, log_q):
        super().__init__()
        self.user_emb = torch.nn.Embedding(USERS, DIM)
        self.item_emb = torch.nn.Embedding(ITEMS, DIM)
        self.cat_emb = torch.nn.Embedding(CATS, DIM)
        self.user_tower, self.item_tower = Tower(2 * DIM), Tower(2 * DIM)
        self.register_buffer("item_cat", item_cat)
        self.register_buffer("log_q", log_q)

    def users(self, u, hist):
        return self.user_tower(torch.cat([self.user_emb(u), self.item_emb(hist).mean(1)], -1))

    def items(self, i):
        return self.item_tower(torch.cat([self.item_emb(i), self.cat_emb(self.item_cat[i])], -1))

    def loss(self, u, hist, target):
        logits = self.users(u, hist) @ self.items(target).t() / TEMP  # SYNCSPY-CLEAN: growth
        logits = logits - self.log_q[target][None, :]
        labels = torch.arange(logits.shape[0], device=logits.device)
        return F.cross_entropy(logits, labels)


class Progress:
    """The postfix of a tqdm-style bar (rendered to the job log, not the console)."""

    def __init__(self):
        self.postfix = ""

    def set_postfix(self, **kw):
        self.postfix = ", ".join("%s=%s" % kv for kv in kw.items())


def recall_at_k(model, val_u, val_h, val_t):
    with torch.no_grad():
        all_items = model.items(torch.arange(ITEMS, device=val_u.device))  # SYNCSPY-CLEAN: epoch
        scores = model.users(val_u, val_h) @ all_items.t()  # SYNCSPY-CLEAN: large, once per epoch
        top = scores.topk(TOP_K, dim=1).indices
        return (top == val_t[:, None]).any(dim=1).float().mean()


def main():
    if not torch.cuda.is_available():
        print("t144_clean_two_tower_retrieval_device_loss_sum: no CUDA device, result=SKIP")
        return 1
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    users, hist, target, item_cat, log_q = make_log(torch.Generator().manual_seed(139))
    n = INTERACTIONS
    model = TwoTower(item_cat, log_q).to(dev)  # SYNCSPY-CLEAN: setup upload
    val_u = users[n:].to(dev)  # SYNCSPY-CLEAN: setup upload, once
    val_h = hist[n:].to(dev)  # SYNCSPY-CLEAN: setup upload, once
    val_t = target[n:].to(dev)  # SYNCSPY-CLEAN: setup upload, once
    loader = DataLoader(TensorDataset(users[:n], hist[:n], target[:n]), batch_size=BATCH,
                        shuffle=True, generator=torch.Generator().manual_seed(7),
                        pin_memory=True, drop_last=True)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    bar, epoch_loss, recalls, steps = Progress(), [], [], 0

    for epoch in range(EPOCHS):
        model.train()
        running = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: one small allocation per epoch
        for i, (u, h, t) in enumerate(loader):  # SYNCSPY-CLEAN: pinned host blocks, first batches
            u = u.to(dev, non_blocking=True)  # SYNCSPY-CLEAN: pinned source, asynchronous
            h = h.to(dev, non_blocking=True)  # SYNCSPY-CLEAN: pinned source, asynchronous
            t = t.to(dev, non_blocking=True)  # SYNCSPY-CLEAN: pinned source, asynchronous
            loss = model.loss(u, h, t)  # SYNCSPY-CLEAN: allocator growth in the first steps
            opt.zero_grad(set_to_none=True)
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
            running += loss.detach()
            steps += 1
        epoch_loss.append(running.item() / (i + 1))  # SYNCSPY-CLEAN: once per epoch
        bar.set_postfix(epoch=epoch, loss="%.4f" % epoch_loss[-1])
        model.eval()
        recalls.append(recall_at_k(model, val_u, val_h, val_t).item())  # SYNCSPY-CLEAN: per epoch

    emb = model.item_emb.weight[:8].detach().cpu()  # SYNCSPY-CLEAN: final read
    chance = TOP_K / ITEMS
    ok = (all(math.isfinite(x) for x in epoch_loss) and epoch_loss[-1] < epoch_loss[0]
          and steps == EPOCHS * (n // BATCH) and bool(torch.isfinite(emb).all())
          and recalls[-1] > 5 * chance and bar.postfix.startswith("epoch="))
    print("t144_clean_two_tower_retrieval_device_loss_sum: epochs=%d steps=%d batch=%d items=%d "
          "result=%s" % (EPOCHS, steps, BATCH, ITEMS, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
