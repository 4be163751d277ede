#!/usr/bin/env python3
"""examples/corpus/t46_clean_zero_grad_windowed_item.py: corpus workload (PyTorch), CLEAN. A
denoising-autoencoder training loop tuned for a steady pipeline: `opt.zero_grad(set_to_none=
False)` zeroes the gradient buffers in place (memset kernels queued on the stream, no host
read; the buffers are kept, so the allocator is not asked again), the noise is drawn on the
device, and the loss is summed on the GPU and read with `.item()` once every 25 steps for the
log, the one host wait of a 25-step window (a pipeline drain amortized over 25 steps, the
same choice as t35's every-10-steps window). An exponential moving average of the weights is
kept with `torch._foreach_lerp_` (asynchronous, on the device). One final read.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

STEPS, LOG_EVERY, BATCH, D, CODE, CHUNKS = 100, 25, 256, 784, 64, 6


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(11)
    data = torch.rand(CHUNKS, BATCH, D, device=dev)  # SYNCSPY-CLEAN: setup allocation
    model = torch.nn.Sequential(torch.nn.Linear(D, 256), torch.nn.ReLU(), torch.nn.Linear(256, CODE), torch.nn.ReLU(), torch.nn.Linear(CODE, 256), torch.nn.ReLU(), torch.nn.Linear(256, D), torch.nn.Sigmoid()).to(dev)  # SYNCSPY-CLEAN: setup upload
    params = list(model.parameters())
    ema = [p.detach().clone() for p in params]  # SYNCSPY-CLEAN: setup allocation (the EMA copy)
    opt = torch.optim.Adam(params, lr=1e-3)
    window = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
    logged = []

    for step in range(STEPS):
        clean = data[step % CHUNKS]
        noisy = (clean + 0.2 * torch.randn(clean.shape, device=dev, generator=gen)).clamp_(0.0, 1.0)  # SYNCSPY-CLEAN: allocator growth in the first steps
        loss = torch.nn.functional.mse_loss(model(noisy), clean)  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.zero_grad(set_to_none=False)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first step (the gradients, kept afterwards)
        opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
        with torch.no_grad():
            torch._foreach_lerp_(ema, [p.detach() for p in params], 0.01)
        window += loss.detach()
        if (step + 1) % LOG_EVERY == 0:
            logged.append(window.item() / LOG_EVERY)  # SYNCSPY-CLEAN: one read per 25-step window
            window.zero_()

    with torch.no_grad():
        drift = sum(float((e - p).abs().sum()) for e, p in zip(ema, params))  # SYNCSPY-CLEAN: final read
    ok = len(logged) == STEPS // LOG_EVERY and logged[-1] < logged[0] and drift >= 0.0
    print("t46_clean_zero_grad_windowed_item: steps=%d windows=%d result=OK" % (STEPS, len(logged)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
