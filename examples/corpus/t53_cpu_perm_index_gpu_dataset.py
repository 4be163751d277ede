#!/usr/bin/env python3
"""examples/corpus/t53_cpu_perm_index_gpu_dataset.py: corpus workload (PyTorch). A tabular
classifier trained from a dataset kept whole on the GPU (no DataLoader: the data fits), with a
small loader class that shuffles it every epoch. The shuffle is `torch.randperm(n)` drawn on the
CPU, and every batch is gathered with `self.x[idx]`, `self.y[idx]` where `idx` is a slice of
that CPU permutation. Advanced indexing moves an index tensor that is not on the indexed
tensor's device to that device first (`index.to(self.device())` in ATen's make_info), a
blocking host-to-device copy from pageable memory: cudaMemcpyAsync followed by a stream
synchronize, so the gather waits for the previous step's backward and optimizer update before
the host can queue anything else. The second gather waits only for the first (cheap). Drawing
the permutation on the device (`torch.randperm(n, device=dev)`, t35) removes both.
Planted: the two gathers with a CPU index in the loader, every batch (the first expensive,
the second cheap).
Clean: setup uploads, allocator growth in the first steps, the per-epoch validation read and
the per-epoch read of the summed training loss (outside the step loop), the final print.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

EPOCHS, N_TRAIN, N_VAL, BATCH, FEATURES, HIDDEN, CLASSES = 2, 49152, 8192, 1024, 64, 512, 10


class DeviceTensorLoader:
    """Iterates over a dataset that already lives on the GPU, reshuffled every epoch."""

    def __init__(self, x, y, batch_size, seed):
        self.x, self.y, self.batch_size = x, y, batch_size
        self.gen = torch.Generator().manual_seed(seed)

    def __len__(self):
        return self.x.shape[0] // self.batch_size

    def __iter__(self):
        perm = torch.randperm(self.x.shape[0], generator=self.gen)
        for b in range(len(self)):
            idx = perm[b * self.batch_size:(b + 1) * self.batch_size]
            xb = self.x[idx]  # SYNCSPY-PROBLEM: CPU index copied to the device (blocking, pageable) before the gather, every batch
            yb = self.y[idx]  # SYNCSPY-PROBLEM: CPU index copied to the device again (blocking, pageable), every batch
            yield xb, yb


class TabularMLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(FEATURES, HIDDEN), torch.nn.BatchNorm1d(HIDDEN), torch.nn.ReLU(),
            torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.BatchNorm1d(HIDDEN), torch.nn.ReLU(),
            torch.nn.Linear(HIDDEN, CLASSES))

    def forward(self, x):
        return self.net(x)


def train_one_epoch(model, loader, opt, sched, dev):
    model.train()
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: once per epoch
    for xb, yb in loader:
        loss = F.cross_entropy(model(xb), yb)  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: momentum buffers allocated on the first step
        sched.step()
        loss_sum += loss.detach()
    return loss_sum.item() / len(loader)  # SYNCSPY-CLEAN: once per epoch, outside the step loop


@torch.no_grad()
def evaluate(model, x_val, y_val):
    model.eval()
    return (model(x_val).argmax(dim=-1) == y_val).float().mean().item()  # SYNCSPY-CLEAN: once per epoch, outside the step loop


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    w_true = torch.randn(FEATURES, CLASSES, device=dev)  # SYNCSPY-CLEAN: setup allocation
    x_train = torch.randn(N_TRAIN, FEATURES, device=dev)  # SYNCSPY-CLEAN: setup allocation
    y_train = (x_train @ w_true + 0.5 * torch.randn(N_TRAIN, CLASSES, device=dev)).argmax(dim=-1)  # SYNCSPY-CLEAN: setup allocation
    x_val = torch.randn(N_VAL, FEATURES, device=dev)  # SYNCSPY-CLEAN: setup allocation
    y_val = (x_val @ w_true).argmax(dim=-1)  # SYNCSPY-CLEAN: setup allocation

    model = TabularMLP().to(dev)  # SYNCSPY-CLEAN: setup upload
    loader = DeviceTensorLoader(x_train, y_train, BATCH, seed=3)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=EPOCHS * len(loader))

    losses, accuracies = [], []
    for epoch in range(EPOCHS):
        losses.append(train_one_epoch(model, loader, opt, sched, dev))
        accuracies.append(evaluate(model, x_val, y_val))

    ok = losses[-1] < losses[0] and accuracies[-1] > 0.5
    print("t53_cpu_perm_index_gpu_dataset: epochs=%d steps_per_epoch=%d learned=%d result=OK" % (EPOCHS, len(loader), int(ok)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
