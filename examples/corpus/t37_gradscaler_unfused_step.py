#!/usr/bin/env python3
"""examples/corpus/t37_gradscaler_unfused_step.py: corpus workload (PyTorch). Mixed-precision
training of a tabular regression MLP the way the AMP recipe shows it: forward under
`torch.autocast(dtype=torch.float16)`, `scaler.scale(loss).backward()`, `scaler.step(opt)`,
`scaler.update()`, with a plain (foreach, not fused) AdamW. For an optimizer without
`_step_supports_amp_scaling`, `GradScaler.step` unscales the gradients and then, in
`_maybe_opt_step`, evaluates `any(v.item() for v in optimizer_state["found_inf_per_device"]...)`
(torch/amp/grad_scaler.py) to decide in Python whether to call `optimizer.step()`: a copy of
the found-inf flag to the host and a wait for the whole forward and backward pass, every step.
The sync is inside the library, but the line the user must change is theirs: with
`torch.optim.AdamW(..., fused=True)` (which sets `_step_supports_amp_scaling`) `scaler.step`
hands `grad_scale` and `found_inf` to the fused kernel and never reads them on the host (t38
is that version). `scaler.update()` is asynchronous (`torch._amp_update_scale_` on the device).
Planted: `scaler.step(opt)` with the non-fused optimizer, every step.
Clean: setup, allocator growth in the first steps, the final read.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

STEPS, BATCH, D_IN, HIDDEN, CHUNKS = 80, 1024, 256, 1024, 8


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    xs = torch.randn(CHUNKS, BATCH, D_IN, device=dev)  # SYNCSPY-CLEAN: setup allocation
    w_true = torch.randn(D_IN, 1, device=dev) / D_IN ** 0.5  # SYNCSPY-CLEAN: setup allocation
    ys = torch.tanh(xs @ w_true)  # SYNCSPY-CLEAN: setup allocation
    model = torch.nn.Sequential(torch.nn.Linear(D_IN, HIDDEN), torch.nn.SiLU(), torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.SiLU(), torch.nn.Linear(HIDDEN, 1)).to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01)
    scaler = torch.amp.GradScaler("cuda", init_scale=2.0 ** 14)
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation

    for step in range(STEPS):
        xb, yb = xs[step % CHUNKS], ys[step % CHUNKS]
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            out = model(xb)  # SYNCSPY-CLEAN: allocator growth in the first steps (fp16 weight copies, activations)
            loss = torch.nn.functional.mse_loss(out.float(), yb)
        scaler.scale(loss).backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        scaler.step(opt)  # SYNCSPY-PROBLEM: non-fused optimizer, GradScaler reads found_inf with .item() every step
        scaler.update()
        loss_sum += loss.detach()

    with torch.no_grad():
        final = torch.nn.functional.mse_loss(model(xs[0]), ys[0]).item()  # SYNCSPY-CLEAN: final read
    mean = loss_sum.item() / STEPS  # SYNCSPY-CLEAN: final read
    ok = final < 1.0 and mean < 1.0
    print("t37_gradscaler_unfused_step: steps=%d converged=%d result=OK" % (STEPS, int(ok)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
