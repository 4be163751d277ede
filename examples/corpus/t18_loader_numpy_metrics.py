#!/usr/bin/env python3
"""examples/corpus/t18_loader_numpy_metrics.py: corpus workload (PyTorch). A plain training
script: a torch.utils.data.DataLoader over CPU tensors (no pin_memory), each batch moved with
a blocking `.to(dev)`, and a running accuracy computed in NumPy from
`logits.detach().sigmoid().cpu().numpy()` after every optimizer step. The `.cpu()` waits for
the whole step (forward, backward, Adam) every step; the upload at the top of the next step
then finds the GPU idle and costs only its own pageable copy: one expensive and one cheap
planted problem. A validation loss is read once per epoch, outside the step loop.
Planted: the `.cpu().numpy()` of the predictions (expensive) and the blocking upload from
pageable memory (cheap), every step.
Clean: setup, allocator growth in the first steps, the per-epoch validation read.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

EPOCHS, STEPS_PER_EPOCH, BATCH, FEATURES = 3, 20, 2048, 64


def evaluate(model, xv, yv):
    with torch.no_grad():
        return torch.nn.functional.binary_cross_entropy_with_logits(model(xv), yv)  # SYNCSPY-CLEAN: validation forward, once per epoch


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator().manual_seed(5)
    x_cpu = torch.randn(STEPS_PER_EPOCH * BATCH, FEATURES, generator=gen)
    y_cpu = (x_cpu[:, :8].sum(dim=1, keepdim=True) > 0).float()
    xv_cpu = torch.randn(4096, FEATURES, generator=gen)
    xv, yv = xv_cpu.to(dev), (xv_cpu[:, :8].sum(dim=1, keepdim=True) > 0).float().to(dev)  # SYNCSPY-CLEAN: setup upload
    loader = DataLoader(TensorDataset(x_cpu, y_cpu), batch_size=BATCH, shuffle=True, drop_last=True, generator=torch.Generator().manual_seed(6))
    model = torch.nn.Sequential(torch.nn.Linear(FEATURES, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 1)).to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    correct, seen, val_log = 0, 0, []
    for epoch in range(EPOCHS):
        for xb_cpu, yb_cpu in loader:
            xb, yb = xb_cpu.to(dev), yb_cpu.to(dev)  # SYNCSPY-PROBLEM: blocking upload from pageable memory every step
            logits = model(xb)  # SYNCSPY-CLEAN: allocator growth in the first steps
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
            probs = logits.detach().sigmoid().cpu().numpy()  # SYNCSPY-PROBLEM: predictions copied to the host every step
            correct += int(((probs[:, 0] > 0.5) == (yb_cpu.numpy()[:, 0] > 0.5)).sum())
            seen += probs.shape[0]
        val_log.append(evaluate(model, xv, yv).item())  # SYNCSPY-CLEAN: once per epoch, outside the step loop

    print("t18_loader_numpy_metrics: steps=%d train_acc=%.3f val=%s result=OK" % (EPOCHS * STEPS_PER_EPOCH, correct / seen, " ".join("%.3f" % v for v in val_log)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
