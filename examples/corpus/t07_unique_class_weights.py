#!/usr/bin/env python3
"""examples/corpus/t07_unique_class_weights.py: corpus workload (PyTorch). A classifier on an
imbalanced stream that reweights its loss by the classes present in each batch, found with
`torch.unique(labels, return_counts=True)`: the number of classes is data-dependent, so torch
reads it back to the host and waits every step.
Planted: `torch.unique` every step.
Clean: setup, allocator growth, the final read.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

STEPS, BATCH, CLASSES = 60, 2048, 20


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    skew = torch.linspace(3.0, 0.1, CLASSES)
    labels_all = torch.multinomial(skew, STEPS * BATCH, replacement=True).view(STEPS, BATCH).to(dev)  # SYNCSPY-CLEAN: setup upload
    feats_all = torch.randn(STEPS, BATCH, 40, device=dev) + labels_all.unsqueeze(2).float() * 0.05  # SYNCSPY-CLEAN: setup allocation
    model = torch.nn.Linear(40, CLASSES).to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.SGD(model.parameters(), lr=0.2)

    for step in range(STEPS):
        xb, yb = feats_all[step], labels_all[step]
        classes, counts = torch.unique(yb, return_counts=True)  # SYNCSPY-PROBLEM: torch.unique every step
        weight = torch.zeros(CLASSES, device=dev)
        weight[classes] = counts.sum() / (counts.float() * len(classes))
        loss = torch.nn.functional.cross_entropy(model(xb), yb, weight=weight)  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.zero_grad()
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()

    final = loss.item()  # SYNCSPY-CLEAN: final read
    print("t07_unique_class_weights: steps=%d loss=%.3f result=OK" % (STEPS, final))
    return 0


if __name__ == "__main__":
    sys.exit(main())
