#!/usr/bin/env python3
"""examples/corpus/t61_istft_speech_enhancement.py: corpus workload (PyTorch). Training a
time-frequency masking network for speech enhancement: the noisy waveform goes through
`torch.stft`, a convolutional mask estimator scales the complex spectrogram, and
`torch.istft` resynthesizes the waveform so that the loss (negative SI-SNR) is taken in the
time domain. `torch.istft` checks the window's overlap-add envelope (the NOLA condition)
with `window_envelop.abs().min().lt(1e-11)` read by `.item()` on the host, a blocking
device-to-host copy in the middle of the forward pass that waits for the STFT and the whole
mask network, on every call. Training with a spectral loss, or an overlap-add of one's own
(`F.fold` with the envelope computed once), keeps the step asynchronous (t68).
Planted: the `torch.istft` line in Enhancer.synthesize, every step.
Clean: setup, the cuFFT plan cache and allocator growth in the first steps, the final read.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

STEPS, BATCH, CHUNKS, SAMPLES, N_FFT, HOP, HIDDEN, RATE = 40, 8, 4, 16000, 512, 128, 256, 16000
BINS = N_FFT // 2 + 1


class MaskEstimator(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Conv1d(BINS, HIDDEN, 5, padding=2), torch.nn.GELU(),
            torch.nn.Conv1d(HIDDEN, HIDDEN, 5, padding=2), torch.nn.GELU(),
            torch.nn.Conv1d(HIDDEN, BINS, 1))

    def forward(self, log_mag):
        return torch.sigmoid(self.net(log_mag))


class Enhancer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("window", torch.hann_window(N_FFT))
        self.mask = MaskEstimator()

    def analyze(self, wave):
        return torch.stft(wave, N_FFT, HOP, window=self.window, return_complex=True)  # SYNCSPY-CLEAN: cuFFT plan cached and allocator growth in the first steps

    def synthesize(self, spec, length):
        return torch.istft(spec, N_FFT, HOP, window=self.window, length=length)  # SYNCSPY-PROBLEM: istft's NOLA check reads the window envelope's minimum with .item() (blocking D2H), every step

    def forward(self, noisy):
        spec = self.analyze(noisy)
        log_mag = torch.log1p(spec.abs())
        enhanced = spec * self.mask(log_mag)
        return self.synthesize(enhanced, noisy.shape[-1])


def neg_si_snr(est, ref, eps=1e-8):
    est = est - est.mean(dim=-1, keepdim=True)
    ref = ref - ref.mean(dim=-1, keepdim=True)
    proj = (est * ref).sum(-1, keepdim=True) / (ref.pow(2).sum(-1, keepdim=True) + eps) * ref
    noise = est - proj
    ratio = proj.pow(2).sum(-1) / (noise.pow(2).sum(-1) + eps)
    return -(10.0 * torch.log10(ratio + eps)).mean()


def synth_speech(dev, gen):
    t = torch.arange(SAMPLES, device=dev) / RATE  # SYNCSPY-CLEAN: setup allocation
    f0 = 100.0 + 200.0 * torch.rand(CHUNKS, BATCH, 1, 1, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    harmonics = torch.arange(1, 6, device=dev).view(1, 1, 5, 1)  # SYNCSPY-CLEAN: setup allocation
    amp = torch.rand(CHUNKS, BATCH, 5, 1, device=dev, generator=gen) / harmonics  # SYNCSPY-CLEAN: setup allocation
    envelope = 0.5 + 0.5 * torch.sin(2 * torch.pi * 3.0 * t)
    return (amp * torch.sin(2 * torch.pi * f0 * harmonics * t)).sum(dim=2) * envelope  # SYNCSPY-CLEAN: setup allocation


class Trainer:
    def __init__(self, dev):
        self.model = Enhancer().to(dev)  # SYNCSPY-CLEAN: setup upload
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-3)
        self.loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
        self.first = None

    def step(self, clean, gen):
        noise = 0.3 * torch.randn(clean.shape, device=clean.device, generator=gen)  # SYNCSPY-CLEAN: allocator growth in the first steps
        est = self.model(clean + noise)  # SYNCSPY-CLEAN: allocator growth in the first steps
        loss = neg_si_snr(est, clean)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        self.opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
        self.loss_sum += loss.detach()
        if self.first is None:
            self.first = loss.detach().clone()  # SYNCSPY-CLEAN: first step only, a device copy


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(5)
    speech = synth_speech(dev, gen)
    trainer = Trainer(dev)
    trainer.model.train()
    for step in range(STEPS):
        trainer.step(speech[step % CHUNKS], gen)

    first, mean = trainer.first.item(), trainer.loss_sum.item() / STEPS  # SYNCSPY-CLEAN: final read
    ok = mean < first and mean == mean
    print("t61_istft_speech_enhancement: steps=%d batch=%d samples=%d result=OK" % (STEPS, BATCH, SAMPLES))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
