#!/usr/bin/env python3
"""examples/corpus/t17_clip_norm_branch.py: corpus workload (PyTorch). A training loop with
gradient clipping and a warm-up/cosine learning rate that counts how often the clip fired with
`if grad_norm > MAX_NORM:` on the tensor clip_grad_norm_ returns, and then refreshes its
progress-bar text with an f-string of the loss, `f"{loss:.4f}"` (Tensor.__format__ calls
.item()). The first waits for the forward and backward passes every step; the second comes
right after the optimizer step and waits only for the optimizer's kernels: two planted
problems of very different cost.
Planted: the tensor comparison in `if` after clip_grad_norm_ (expensive), the f-string of
the loss (cheap), every step.
Clean: setup, allocator growth in the first steps, the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

STEPS, BATCH, CHUNKS, MAX_NORM, BASE_LR, WARMUP = 80, 4096, 8, 1.0, 2e-3, 10


def lr_at(step):
    if step < WARMUP:
        return BASE_LR * (step + 1) / WARMUP
    return BASE_LR * 0.5 * (1.0 + math.cos(math.pi * (step - WARMUP) / (STEPS - WARMUP)))


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    x_all = torch.randn(CHUNKS, BATCH, 256, device=dev)  # SYNCSPY-CLEAN: setup allocation
    w_true = torch.randn(256, 8, device=dev) / 16.0  # SYNCSPY-CLEAN: setup allocation
    y_all = torch.tanh(x_all @ w_true) * 3.0  # SYNCSPY-CLEAN: setup allocation
    model = torch.nn.Sequential(torch.nn.Linear(256, 2048), torch.nn.GELU(), torch.nn.Linear(2048, 2048), torch.nn.GELU(), torch.nn.Linear(2048, 8)).to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.AdamW(model.parameters(), lr=BASE_LR, weight_decay=0.01)

    clipped = 0
    postfix = ""
    for step in range(STEPS):
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        xb, yb = x_all[step % CHUNKS], y_all[step % CHUNKS]
        loss = torch.nn.functional.mse_loss(model(xb), yb)  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), MAX_NORM)  # SYNCSPY-CLEAN: allocator growth in the first steps
        if grad_norm > MAX_NORM:  # SYNCSPY-PROBLEM: tensor comparison in Python control flow every step
            clipped += 1
        opt.step()  # SYNCSPY-CLEAN: AdamW state allocated on the first step
        postfix = f"loss={loss:.4f} lr={lr_at(step):.2e}"  # SYNCSPY-PROBLEM: f-string of a CUDA scalar (.item()) every step

    with torch.no_grad():
        final = torch.nn.functional.mse_loss(model(x_all[0]), y_all[0]).item()  # SYNCSPY-CLEAN: final read
    print("t17_clip_norm_branch: steps=%d clipped=%d last=[%s] final=%.4f result=OK" % (STEPS, clipped, postfix, final))
    return 0


if __name__ == "__main__":
    sys.exit(main())
