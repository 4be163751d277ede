#!/usr/bin/env python3
"""examples/corpus/t05_boolean_mask.py: corpus workload (PyTorch). A detection-style loss that
keeps only the confident anchors with boolean-mask indexing, `scores[mask]`: the size of the
result depends on the data, so torch copies the mask count to the host and waits every step.
Planted: the boolean-mask index every step.
Clean: setup, allocator growth, the final read.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

STEPS, ANCHORS, FEATURES = 60, 1 << 15, 64


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    feats = torch.randn(ANCHORS, FEATURES, device=dev)  # SYNCSPY-CLEAN: setup allocation
    target = (feats[:, 0] > 0.5).float()
    head = torch.nn.Linear(FEATURES, 1).to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.SGD(head.parameters(), lr=0.5)

    for step in range(STEPS):
        opt.zero_grad()
        scores = torch.sigmoid(head(feats)).squeeze(1)  # SYNCSPY-CLEAN: allocator growth in the first steps
        mask = (scores > 0.3) | (target > 0)
        loss = torch.nn.functional.binary_cross_entropy(scores[mask], target[mask])  # SYNCSPY-PROBLEM: boolean-mask indexing every step
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()

    kept = int(mask.sum())  # SYNCSPY-CLEAN: final read
    print("t05_boolean_mask: steps=%d kept=%d loss=%.4f result=OK" % (STEPS, kept, loss.item()))  # SYNCSPY-CLEAN: final read
    return 0


if __name__ == "__main__":
    sys.exit(main())
