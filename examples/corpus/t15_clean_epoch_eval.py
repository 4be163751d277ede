#!/usr/bin/env python3
"""examples/corpus/t15_clean_epoch_eval.py: corpus workload (PyTorch), CLEAN. Training in three
epochs of 25 steps; after each epoch (outside the step loop) the model is evaluated on a held
out set and the validation loss is read with `.item()` for the log: three reads in the run, not
one per step.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

EPOCHS, STEPS_PER_EPOCH, BATCH = 3, 25, 1024


def evaluate(model, xv, yv):
    with torch.no_grad():
        return torch.nn.functional.mse_loss(model(xv), yv)


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    w = torch.randn(96, 4)
    xt = torch.randn(STEPS_PER_EPOCH * BATCH, 96)
    xv = torch.randn(4096, 96)
    xt, yt = xt.to(dev), torch.tanh(xt @ w).to(dev)  # SYNCSPY-CLEAN: setup upload
    xv, yv = xv.to(dev), torch.tanh(xv @ w).to(dev)  # SYNCSPY-CLEAN: setup upload
    model = torch.nn.Sequential(torch.nn.Linear(96, 192), torch.nn.ReLU(), torch.nn.Linear(192, 4)).to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    log = []
    for epoch in range(EPOCHS):
        for step in range(STEPS_PER_EPOCH):
            xb, yb = xt[step * BATCH:(step + 1) * BATCH], yt[step * BATCH:(step + 1) * BATCH]
            loss = torch.nn.functional.mse_loss(model(xb), yb)  # SYNCSPY-CLEAN: allocator growth in the first steps
            opt.zero_grad()
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            opt.step()  # SYNCSPY-CLEAN: momentum buffers on the first step
        log.append(evaluate(model, xv, yv).item())  # SYNCSPY-CLEAN: once per epoch, outside the step loop

    print("t15_clean_epoch_eval: steps=%d val=%s result=OK" % (EPOCHS * STEPS_PER_EPOCH, " ".join("%.3f" % v for v in log)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
