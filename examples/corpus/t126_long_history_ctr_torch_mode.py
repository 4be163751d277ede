#!/usr/bin/env python3
"""examples/corpus/t126_long_history_ctr_torch_mode.py: corpus workload (PyTorch).
Click-through prediction with long user behaviour sequences (the last 4,096 items each user clicked,
100,000 items in 1,000 categories and 5,000 brands): target attention over the whole history
(DIN-style, an attention MLP per history item), plus two long-term-interest features, the user's
dominant category and dominant brand, computed in `forward` with `torch.mode(..., dim=1)`. On CUDA,
`mode` uses its fused kernel only for slices of at most 2,048 elements (`slice_size <= 2 *
MAX_BLOCK_SIZE` in aten/src/ATen/native/cuda/TensorModeKernel.cpp); longer slices go to
`launch_apply_mode_kernel` (TensorModeKernel.cu), a host loop over the slices that runs, for each
one, a Thrust `sort_by_key`, `inner_product`, `reduce_by_key`, `max_element` and `find` under
`thrust::cuda::par` (each returns to the host and synchronizes), two device reads through Thrust
device references and a `memcpy_and_sync` of the index: about ten blocking waits per user, 64 users
per call, two calls per step, the first behind the previous step's backward pass and update. A fixed
category and brand vocabulary makes the feature a count and an argmax on the device (t130).
Planted: the two `torch.mode(...)` lines in LongHistoryCTR.forward, every step (one per feature).
Clean: setup (the item tables and the click log generated on the GPU, the log downloaded once into
pinned memory), each batch uploaded asynchronously from the pinned log, allocator growth in the
first steps, validation accuracy read once per epoch outside the step loop, the final reads and the
dominant-category feature checked against the CPU after the loop.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

EPOCHS, STEPS_PER_EPOCH, BATCH, USERS, VAL_USERS, HISTORY = 2, 16, 64, 1024, 256, 4096
CATEGORIES, ITEMS_PER_CAT, BRANDS, DIM, ATT_HIDDEN = 1000, 100, 5000, 64, 128


class LongHistoryCTR(torch.nn.Module):
    def __init__(self, item_cat, item_brand):
        super().__init__()
        self.register_buffer("item_cat", item_cat)
        self.register_buffer("item_brand", item_brand)
        self.item_emb = torch.nn.Embedding(CATEGORIES * ITEMS_PER_CAT, DIM)
        self.cat_emb = torch.nn.Embedding(CATEGORIES, DIM)
        self.brand_emb = torch.nn.Embedding(BRANDS, DIM)
        self.att = torch.nn.Sequential(torch.nn.Linear(3 * DIM, ATT_HIDDEN), torch.nn.ReLU(), torch.nn.Linear(ATT_HIDDEN, 1))
        self.mlp = torch.nn.Sequential(torch.nn.Linear(4 * DIM, 256), torch.nn.ReLU(), torch.nn.Linear(256, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))

    def forward(self, target, hist):
        hist_cat, hist_brand = self.item_cat[hist], self.item_brand[hist]  # SYNCSPY-CLEAN: history features gathered on the device (large temporaries, allocator growth in the first steps)
        dom_cat = torch.mode(hist_cat, dim=1).values  # SYNCSPY-PROBLEM: slices of 4,096 > 2,048: a host loop over the 64 users with Thrust calls and blocking reads, every step
        dom_brand = torch.mode(hist_brand, dim=1).values  # SYNCSPY-PROBLEM: the same host loop for the brands, every step
        q = self.item_emb(target) + self.cat_emb(self.item_cat[target])
        k = self.item_emb(hist) + self.cat_emb(hist_cat)  # SYNCSPY-CLEAN: history embeddings (a large temporary, allocator growth in the first steps)
        qe = q[:, None].expand_as(k)
        scores = self.att(torch.cat([qe, k, qe * k], dim=-1)).squeeze(-1)  # SYNCSPY-CLEAN: the attention MLP over 4,096 items (large temporaries, allocator growth in the first steps)
        pooled = (scores.softmax(dim=-1)[..., None] * k).sum(1)  # SYNCSPY-CLEAN: a large temporary, allocator growth in the first steps
        feats = torch.cat([q, pooled, self.cat_emb(dom_cat), self.brand_emb(dom_brand)], dim=-1)
        return self.mlp(feats).squeeze(-1)


def make_users(n, dev, gen, item_brand):
    """Three preferred categories per user (70% of clicks); the target is from the first one (clicked) or random."""
    pref = torch.randint(0, CATEGORIES, (n, 3), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    pick = torch.randint(0, 3, (n, HISTORY), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    loyal = torch.rand(n, HISTORY, device=dev, generator=gen) < 0.7  # SYNCSPY-CLEAN: setup allocation
    cat = torch.where(loyal, pref.gather(1, pick), torch.randint(0, CATEGORIES, (n, HISTORY), device=dev, generator=gen))  # SYNCSPY-CLEAN: setup allocation
    hist = cat * ITEMS_PER_CAT + torch.randint(0, ITEMS_PER_CAT, (n, HISTORY), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup, the history store
    clicked = torch.rand(n, device=dev, generator=gen) < 0.5  # SYNCSPY-CLEAN: setup allocation
    tcat = torch.where(clicked, pref[:, 0], torch.randint(0, CATEGORIES, (n,), device=dev, generator=gen))  # SYNCSPY-CLEAN: setup allocation
    target = tcat * ITEMS_PER_CAT + torch.randint(0, ITEMS_PER_CAT, (n,), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    return hist, target, clicked.float()


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(126)
    items = torch.arange(CATEGORIES * ITEMS_PER_CAT, device=dev)  # SYNCSPY-CLEAN: setup allocation
    item_cat = items // ITEMS_PER_CAT
    item_brand = (item_cat * 5 + torch.randint(0, 5, items.shape, device=dev, generator=gen)) % BRANDS  # SYNCSPY-CLEAN: setup allocation
    hist_dev, target_dev, label_dev = make_users(USERS, dev, gen, item_brand)
    hist = torch.empty(hist_dev.shape, dtype=torch.long, pin_memory=True)  # SYNCSPY-CLEAN: setup, the pinned click log
    target = torch.empty(target_dev.shape, dtype=torch.long, pin_memory=True)  # SYNCSPY-CLEAN: setup, the pinned click log
    label = torch.empty(label_dev.shape, pin_memory=True)  # SYNCSPY-CLEAN: setup, the pinned click log
    hist.copy_(hist_dev)  # SYNCSPY-CLEAN: setup, the log downloaded once (stand-in for the feature store)
    target.copy_(target_dev)  # SYNCSPY-CLEAN: setup, the log downloaded once
    label.copy_(label_dev)  # SYNCSPY-CLEAN: setup, the log downloaded once
    del hist_dev, target_dev, label_dev
    val_hist, val_target, val_label = make_users(VAL_USERS, dev, gen, item_brand)
    model = LongHistoryCTR(item_cat, item_brand).to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = torch.zeros(EPOCHS * STEPS_PER_EPOCH, device=dev)  # SYNCSPY-CLEAN: setup allocation
    val_acc = []

    for epoch in range(EPOCHS):
        model.train()
        for i in range(STEPS_PER_EPOCH):
            step = epoch * STEPS_PER_EPOCH + i
            s = i * BATCH
            b_hist = hist[s:s + BATCH].to(dev, non_blocking=True)  # SYNCSPY-CLEAN: asynchronous copy from pinned memory (the log is never rewritten)
            b_target = target[s:s + BATCH].to(dev, non_blocking=True)  # SYNCSPY-CLEAN: asynchronous copy from pinned memory
            b_label = label[s:s + BATCH].to(dev, non_blocking=True)  # SYNCSPY-CLEAN: asynchronous copy from pinned memory
            logit = model(b_target, b_hist)  # its reads are the planted lines in LongHistoryCTR.forward
            loss = F.binary_cross_entropy_with_logits(logit, b_label)
            opt.zero_grad(set_to_none=True)
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
            losses[step] = loss.detach()  # SYNCSPY-CLEAN: the step's loss copied into the history on the device (asynchronous device-to-device copy)
        model.eval()
        with torch.no_grad():
            pred = model(val_target, val_hist) > 0  # once per epoch, outside the step loop (its reads are the planted lines)
        val_acc.append(pred.float().eq(val_label).float().mean().item())  # SYNCSPY-CLEAN: once per epoch, outside the step loop

    first, last = losses[:5].mean().item(), losses[-5:].mean().item()  # SYNCSPY-CLEAN: final read
    cats = item_cat[val_hist[:8]]
    dom = torch.mode(cats, dim=1).values.cpu()  # SYNCSPY-CLEAN: teardown, the feature for 8 users, read once
    cats_cpu = cats.cpu()  # SYNCSPY-CLEAN: teardown, one download for the CPU reference
    best = torch.stack([torch.bincount(row, minlength=CATEGORIES).max() for row in cats_cpu])
    got = (cats_cpu == dom[:, None]).sum(1)
    ok = math.isfinite(first) and math.isfinite(last) and last < first and all(0.0 <= a <= 1.0 for a in val_acc) and torch.equal(best, got)
    print("t126_long_history_ctr_torch_mode: epochs=%d steps=%d batch=%d history=%d categories=%d result=%s" % (EPOCHS, EPOCHS * STEPS_PER_EPOCH, BATCH, HISTORY, CATEGORIES, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
