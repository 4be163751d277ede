#!/usr/bin/env python3
"""examples/corpus/t133_fno_rollout_pageable_export.py: corpus workload (PyTorch + NumPy).
Inference with a hybrid solver for a 2-D scalar field on a periodic 128 x 128 grid: each step
applies exact spectral diffusion (`rfft2`, a precomputed decay factor, `irfft2`) and a learned
closure, a four-layer Fourier neural operator (FNO, width 32, 16 modes per direction), to 16
initial conditions at once, 60 steps under `torch.inference_mode()`. Every frame is exported
into a NumPy trajectory array allocated up front, for the post-processing that reads it after
the rollout: `torch.from_numpy(traj[i]).copy_(u[:, 0], non_blocking=True)`. The author meant
the export to overlap the next steps, but the destination is ordinary pageable memory. For a
device-to-host copy into pageable memory `cudaMemcpyAsync` returns only once the copy has
completed (CUDA Runtime API, "API synchronization behavior"): `copy_kernel_cuda` issues it on
the current stream, so the host waits for the whole frame's FNO and FFT kernels, and the staged
1 MB copy, before it can queue the next step. `non_blocking=True` only helps with page-locked
memory (PyTorch CUDA semantics notes, "Use pinned memory buffers"): a pinned trajectory buffer
and one `synchronize()` after the loop let the rollout run ahead.
Planted: the `frame.copy_(u[:, 0], non_blocking=True)` export line, every step.
Clean: setup (initial conditions and the spectral decay factor built on the GPU, the model
uploaded, the initial frame exported once), allocator growth and cuFFT plans in the first step,
the final read and the checks after the loop.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

GRID, BATCH, STEPS, WIDTH, MODES, LAYERS, NU, DT, GAIN = 128, 16, 60, 32, 16, 4, 0.02, 0.01, 0.05


class SpectralConv2d(torch.nn.Module):
    def __init__(self, width, modes):
        super().__init__()
        scale = 1.0 / (width * width)
        self.modes = modes
        shape = (width, width, modes, modes)
        self.w1 = torch.nn.Parameter(scale * torch.randn(shape, dtype=torch.cfloat))
        self.w2 = torch.nn.Parameter(scale * torch.randn(shape, dtype=torch.cfloat))

    def forward(self, x):
        b, c, h, w = x.shape
        m = self.modes
        x_ft = torch.fft.rfft2(x)
        out = torch.zeros(b, c, h, w // 2 + 1, dtype=torch.cfloat, device=x.device)
        out[:, :, :m, :m] = torch.einsum("bixy,ioxy->boxy", x_ft[:, :, :m, :m], self.w1)
        out[:, :, -m:, :m] = torch.einsum("bixy,ioxy->boxy", x_ft[:, :, -m:, :m], self.w2)
        return torch.fft.irfft2(out, s=(h, w))


class FNO2d(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lift = torch.nn.Conv2d(3, WIDTH, 1)
        self.spectral = torch.nn.ModuleList(SpectralConv2d(WIDTH, MODES) for _ in range(LAYERS))
        self.pointwise = torch.nn.ModuleList(torch.nn.Conv2d(WIDTH, WIDTH, 1)
                                             for _ in range(LAYERS))
        self.proj = torch.nn.Sequential(torch.nn.Conv2d(WIDTH, 64, 1), torch.nn.GELU(),
                                        torch.nn.Conv2d(64, 1, 1))

    def forward(self, u, grid):
        h = self.lift(torch.cat([u, grid.expand(u.shape[0], -1, -1, -1)], dim=1))
        for spec, pw in zip(self.spectral, self.pointwise):
            h = F.gelu(spec(h) + pw(h))
        return self.proj(h)


def initial_fields(dev, gen):
    """Smooth random fields: a few low Fourier modes with random amplitudes and phases."""
    x = torch.linspace(0.0, 2 * math.pi, GRID + 1, device=dev)[:-1]  # SYNCSPY-CLEAN: setup
    kx = torch.randint(1, 5, (BATCH, 6, 1, 1), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup
    ky = torch.randint(1, 5, (BATCH, 6, 1, 1), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup
    amp = torch.randn(BATCH, 6, 1, 1, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup
    phase = 2 * math.pi * torch.rand(BATCH, 6, 1, 1, device=dev, generator=gen)
    u = (amp * torch.sin(kx * x[None, None, :, None] + ky * x[None, None, None, :] + phase))
    return u.sum(dim=1, keepdim=True), x


def main():
    if not torch.cuda.is_available():
        print("t133_fno_rollout_pageable_export: no CUDA device, result=SKIP")
        return 1
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(133)
    model = FNO2d().to(dev).eval()  # SYNCSPY-CLEAN: setup upload (stand-in for a checkpoint)
    u, x = initial_fields(dev, gen)
    gx, gy = torch.meshgrid(x / (2 * math.pi), x / (2 * math.pi), indexing="ij")
    grid = torch.stack([gx, gy])[None]
    k = torch.fft.fftfreq(GRID, 1.0 / GRID, device=dev)  # SYNCSPY-CLEAN: setup
    kr = torch.fft.rfftfreq(GRID, 1.0 / GRID, device=dev)  # SYNCSPY-CLEAN: setup
    decay = torch.exp(-NU * DT * (k[:, None] ** 2 + kr[None, :] ** 2))
    traj = np.zeros((STEPS + 1, BATCH, GRID, GRID), dtype=np.float32)
    torch.from_numpy(traj[0]).copy_(u[:, 0])  # SYNCSPY-CLEAN: setup, the initial frame, once

    with torch.inference_mode():
        for step in range(STEPS):
            u_hat = torch.fft.rfft2(u) * decay  # SYNCSPY-CLEAN: growth, cuFFT plan (step 0)
            u = torch.fft.irfft2(u_hat, s=(GRID, GRID))  # SYNCSPY-CLEAN: growth, cuFFT plan, step 0
            u = u + GAIN * torch.tanh(model(u, grid))  # SYNCSPY-CLEAN: growth, cuFFT plans (step 0)
            frame = torch.from_numpy(traj[step + 1])
            frame.copy_(u[:, 0], non_blocking=True)  # SYNCSPY-PROBLEM: pageable destination, blocks

    final = u[:, 0].cpu().numpy()  # SYNCSPY-CLEAN: final read
    energy = (traj.astype(np.float64) ** 2).mean(axis=(1, 2, 3))
    ok = (bool(np.isfinite(traj).all()) and np.array_equal(traj[-1], final)
          and bool((energy > 0).all()) and float(np.abs(traj).max()) < 100.0)
    print("t133_fno_rollout_pageable_export: steps=%d batch=%d grid=%d modes=%d result=%s"
          % (STEPS, BATCH, GRID, MODES, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
