#!/usr/bin/env python3
"""examples/corpus/t96_pnn_ctr_torch_combinations.py: corpus workload (PyTorch).
Click-through-rate prediction with an inner-product neural network (IPNN) on a Criteo-like log:
26 hashed categorical fields (one shared embedding table with per-field offsets), 13 dense
features, pairwise inner products of the field embeddings fed with the embeddings and the dense
features to an MLP. The product layer builds its field pairs in `forward` with
`torch.combinations(self.field_ids, r=2)`. ATen implements combinations as meshgrid + a
triangular mask + `masked_select` per grid (aten/src/ATen/native/Itertools.cpp): `masked_select`
has a data-dependent output shape, so on CUDA it goes through nonzero, which copies the number
of selected elements to the host and waits for the stream. The pairs of 26 fields never change,
but the forward pass recomputes them, early in every step: the host waits for the previous
step's optimizer and this step's embedding lookup, then the GPU idles while the host queues the
rest of the step. `torch.triu_indices` once in `__init__` gives the same pairs without a read
(t103 does so).
Planted: the `torch.combinations(...)` line in InnerProduct.forward, every step.
Clean: setup (the click log generated on the GPU, the model upload), allocator growth in the
first steps, the AUC evaluation after the loop, the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

STEPS, BATCH, POOL, EVAL = 40, 4096, 65536, 8192
FIELDS, DENSE, VOCAB, EMB = 26, 13, 20000, 16


class InnerProduct(torch.nn.Module):
    """IPNN product layer: <e_i, e_j> for every pair of fields i < j."""

    def __init__(self, fields):
        super().__init__()
        self.register_buffer("field_ids", torch.arange(fields))

    def forward(self, e):
        row, col = torch.combinations(self.field_ids, r=2).unbind(1)  # SYNCSPY-PROBLEM: combinations = meshgrid + masked_select (nonzero: a blocking read of the count), every step
        return (e[:, row] * e[:, col]).sum(dim=-1)


class IPNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(FIELDS * VOCAB, EMB)
        self.register_buffer("offsets", torch.arange(FIELDS) * VOCAB)
        self.product = InnerProduct(FIELDS)
        n_pairs = FIELDS * (FIELDS - 1) // 2
        width = FIELDS * EMB + n_pairs + DENSE
        self.mlp = torch.nn.Sequential(
            torch.nn.Linear(width, 512), torch.nn.ReLU(), torch.nn.Dropout(0.1),
            torch.nn.Linear(512, 256), torch.nn.ReLU(), torch.nn.Dropout(0.1),
            torch.nn.Linear(256, 1))

    def forward(self, cat, dense):
        e = self.emb(cat + self.offsets)
        p = self.product(e)
        return self.mlp(torch.cat([e.flatten(1), p, torch.log1p(dense)], dim=1)).squeeze(1)


def make_log(n, dev, gen):
    """Log-uniform ids per field; the label follows a hidden logistic model with pair terms."""
    u = torch.rand(n, FIELDS, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    cat = (torch.exp(u * math.log(VOCAB)) - 1.0).long().clamp(0, VOCAB - 1)
    dense = torch.rand(n, DENSE, device=dev, generator=gen) * 100.0  # SYNCSPY-CLEAN: setup allocation
    w = torch.randn(FIELDS, VOCAB, device=dev, generator=gen) * 0.5  # SYNCSPY-CLEAN: setup allocation
    contrib = w.gather(1, cat.t()).t()
    score = contrib.sum(dim=1) * 0.3 + contrib[:, 0] * contrib[:, 1] + contrib[:, 2] * contrib[:, 5] - 0.02 * dense[:, 0]
    label = (torch.rand(n, device=dev, generator=gen) < torch.sigmoid(score)).float()  # SYNCSPY-CLEAN: setup allocation
    return cat, dense, label


def auc(score, label):
    """Rank-sum AUC on the device (no ties expected for continuous scores)."""
    ranks = torch.empty_like(score).scatter_(0, score.argsort(), torch.arange(1, score.numel() + 1, device=score.device, dtype=score.dtype))
    pos = label.sum()
    neg = label.numel() - pos
    return ((ranks * label).sum() - pos * (pos + 1) / 2) / (pos * neg)


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(96)
    cat, dense, label = make_log(POOL + EVAL, dev, gen)
    model = IPNN().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = torch.zeros(STEPS, device=dev)  # SYNCSPY-CLEAN: setup allocation

    model.train()
    for step in range(STEPS):
        s = (step * BATCH) % POOL
        logits = model(cat[s:s + BATCH], dense[s:s + BATCH])  # SYNCSPY-CLEAN: allocator growth in the first steps
        loss = F.binary_cross_entropy_with_logits(logits, label[s:s + BATCH])
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
        losses[step] = loss.detach()  # SYNCSPY-CLEAN: the step's loss copied into the loss history on the device (asynchronous device-to-device copy)

    model.eval()
    with torch.no_grad():
        val = auc(model(cat[POOL:], dense[POOL:]), label[POOL:])  # SYNCSPY-CLEAN: evaluation after the loop
    first, last, val_auc = torch.stack([losses[:5].mean(), losses[-5:].mean(), val]).tolist()  # SYNCSPY-CLEAN: final read
    ok = math.isfinite(first) and math.isfinite(last) and last < first and 0.0 <= val_auc <= 1.0
    print("t96_pnn_ctr_torch_combinations: steps=%d batch=%d fields=%d pairs=%d emb=%d result=%s" % (STEPS, BATCH, FIELDS, FIELDS * (FIELDS - 1) // 2, EMB, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
