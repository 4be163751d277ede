#!/usr/bin/env python3
"""examples/corpus/t111_sound_tagging_narrow_tensor_offset.py: corpus workload (PyTorch).
Environmental sound classification (50 classes) on 4-second clips at 16 kHz kept on the GPU:
a random 1-second crop per clip as augmentation, log-mel features from `torch.stft` and a fixed
mel filterbank, a four-block CNN (48-384 channels), cross-entropy, batches of 64. The crop module
draws its offsets on the device (`torch.randint(..., device=...)`, so that the augmentation "stays
on the GPU") and cuts each clip with `w.narrow(0, start, CROP)`, passing the 0-dim CUDA offset as
`start`. The Python binding takes the Tensor-start overload (the docs: "If Tensor, it must be
an 0-dim integral Tensor"), and that overload is `int64_t st = start.item<int64_t>();` followed
by an ordinary narrow (narrow_tensor_symint, aten/src/ATen/native/TensorShape.cpp): a blocking
read of each offset, 64 per step, the first behind the previous step's whole backward pass and
update, the others one round trip each while the GPU has nothing queued. A gather at device
offsets cuts the same crops with no read (t118).
Planted: the `torch.stack([w.narrow(0, s, self.length) ...])` line in RandomCrop.forward, every
step.
Clean: setup (clips generated on the GPU, the mel filterbank built on the host and uploaded once),
a device `randperm` per epoch, allocator growth in the first steps, validation on fixed centre
crops (Python-int slices) with the accuracy read once per epoch outside the step loop, the final
read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

EPOCHS, STEPS_PER_EPOCH, BATCH, CLIPS, VAL_CLIPS = 2, 25, 64, 1600, 256
RATE, CLIP_LEN, CROP, N_FFT, HOP, MELS, CLASSES = 16000, 64000, 16000, 512, 160, 64, 50
WIDTHS = (48, 96, 192, 384)


class RandomCrop(torch.nn.Module):
    """A random CROP-sample window of each clip, offsets drawn on the device."""

    def __init__(self, length, gen):
        super().__init__()
        self.length, self.gen = length, gen

    def forward(self, wave):
        starts = torch.randint(0, wave.shape[1] - self.length + 1, (wave.shape[0],), device=wave.device, generator=self.gen)
        return torch.stack([w.narrow(0, s, self.length) for w, s in zip(wave, starts)])  # SYNCSPY-PROBLEM: narrow with a 0-dim CUDA start calls start.item(): a blocking read per clip, 64 per step


def mel_filterbank():
    """Triangular filters on the mel scale, MELS x (N_FFT // 2 + 1), built on the host."""
    def mel(f):
        return 2595.0 * math.log10(1.0 + f / 700.0)
    edges = [700.0 * (10 ** ((mel(0.0) + k * (mel(RATE / 2) - mel(0.0)) / (MELS + 1)) / 2595.0) - 1.0) for k in range(MELS + 2)]
    freqs = torch.linspace(0, RATE / 2, N_FFT // 2 + 1)
    fb = torch.zeros(MELS, N_FFT // 2 + 1)
    for m in range(MELS):
        lo, mid, hi = edges[m], edges[m + 1], edges[m + 2]
        fb[m] = torch.clamp(torch.minimum((freqs - lo) / (mid - lo), (hi - freqs) / (hi - mid)), min=0.0)
    return fb


class LogMel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("window", torch.hann_window(N_FFT), persistent=False)
        self.register_buffer("fb", mel_filterbank(), persistent=False)

    def forward(self, x):
        spec = torch.stft(x, N_FFT, HOP, window=self.window, return_complex=True).abs().square()
        return torch.log(self.fb @ spec + 1e-6).unsqueeze(1)


def block(cin, cout):
    return torch.nn.Sequential(
        torch.nn.Conv2d(cin, cout, 3, padding=1, bias=False), torch.nn.BatchNorm2d(cout), torch.nn.ReLU(),
        torch.nn.Conv2d(cout, cout, 3, padding=1, bias=False), torch.nn.BatchNorm2d(cout), torch.nn.ReLU(),
        torch.nn.AvgPool2d(2))


class SoundCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.features = LogMel()
        self.norm = torch.nn.BatchNorm2d(1)
        self.blocks = torch.nn.Sequential(*[block(cin, cout) for cin, cout in zip((1,) + WIDTHS[:-1], WIDTHS)])
        self.head = torch.nn.Linear(2 * WIDTHS[-1], CLASSES)

    def forward(self, wave):
        h = self.blocks(self.norm(self.features(wave)))
        return self.head(torch.cat([h.mean(dim=(2, 3)), h.amax(dim=(2, 3))], dim=1))


def make_clips(n, dev, gen, tones, rates):
    """Each class: three partials and an amplitude-modulation rate; clips start at a random onset, plus noise."""
    label = torch.randint(0, CLASSES, (n,), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    t = torch.arange(CLIP_LEN, device=dev, dtype=torch.float32) / RATE  # SYNCSPY-CLEAN: setup allocation
    onset = torch.rand(n, 1, device=dev, generator=gen) * 2.0  # SYNCSPY-CLEAN: setup allocation
    env = torch.sigmoid(40.0 * (t - onset)) * (0.6 + 0.4 * torch.sin(2 * math.pi * rates[label].unsqueeze(1) * t))  # SYNCSPY-CLEAN: setup, a large temporary
    wave = torch.zeros(n, CLIP_LEN, device=dev)  # SYNCSPY-CLEAN: setup allocation
    for h in range(3):
        wave += torch.sin(2 * math.pi * tones[label, h].unsqueeze(1) * t) / (h + 1)  # SYNCSPY-CLEAN: setup, a large temporary
    return 0.3 * env * wave + 0.05 * torch.randn(n, CLIP_LEN, device=dev, generator=gen), label  # SYNCSPY-CLEAN: setup, the clip store


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(111)
    tones = 200.0 + 3000.0 * torch.rand(CLASSES, 3, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    rates = 1.0 + 7.0 * torch.rand(CLASSES, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    clips, labels = make_clips(CLIPS, dev, gen, tones, rates)
    val_clips, val_labels = make_clips(VAL_CLIPS, dev, gen, tones, rates)
    model = SoundCNN().to(dev)  # SYNCSPY-CLEAN: setup upload (filterbank and window included)
    augment = RandomCrop(CROP, gen)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-4)
    losses = torch.zeros(EPOCHS * STEPS_PER_EPOCH, device=dev)  # SYNCSPY-CLEAN: setup allocation
    val_acc = []
    centre = (CLIP_LEN - CROP) // 2

    for epoch in range(EPOCHS):
        model.train()
        order = torch.randperm(CLIPS, device=dev, generator=gen)  # SYNCSPY-CLEAN: device permutation once per epoch
        for i in range(STEPS_PER_EPOCH):
            step = epoch * STEPS_PER_EPOCH + i
            idx = order[i * BATCH:(i + 1) * BATCH]
            crops = augment(clips[idx])  # SYNCSPY-CLEAN: the batch of clips gathered on the device (a large temporary, allocator growth in the first steps)
            logits = model(crops)  # SYNCSPY-CLEAN: allocator growth in the first steps
            loss = F.cross_entropy(logits, labels[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            opt.step()  # SYNCSPY-CLEAN: AdamW state allocated on the first step
            losses[step] = loss.detach()  # SYNCSPY-CLEAN: the step's loss copied into the history on the device (asynchronous device-to-device copy)
        model.eval()
        with torch.no_grad():
            pred = model(val_clips[:, centre:centre + CROP]).argmax(dim=1)  # SYNCSPY-CLEAN: validation once per epoch, outside the step loop
        val_acc.append(pred.eq(val_labels).float().mean().item())  # SYNCSPY-CLEAN: once per epoch, outside the step loop

    first, last = losses[:5].mean().item(), losses[-5:].mean().item()  # SYNCSPY-CLEAN: final read
    ok = math.isfinite(first) and math.isfinite(last) and last < first and all(0.0 <= a <= 1.0 for a in val_acc)
    print("t111_sound_tagging_narrow_tensor_offset: epochs=%d steps=%d batch=%d crop=%d classes=%d result=%s" % (EPOCHS, EPOCHS * STEPS_PER_EPOCH, BATCH, CROP, CLASSES, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
