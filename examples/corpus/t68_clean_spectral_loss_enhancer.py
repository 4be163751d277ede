#!/usr/bin/env python3
"""examples/corpus/t68_clean_spectral_loss_enhancer.py: corpus workload (PyTorch), CLEAN.
Speech enhancement trained entirely in the time-frequency domain: a magnitude mask estimator
on `torch.stft` features with a spectral loss (spectral convergence plus log-magnitude
distance to the clean magnitude), so no `istft` (and no host check) is needed during
training. The noisy/clean pairs are synthesized once on the host, pinned, and each batch is
uploaded with `copy_(non_blocking=True)` into a device buffer (the pinned source is never
rewritten, so no wait is needed). A mask-statistics monitor keeps a fixed-range
`torch.histc(..., min=0, max=1)` of the mask on the GPU (a fixed range reads nothing back).
The loss is summed on the GPU; one final read.
"""
import math
import os
import random
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

STEPS, BATCH, CHUNKS, SAMPLES, N_FFT, HOP, HIDDEN, BINS = 40, 8, 5, 16000, 512, 128, 256, 20


class MaskNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        freq = N_FFT // 2 + 1
        self.net = torch.nn.Sequential(
            torch.nn.Conv1d(freq, HIDDEN, 5, padding=2), torch.nn.GELU(),
            torch.nn.Conv1d(HIDDEN, HIDDEN, 5, padding=2), torch.nn.GELU(),
            torch.nn.Conv1d(HIDDEN, freq, 1), torch.nn.Sigmoid())
        self.register_buffer("window", torch.hann_window(N_FFT))

    def forward(self, noisy):
        spec = torch.stft(noisy, N_FFT, HOP, window=self.window, return_complex=True)  # SYNCSPY-CLEAN: cuFFT plan cached and allocator growth in the first steps
        mag = spec.abs()
        mask = self.net(torch.log1p(mag))
        return mask * mag, mask


class SpectralLoss(torch.nn.Module):
    """Spectral convergence plus log-magnitude distance against the clean magnitude."""

    def __init__(self):
        super().__init__()
        self.register_buffer("window", torch.hann_window(N_FFT))

    def forward(self, est_mag, clean):
        ref = torch.stft(clean, N_FFT, HOP, window=self.window, return_complex=True).abs().clamp_min(1e-5)  # SYNCSPY-CLEAN: cuFFT plan cached and allocator growth in the first steps
        convergence = (ref - est_mag).norm() / ref.norm()
        return convergence + (ref.log() - est_mag.clamp_min(1e-5).log()).abs().mean()


class MaskMonitor:
    def __init__(self, dev):
        self.hist = torch.zeros(BINS, device=dev)  # SYNCSPY-CLEAN: setup allocation

    @torch.no_grad()
    def record(self, mask):
        self.hist += torch.histc(mask.float(), bins=BINS, min=0.0, max=1.0)


def synth_pairs(rng):
    """Harmonic 'voiced' signals plus noise, built on the host (as a decoder would)."""
    clean = torch.empty(CHUNKS, BATCH, SAMPLES)
    t = torch.arange(SAMPLES) / 16000.0
    for c in range(CHUNKS):
        for b in range(BATCH):
            f0 = rng.uniform(100.0, 300.0)
            clean[c, b] = sum(torch.sin(2 * math.pi * f0 * k * t) / k for k in range(1, 6)) * (0.5 + 0.5 * torch.sin(2 * math.pi * 3.0 * t))
    noisy = clean + 0.3 * torch.randn(clean.shape, generator=torch.Generator().manual_seed(rng.randrange(1 << 30)))
    return clean.pin_memory(), noisy.pin_memory()  # SYNCSPY-CLEAN: setup, the dataset pinned once


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    clean_host, noisy_host = synth_pairs(random.Random(0))
    model = MaskNet().to(dev)  # SYNCSPY-CLEAN: setup upload
    criterion = SpectralLoss().to(dev)  # SYNCSPY-CLEAN: setup upload
    monitor = MaskMonitor(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    clean = torch.empty(BATCH, SAMPLES, device=dev)  # SYNCSPY-CLEAN: setup allocation
    noisy = torch.empty(BATCH, SAMPLES, device=dev)  # SYNCSPY-CLEAN: setup allocation
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
    first = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation

    model.train()
    for step in range(STEPS):
        k = step % CHUNKS
        clean.copy_(clean_host[k], non_blocking=True)  # SYNCSPY-CLEAN: asynchronous upload from pinned memory
        noisy.copy_(noisy_host[k], non_blocking=True)  # SYNCSPY-CLEAN: asynchronous upload from pinned memory
        est_mag, mask = model(noisy)  # SYNCSPY-CLEAN: allocator growth in the first steps
        loss = criterion(est_mag, clean)  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: AdamW state allocated on the first step
        monitor.record(mask)
        loss_sum += loss.detach()
        if step == 0:
            first.copy_(loss.detach())  # SYNCSPY-CLEAN: first step only, a device-to-device copy

    mean, first_loss = loss_sum.item() / STEPS, first.item()  # SYNCSPY-CLEAN: final read
    counted = int(monitor.hist.sum().item())  # SYNCSPY-CLEAN: final read
    ok = mean < first_loss and counted == STEPS * BATCH * (N_FFT // 2 + 1) * (SAMPLES // HOP + 1)
    print("t68_clean_spectral_loss_enhancer: steps=%d batch=%d n_fft=%d result=OK" % (STEPS, BATCH, N_FFT))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
