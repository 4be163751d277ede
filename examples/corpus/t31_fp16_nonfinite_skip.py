#!/usr/bin/env python3
"""examples/corpus/t31_fp16_nonfinite_skip.py: corpus workload (PyTorch). Mixed-precision
training written without torch.amp.GradScaler: the forward pass runs under
`torch.autocast(dtype=torch.float16)`, the loss is multiplied by a dynamic loss scale kept as
a Python float, and after the backward pass the gradients are flattened into one buffer and
checked with `if not torch.isfinite(flat).all():` to skip the step and halve the scale when
they overflowed (the scale doubles again after a run of good steps). The check turns a GPU
boolean into a Python bool: a copy to the host and a wait for the forward and backward passes,
every step. (The skip can stay on the GPU: torch._amp_foreach_non_finite_check_and_unscale_
and torch._amp_update_scale_ with a fused optimizer's found_inf, or bf16 without a scale.)
The first steps overflow at the initial scale of 2**30, so some steps are really skipped.
Planted: the `if not torch.isfinite(...).all():` skip-step guard, every step.
Clean: setup, allocator growth in the first steps (the flattened gradient buffer included),
the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

STEPS, BATCH, D_IN, HIDDEN, D_OUT, CHUNKS = 80, 1024, 512, 2048, 64, 8
INIT_SCALE, GROWTH_INTERVAL = 2.0 ** 30, 15


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    xs = torch.randn(CHUNKS, BATCH, D_IN, device=dev)  # SYNCSPY-CLEAN: setup allocation
    teacher = torch.randn(D_IN, D_OUT, device=dev) / D_IN ** 0.5  # SYNCSPY-CLEAN: setup allocation
    ys = torch.sin(xs @ teacher) * 2.0  # SYNCSPY-CLEAN: setup allocation
    model = torch.nn.Sequential(torch.nn.Linear(D_IN, HIDDEN), torch.nn.GELU(), torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.GELU(), torch.nn.Linear(HIDDEN, D_OUT)).to(dev)  # SYNCSPY-CLEAN: setup upload
    params = list(model.parameters())
    opt = torch.optim.AdamW(params, lr=5e-4, weight_decay=0.01)
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation

    scale, good_run, skipped, applied = INIT_SCALE, 0, 0, 0
    for step in range(STEPS):
        xb, yb = xs[step % CHUNKS], ys[step % CHUNKS]
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            out = model(xb)  # SYNCSPY-CLEAN: allocator growth in the first steps (fp16 weight copies, activations)
        loss = torch.nn.functional.mse_loss(out.float(), yb)
        (loss * scale).backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        flat = torch.cat([p.grad.reshape(-1) for p in params])  # SYNCSPY-CLEAN: large temporary, allocator growth in the first steps
        if not torch.isfinite(flat).all():  # SYNCSPY-PROBLEM: GPU boolean in Python control flow every step (the skip-step guard)
            scale *= 0.5
            good_run = 0
            skipped += 1
            continue
        inv = 1.0 / scale
        for p in params:
            p.grad.mul_(inv)
        opt.step()  # SYNCSPY-CLEAN: AdamW state allocated on the first applied step
        loss_sum += loss.detach()
        applied += 1
        good_run += 1
        if good_run == GROWTH_INTERVAL:
            scale *= 2.0
            good_run = 0

    with torch.no_grad():
        final = torch.nn.functional.mse_loss(model(xs[0]), ys[0]).item()  # SYNCSPY-CLEAN: final read
    mean = loss_sum.item() / max(applied, 1)  # SYNCSPY-CLEAN: final read
    print("t31_fp16_nonfinite_skip: steps=%d skipped=%d log2_scale=%d mean_loss=%.3f final=%.3f result=OK" % (STEPS, skipped, int(math.log2(scale)), mean, final))
    return 0


if __name__ == "__main__":
    sys.exit(main())
