#!/usr/bin/env python3
"""examples/corpus/t43_one_hot_infer_classes.py: corpus workload (PyTorch). Knowledge
distillation of a multi-label tagger with label smoothing: each step the hard labels (on the
GPU) are turned into smoothed targets with `F.one_hot(labels)`, without `num_classes`. When
num_classes is -1 (the default) one_hot infers it as `self.max().item() + 1`
(aten/src/ATen/native/Onehot.cpp): a copy to the host and a wait for everything queued, every
step. With `num_classes=CLASSES` the CUDA path skips that read (it relies on the scatter's
device-side assert) and stays asynchronous; the evaluation helper at the end already passes
it, and is clean for that reason as well as being once.
Planted: `F.one_hot(labels)` without num_classes, every step.
Clean: setup, allocator growth in the first steps, the one_hot with num_classes and the read in
the final evaluation.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

STEPS, BATCH, D_IN, HIDDEN, CLASSES, CHUNKS, SMOOTH = 70, 512, 128, 512, 32, 6, 0.1


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    xs = torch.randn(CHUNKS, BATCH, D_IN, device=dev)  # SYNCSPY-CLEAN: setup allocation
    teacher = torch.nn.Linear(D_IN, CLASSES).to(dev)  # SYNCSPY-CLEAN: setup upload
    with torch.no_grad():
        labels_all = teacher(xs).argmax(dim=-1)  # SYNCSPY-CLEAN: setup allocation
        # every chunk contains the top class, so the inferred count is always CLASSES
        labels_all[:, 0] = CLASSES - 1
    student = torch.nn.Sequential(torch.nn.Linear(D_IN, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, CLASSES)).to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(student.parameters(), lr=1e-3)
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation

    for step in range(STEPS):
        xb, labels = xs[step % CHUNKS], labels_all[step % CHUNKS]
        target = F.one_hot(labels).float() * (1.0 - SMOOTH) + SMOOTH / CLASSES  # SYNCSPY-PROBLEM: one_hot infers num_classes with .item() every step
        logp = F.log_softmax(student(xb), dim=-1)  # SYNCSPY-CLEAN: allocator growth in the first steps
        loss = -(target * logp).sum(dim=-1).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
        loss_sum += loss.detach()

    with torch.no_grad():
        pred = student(xs[0]).argmax(dim=-1)
        hits = (F.one_hot(pred, num_classes=CLASSES) * F.one_hot(labels_all[0], num_classes=CLASSES)).sum().item()  # SYNCSPY-CLEAN: final evaluation, once
    mean = loss_sum.item() / STEPS  # SYNCSPY-CLEAN: final read
    ok = 0.0 < mean < 10.0 and 0 <= hits <= BATCH
    print("t43_one_hot_infer_classes: steps=%d finite=%d result=OK" % (STEPS, int(ok)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
