#!/usr/bin/env python3
"""examples/corpus/t02_tolist_accuracy.py: corpus workload (PyTorch). A small classifier on
synthetic clusters; every step it computes the batch accuracy in Python by pulling the
predictions to a list with `.tolist()` (a device-to-host copy and a wait for the step).
Planted: `.tolist()` of the predictions every step.
Clean: setup uploads, allocator growth in the first steps, the final accuracy read.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

STEPS, BATCH, CLASSES = 60, 1024, 10


def make_data(gen):
    centers = torch.randn(CLASSES, 32, generator=gen) * 3
    labels = torch.randint(0, CLASSES, (BATCH * 8,), generator=gen)
    points = centers[labels] + torch.randn(BATCH * 8, 32, generator=gen)
    return points, labels


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    gen = torch.Generator().manual_seed(1)
    points, labels = make_data(gen)
    points, labels = points.cuda(), labels.cuda()  # SYNCSPY-CLEAN: setup upload
    model = torch.nn.Sequential(torch.nn.Linear(32, 128), torch.nn.ReLU(), torch.nn.Linear(128, CLASSES)).cuda()  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    history = []
    for step in range(STEPS):
        lo = (step * BATCH) % points.shape[0]
        xb, yb = points[lo:lo + BATCH], labels[lo:lo + BATCH]
        logits = model(xb)  # SYNCSPY-CLEAN: allocator growth in the first steps
        loss = torch.nn.functional.cross_entropy(logits, yb)
        opt.zero_grad()
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: momentum buffers on the first step
        preds = logits.argmax(dim=1).tolist()  # SYNCSPY-PROBLEM: .tolist() every step
        truth = yb.cpu().tolist()  # SYNCSPY-PROBLEM: labels copied back every step
        history.append(sum(p == t for p, t in zip(preds, truth)) / BATCH)

    with torch.no_grad():
        acc = (model(points).argmax(1) == labels).float().mean().item()  # SYNCSPY-CLEAN: final read
    print("t02_tolist_accuracy: steps=%d last_batch_acc=%.3f acc=%.3f result=OK" % (STEPS, history[-1], acc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
