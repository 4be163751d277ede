#!/usr/bin/env python3
"""examples/corpus/t86_speech_denoiser_normal_tensor_std.py: corpus workload (PyTorch).
Waveform speech enhancement: a Demucs-style convolutional encoder/decoder (strided Conv1d +
GLU down, ConvTranspose1d up, skip connections) learns to remove additive white noise from
one-second utterances. The clean "speech" (harmonic voiced sounds with vibrato and syllable
envelopes) is generated on the GPU in setup; the noisy input is made on the fly by the
augmentation helper `add_noise`, which draws a signal-to-noise ratio per utterance (0-20 dB)
on the GPU and adds the noise with `torch.normal(clean, noise_std.expand_as(clean))`. With a
tensor `std`, `torch.normal` checks its argument on the host: `CHECK_NORMAL_TENSOR_STD`
(aten/src/ATen/native/DistributionTemplates.h) is `std.min().ge(0).item<bool>()`, a blocking
device-to-host read, every step; it comes first in the step, so the host waits for the whole
previous step (backward, Adam) and the GPU idles while the host queues the forward pass.
`clean + noise_std * torch.randn_like(clean)` (an in-place `normal_` with scalar arguments)
draws the same noise without the check.
Planted: the `torch.normal(...)` line in add_noise, every step.
Clean: setup (the clean pool and the STFT windows generated on the GPU, the model upload),
allocator growth in the first steps, the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

STEPS, BATCH, POOL, SR, SEG, HARMONICS, CHANNELS = 50, 32, 512, 16000, 16384, 20, (32, 64, 128)
FFTS = (512, 1024)


class Down(torch.nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = torch.nn.Conv1d(cin, cout, 8, stride=4, padding=2)
        self.mix = torch.nn.Conv1d(cout, 2 * cout, 1)

    def forward(self, x):
        return F.glu(self.mix(F.relu(self.conv(x))), dim=1)


class Up(torch.nn.Module):
    def __init__(self, cin, cout, last):
        super().__init__()
        self.mix = torch.nn.Conv1d(cin, 2 * cin, 1)
        self.conv = torch.nn.ConvTranspose1d(cin, cout, 8, stride=4, padding=2)
        self.last = last

    def forward(self, x, skip):
        y = self.conv(F.glu(self.mix(x + skip), dim=1))
        return y if self.last else F.relu(y)


class Denoiser(torch.nn.Module):
    def __init__(self):
        super().__init__()
        chans = (1,) + CHANNELS
        self.down = torch.nn.ModuleList([Down(chans[i], chans[i + 1]) for i in range(len(CHANNELS))])
        self.mid = torch.nn.Conv1d(CHANNELS[-1], CHANNELS[-1], 3, padding=1)
        self.up = torch.nn.ModuleList([Up(chans[i + 1], chans[i], i == 0) for i in reversed(range(len(CHANNELS)))])

    def forward(self, wave):
        scale = wave.std(dim=1, keepdim=True) + 1e-5
        x = (wave / scale).unsqueeze(1)
        skips = []
        for d in self.down:
            x = d(x)
            skips.append(x)
        x = F.relu(self.mid(x))
        for u in self.up:
            x = u(x, skips.pop())
        return x.squeeze(1) * scale


def make_speech(dev, gen):
    """Harmonic voiced sounds: a vibrato f0, decaying harmonics, syllable-rate envelopes, RMS 0.1."""
    t = torch.arange(SEG, device=dev, dtype=torch.float32).view(1, -1) / SR  # SYNCSPY-CLEAN: setup allocation
    f0 = 100.0 + 150.0 * torch.rand(POOL, 1, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    vib = 1.0 + 0.02 * torch.sin(2 * math.pi * 5.0 * t + 6.28 * torch.rand(POOL, 1, device=dev, generator=gen))  # SYNCSPY-CLEAN: setup allocation
    phase = 2 * math.pi * torch.cumsum(f0 * vib, dim=1) / SR  # SYNCSPY-CLEAN: setup temporaries
    tilt = 4.0 + 4.0 * torch.rand(POOL, 1, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    wave = torch.zeros(POOL, SEG, device=dev)  # SYNCSPY-CLEAN: setup allocation
    for k in range(1, HARMONICS + 1):
        wave += torch.exp(-k / tilt) * torch.sin(k * phase)  # SYNCSPY-CLEAN: setup temporaries
    rate = 3.0 + 3.0 * torch.rand(POOL, 1, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    env = torch.sin(2 * math.pi * rate * t + 6.28 * torch.rand(POOL, 1, device=dev, generator=gen)).clamp(min=0.0) ** 2  # SYNCSPY-CLEAN: setup allocation
    wave = wave * env  # SYNCSPY-CLEAN: setup temporary
    return 0.1 * wave / wave.pow(2).mean(dim=1, keepdim=True).sqrt().clamp(min=1e-6)  # SYNCSPY-CLEAN: setup temporaries


def add_noise(clean, gen):
    """Additive white noise at a random SNR per utterance (0-20 dB), drawn on the GPU."""
    snr_db = 20.0 * torch.rand(clean.shape[0], 1, device=clean.device, generator=gen)
    noise_std = torch.sqrt(clean.pow(2).mean(dim=1, keepdim=True) / 10.0 ** (snr_db / 10.0))
    return torch.normal(clean, noise_std.expand_as(clean), generator=gen)  # SYNCSPY-PROBLEM: tensor std: torch.normal checks std.min() >= 0 with .item() (blocking), every step


def stft_loss(pred, target, windows):
    loss = 0.0
    for n_fft, win in zip(FFTS, windows):
        p = torch.stft(pred, n_fft, hop_length=n_fft // 4, window=win, return_complex=True).abs()
        q = torch.stft(target, n_fft, hop_length=n_fft // 4, window=win, return_complex=True).abs()
        loss = loss + F.l1_loss(torch.log(p + 1e-5), torch.log(q + 1e-5))
    return loss / len(FFTS)


def si_snr(est, ref):
    ref = ref - ref.mean(dim=1, keepdim=True)
    est = est - est.mean(dim=1, keepdim=True)
    proj = (est * ref).sum(dim=1, keepdim=True) / ref.pow(2).sum(dim=1, keepdim=True).clamp(min=1e-8) * ref
    return 10 * torch.log10(proj.pow(2).sum(dim=1).clamp(min=1e-8) / (est - proj).pow(2).sum(dim=1).clamp(min=1e-8))


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(86)
    pool = make_speech(dev, gen)
    windows = [torch.hann_window(n, device=dev) for n in FFTS]  # SYNCSPY-CLEAN: setup allocation
    model = Denoiser().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(model.parameters(), lr=3e-4)
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
    gain_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation

    for step in range(STEPS):
        s = (step * BATCH) % POOL
        clean = pool[s:s + BATCH]
        noisy = add_noise(clean, gen)
        est = model(noisy)  # SYNCSPY-CLEAN: allocator growth in the first steps
        loss = F.l1_loss(est, clean) / 0.1 + stft_loss(est, clean, windows)
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
        loss_sum += loss.detach()
        gain_sum += (si_snr(est.detach(), clean) - si_snr(noisy, clean)).mean()

    mean_loss, mean_gain = torch.stack([loss_sum / STEPS, gain_sum / STEPS]).tolist()  # SYNCSPY-CLEAN: final read
    ok = math.isfinite(mean_loss) and math.isfinite(mean_gain) and tuple(est.shape) == (BATCH, SEG)
    print("t86_speech_denoiser_normal_tensor_std: steps=%d batch=%d samples=%d sr=%d layers=%d result=%s" % (STEPS, BATCH, SEG, SR, len(CHANNELS), "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
