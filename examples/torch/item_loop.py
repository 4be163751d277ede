#!/usr/bin/env python3
"""examples/torch/item_loop.py: a reference workload of syncspy, the `.item()` sync in training.

A small MLP trained for STEPS steps on random data made on the GPU. Every step reads the loss
back with `loss.item()`, the most common hidden sync point in PyTorch code: torch copies the
scalar into a (pinned) host buffer with cudaMemcpyAsync and then calls cudaStreamSynchronize,
so the host waits for the whole step's queued work. syncspy must show those STEPS syncs and
point at the `.item()` line; item_loop.expect beside this file says what the database must hold.

Deterministic on purpose, so that output with and without the shim can be compared: fixed seeds,
data and model created on the device (no host-to-device copies muddle the picture), cuBLAS's
workspace pinned by CUBLAS_WORKSPACE_CONFIG, TF32 off, and the printed losses rounded to four
places. Exits 1 when no GPU is there or the loss did not fall.

Run under syncspy:
    LD_PRELOAD=/path/libsyncspy.so SYNCSPY_OUTPUT=out python3 examples/torch/item_loop.py
"""

import math
import os
import sys

# Must be set before cuBLAS initializes: a fixed workspace makes its kernels reproducible.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402  (after the environment above, on purpose)
import torch.nn.functional as F  # noqa: E402

# Keep STEPS in step with item_loop.expect.
STEPS = 60
BATCH, IN_FEATURES, HIDDEN, OUT_FEATURES = 512, 64, 128, 8
LEARNING_RATE = 0.05


def main():
    if not torch.cuda.is_available():
        print("item_loop: no CUDA device", file=sys.stderr)
        return 1
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.device("cuda")
    torch.manual_seed(0)  # seeds the CUDA generators too: the layers' initial weights

    data_rng = torch.Generator(device=device)
    data_rng.manual_seed(1234)
    inputs = torch.randn(BATCH, IN_FEATURES, device=device, generator=data_rng)
    teacher = torch.randn(IN_FEATURES, OUT_FEATURES, device=device, generator=data_rng)
    targets = torch.tanh(inputs @ teacher / math.sqrt(IN_FEATURES))

    model = torch.nn.Sequential(
        torch.nn.Linear(IN_FEATURES, HIDDEN, device=device),
        torch.nn.ReLU(),
        torch.nn.Linear(HIDDEN, OUT_FEATURES, device=device),
    )
    optimizer = torch.optim.SGD(model.parameters(), lr=LEARNING_RATE)

    losses = []
    for _ in range(STEPS):
        optimizer.zero_grad(set_to_none=True)
        loss = F.mse_loss(model(inputs), targets)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())  # the sync point this workload is about

    first, final = losses[0], losses[-1]
    fell = math.isfinite(final) and final < first
    print("item_loop: steps=%d first_loss=%.4f final_loss=%.4f loss_fell=%s"
          % (len(losses), first, final, "yes" if fell else "no"))
    return 0 if fell else 1


if __name__ == "__main__":
    sys.exit(main())
