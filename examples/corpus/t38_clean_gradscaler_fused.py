#!/usr/bin/env python3
"""examples/corpus/t38_clean_gradscaler_fused.py: corpus workload (PyTorch), CLEAN. The same
mixed-precision training as t37 with `torch.optim.AdamW(..., fused=True)`. The fused optimizer
sets `_step_supports_amp_scaling`, so `GradScaler.step` takes its other branch
(torch/amp/grad_scaler.py): it runs the inf check, sums the found-inf tensors on the device
(`t.to(scaler.device, non_blocking=True)`, already there), and passes `grad_scale` and
`found_inf` to the fused kernel as optimizer attributes, which unscales and skips the update
on the GPU: no `.item()`, no host wait. `scaler.update()` is asynchronous. The loss is summed
on the GPU; the scale is read once at the end (`get_scale()` syncs: its docstring says so).
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
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01, fused=True)
    scaler = torch.amp.GradScaler("cuda", init_scale=2.0 ** 14)
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation

    for step in range(STEPS):
        xb, yb = xs[step % CHUNKS], ys[step % CHUNKS]
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            out = model(xb)  # SYNCSPY-CLEAN: allocator growth in the first steps (fp16 weight copies, activations)
            loss = torch.nn.functional.mse_loss(out.float(), yb)
        scaler.scale(loss).backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        scaler.step(opt)  # SYNCSPY-CLEAN: fused AdamW, found_inf stays on the GPU (state allocated on the first step)
        scaler.update()
        loss_sum += loss.detach()

    with torch.no_grad():
        final = torch.nn.functional.mse_loss(model(xs[0]), ys[0]).item()  # SYNCSPY-CLEAN: final read
    mean = loss_sum.item() / STEPS  # SYNCSPY-CLEAN: final read
    log2_scale = int(torch.log2(torch.tensor(scaler.get_scale())).item())  # SYNCSPY-CLEAN: final read of the scale
    ok = final < 1.0 and mean < 1.0 and 0 <= log2_scale <= 20
    print("t38_clean_gradscaler_fused: steps=%d converged=%d result=OK" % (STEPS, int(ok)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
