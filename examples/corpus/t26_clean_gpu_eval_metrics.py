#!/usr/bin/env python3
"""examples/corpus/t26_clean_gpu_eval_metrics.py: corpus workload (PyTorch), CLEAN. An
evaluation script for a classifier: `torch.no_grad()`, static batch shapes, and every metric
(summed loss, top-1 and top-5 hits, a confusion matrix built from one-hot products rather than
bincount) accumulated in GPU tensors; the loop only queues work. The metrics are copied to the
host once, after the loop.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

STEPS, BATCH, FEATURES, CLASSES = 60, 512, 256, 10


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, CLASSES)).to(dev).eval()  # SYNCSPY-CLEAN: setup upload
    xs = torch.randn(STEPS, BATCH, FEATURES, device=dev)  # SYNCSPY-CLEAN: setup allocation
    classes = torch.arange(CLASSES, device=dev)  # SYNCSPY-CLEAN: setup allocation
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
    top1 = torch.zeros((), dtype=torch.long, device=dev)  # SYNCSPY-CLEAN: setup allocation
    top5 = torch.zeros((), dtype=torch.long, device=dev)  # SYNCSPY-CLEAN: setup allocation
    confusion = torch.zeros(CLASSES, CLASSES, device=dev)  # SYNCSPY-CLEAN: setup allocation

    with torch.no_grad():
        # "ground truth": the model's own decisions on noisy inputs, so the accuracy is not trivial
        ys = model(xs + 0.5 * torch.randn_like(xs)).argmax(dim=-1)  # SYNCSPY-CLEAN: setup allocation
        for step in range(STEPS):
            xb, yb = xs[step], ys[step]
            logits = model(xb)  # SYNCSPY-CLEAN: allocator growth in the first steps
            loss_sum += torch.nn.functional.cross_entropy(logits, yb, reduction="sum")
            pred = logits.argmax(dim=1)
            top1 += (pred == yb).sum()
            top5 += (logits.topk(5, dim=1).indices == yb.unsqueeze(1)).any(dim=1).sum()
            confusion += (yb.unsqueeze(1) == classes).float().T @ (pred.unsqueeze(1) == classes).float()

    summary = torch.stack([loss_sum / (STEPS * BATCH), top1.float(), top5.float()]).cpu()  # SYNCSPY-CLEAN: final read, once
    cm = confusion.cpu()  # SYNCSPY-CLEAN: final read, once
    n = STEPS * BATCH
    assert int(cm.sum()) == n and int(cm.diagonal().sum()) == int(summary[1])
    print("t26_clean_gpu_eval_metrics: steps=%d loss=%.4f top1=%.4f top5=%.4f result=OK" % (STEPS, float(summary[0]), float(summary[1]) / n, float(summary[2]) / n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
