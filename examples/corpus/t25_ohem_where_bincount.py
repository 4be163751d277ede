#!/usr/bin/env python3
"""examples/corpus/t25_ohem_where_bincount.py: corpus workload (PyTorch). A dense detection
head trained with online hard-negative mining and class-balanced positives, in the style of
SSD/RetinaNet code: after the per-anchor loss, `pos_idx = torch.where(labels > 0)[0]` (the
one-argument form is nonzero: a data-dependent size, read back to the host, waits for the
forward pass) gives the number of positives, which sizes the top-k of hard negatives, and
`torch.bincount(labels[pos_idx], minlength=CLASSES)` counts the positives per class (on CUDA
bincount reads the input's min and max back to size its output, minlength or not; it runs
right after the first wait, so it costs little): one expensive and one cheap planted problem.
Planted: `torch.where(cond)` (expensive) and `torch.bincount` (cheap), every step.
Clean: setup, allocator growth in the first steps, the final read.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

STEPS, ANCHORS, FEATS, CLASSES, NEG_RATIO = 50, 131072, 64, 21, 3  # class 0: background


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    base = torch.randn(ANCHORS, FEATS, device=dev)  # SYNCSPY-CLEAN: setup allocation
    proto = torch.randn(CLASSES, FEATS, device=dev)  # SYNCSPY-CLEAN: setup allocation
    fg = torch.rand(STEPS, ANCHORS, device=dev) < 0.02  # SYNCSPY-CLEAN: setup allocation
    cls = torch.randint(1, CLASSES, (STEPS, ANCHORS), device=dev)  # SYNCSPY-CLEAN: setup allocation
    labels_all = torch.where(fg, cls, torch.zeros_like(cls))  # SYNCSPY-CLEAN: setup allocation
    head = torch.nn.Sequential(torch.nn.Linear(FEATS, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, CLASSES)).to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.SGD(head.parameters(), lr=0.05, momentum=0.9)

    total_pos = 0
    for step in range(STEPS):
        labels = labels_all[step]
        feats = base + 0.5 * proto[labels] + 0.1 * torch.randn(ANCHORS, FEATS, device=dev)  # SYNCSPY-CLEAN: large temporaries, allocator growth in the first steps
        loss_all = torch.nn.functional.cross_entropy(head(feats), labels, reduction="none")  # SYNCSPY-CLEAN: allocator growth in the first steps
        pos = labels > 0
        pos_idx = torch.where(pos)[0]  # SYNCSPY-PROBLEM: one-argument torch.where (nonzero) every step
        num_pos = pos_idx.numel()
        per_class = torch.bincount(labels[pos_idx], minlength=CLASSES)  # SYNCSPY-PROBLEM: bincount reads min and max back every step
        cls_w = num_pos / (per_class.clamp(min=1).float() * (CLASSES - 1))
        pos_w = pos.float() * cls_w[labels]
        hard_neg = loss_all.detach().masked_fill(pos, 0.0).topk(NEG_RATIO * num_pos).indices
        neg_w = torch.zeros(ANCHORS, device=dev).index_fill_(0, hard_neg, 1.0)
        loss = (loss_all * (pos_w + neg_w)).sum() / max(num_pos, 1)  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: momentum buffers allocated on the first step
        total_pos += num_pos

    print("t25_ohem_where_bincount: steps=%d positives=%d loss=%.4f result=OK" % (STEPS, total_pos, loss.item()))  # SYNCSPY-CLEAN: final read
    return 0


if __name__ == "__main__":
    sys.exit(main())
