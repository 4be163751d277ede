#!/usr/bin/env python3
"""examples/corpus/t125_kws_qat_eager_fakequantize.py: corpus workload (PyTorch, eager-mode QAT).
Quantization-aware training of a keyword spotter for an int8 NPU: one-second clips at 16 kHz
generated on the GPU (12 keywords as formant sweeps in noise), log-mel features from `torch.stft`, a
DS-CNN (a strided conv and four depthwise-separable blocks of 172 channels) with conv-BN-ReLU fused
(`fuse_modules_qat`) and prepared with `prepare_qat` in eager mode, batches of 256. The QConfig is
built for the NPU's symmetric int8 range from `FakeQuantize.with_args(observer=
MovingAverageMinMaxObserver, ...)`, so `prepare_qat` inserts 21 `FakeQuantize` modules (weights and
activations). After `model.to(dev)` their `observer_enabled` and `fake_quant_enabled` flags are CUDA
buffers, and `FakeQuantize.forward` (torch/ao/quantization/fake_quantize.py) tests them in Python,
`if self.observer_enabled[0] == 1:` and `if self.fake_quant_enabled[0] == 1:`; in between the
observer tests `if min_val == float("inf") and max_val == float("-inf")` and `calculate_qparams`
runs `check_min_max_valid` (the same test, then `min_val > max_val`). About five blocking reads per
fake-quant module, some 105 per forward pass, each behind the layer before. The module's
documentation offers the fix: `FusedMovingAvgObsFakeQuantize` ("Fused version of
`default_fake_quant`, with improved performance"), which hands the flags to one fused kernel (t128).
Planted: the `logits = model(feats)` line in the training loop, every step (the reads happen in the
fake-quant modules the QAT preparation inserted into the model).
Clean: setup (clips generated on the GPU, the mel filterbank built on the host and uploaded once,
the model prepared on the host and uploaded), the log-mel frontend, a device `randperm` per epoch,
allocator growth in the first steps, validation accuracy read once per epoch outside the step loop,
the final reads.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.ao.quantization as tq  # noqa: E402
import torch.nn.functional as F  # noqa: E402

EPOCHS, STEPS_PER_EPOCH, BATCH, CLIPS, VAL_CLIPS, KEYWORDS = 2, 20, 256, 5120, 512, 12
RATE, N_FFT, HOP, MELS, WIDTH, BLOCKS = 16000, 480, 320, 40, 172, 4


def mel_filterbank():
    def mel(f):
        return 2595.0 * math.log10(1.0 + f / 700.0)
    edges = [700.0 * (10 ** ((k * mel(RATE / 2) / (MELS + 1)) / 2595.0) - 1.0) for k in range(MELS + 2)]
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

    def forward(self, wave):
        spec = torch.stft(wave, N_FFT, HOP, window=self.window, return_complex=True).abs().square()
        return ((torch.log(self.fb @ spec + 1e-6) + 6.0) / 4.0).transpose(1, 2).unsqueeze(1)


def conv_bn_relu(cin, cout, k, stride=1, groups=1):
    pad = tuple(x // 2 for x in k) if isinstance(k, tuple) else k // 2
    return torch.nn.Sequential(torch.nn.Conv2d(cin, cout, k, stride=stride, padding=pad, groups=groups, bias=False), torch.nn.BatchNorm2d(cout), torch.nn.ReLU())


class DSCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.quant, self.dequant = tq.QuantStub(), tq.DeQuantStub()
        self.stem = conv_bn_relu(1, WIDTH, (10, 4), stride=2)
        self.blocks = torch.nn.Sequential(*[torch.nn.Sequential(conv_bn_relu(WIDTH, WIDTH, 3, groups=WIDTH), conv_bn_relu(WIDTH, WIDTH, 1)) for _ in range(BLOCKS)])
        self.pool = torch.nn.AdaptiveAvgPool2d(1)
        self.fc = torch.nn.Linear(WIDTH, KEYWORDS)

    def forward(self, x):
        h = self.pool(self.blocks(self.stem(self.quant(x))))
        return self.dequant(self.fc(h.flatten(1)))

    def fuse(self):
        groups = [["stem.0", "stem.1", "stem.2"]]
        for b in range(BLOCKS):
            groups += [["blocks.%d.%d.0" % (b, j), "blocks.%d.%d.1" % (b, j), "blocks.%d.%d.2" % (b, j)] for j in range(2)]
        return tq.fuse_modules_qat(self, groups)


def npu_qconfig():
    int8_sym = dict(observer=tq.MovingAverageMinMaxObserver, quant_min=-128, quant_max=127, dtype=torch.qint8, qscheme=torch.per_tensor_symmetric)
    return tq.QConfig(activation=tq.FakeQuantize.with_args(**int8_sym), weight=tq.FakeQuantize.with_args(**int8_sym))


def make_clips(n, dev, gen, formants):
    """Each keyword: three formant tracks gliding between two frequencies, an onset and a length; plus noise."""
    label = torch.randint(0, KEYWORDS, (n,), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    t = torch.arange(RATE, device=dev, dtype=torch.float32) / RATE  # SYNCSPY-CLEAN: setup allocation
    onset = 0.1 + 0.3 * torch.rand(n, 1, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    env = torch.sigmoid(60 * (t - onset)) * torch.sigmoid(60 * (onset + 0.45 - t))  # SYNCSPY-CLEAN: setup, a large temporary
    frac = ((t - onset) / 0.45).clamp(0, 1)  # SYNCSPY-CLEAN: setup, a large temporary
    voice = torch.zeros(n, RATE, device=dev)  # SYNCSPY-CLEAN: setup allocation
    for k in range(3):
        f0, f1 = formants[label, k, 0, None], formants[label, k, 1, None]
        voice += torch.sin(2 * math.pi * torch.cumsum(f0 + (f1 - f0) * frac, dim=-1) / RATE)  # SYNCSPY-CLEAN: setup, large temporaries
    return 0.2 * voice * env + 0.05 * torch.randn(n, RATE, device=dev, generator=gen), label  # SYNCSPY-CLEAN: setup, the clip store


def main():
    torch.manual_seed(0)
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(125)
    formants = 200.0 + 3000.0 * torch.rand(KEYWORDS, 3, 2, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    clips, labels = make_clips(CLIPS, dev, gen, formants)
    val_clips, val_labels = make_clips(VAL_CLIPS, dev, gen, formants)
    frontend = LogMel().to(dev)  # SYNCSPY-CLEAN: setup upload of the window and filterbank
    model = DSCNN().train().fuse()
    model.qconfig = npu_qconfig()
    tq.prepare_qat(model, inplace=True)
    model = model.to(dev)  # SYNCSPY-CLEAN: setup upload (the fake-quant flags and observer statistics become CUDA buffers)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    losses = torch.zeros(EPOCHS * STEPS_PER_EPOCH, device=dev)  # SYNCSPY-CLEAN: setup allocation
    val_acc = []

    for epoch in range(EPOCHS):
        model.train()
        order = torch.randperm(CLIPS, device=dev, generator=gen)  # SYNCSPY-CLEAN: device permutation once per epoch
        for i in range(STEPS_PER_EPOCH):
            step = epoch * STEPS_PER_EPOCH + i
            idx = order[i * BATCH:(i + 1) * BATCH]
            feats = frontend(clips[idx])  # SYNCSPY-CLEAN: the batch gathered and its log-mel features computed on the device (large temporaries)
            logits = model(feats)  # SYNCSPY-PROBLEM: eager FakeQuantize modules test their CUDA flag buffers and observer statistics in Python, ~105 blocking reads per forward pass
            loss = F.cross_entropy(logits, labels[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
            losses[step] = loss.detach()  # SYNCSPY-CLEAN: the step's loss copied into the history on the device (asynchronous device-to-device copy)
        model.eval()
        with torch.no_grad():
            pred = model(frontend(val_clips)).argmax(dim=1)  # SYNCSPY-CLEAN: validation once per epoch, outside the step loop
        val_acc.append(pred.eq(val_labels).float().mean().item())  # SYNCSPY-CLEAN: once per epoch, outside the step loop

    first, last = losses[:5].mean().item(), losses[-5:].mean().item()  # SYNCSPY-CLEAN: final read
    fqs = [m for m in model.modules() if isinstance(m, tq.FakeQuantizeBase)]
    scales = torch.cat([m.scale.reshape(-1) for m in fqs]).cpu()  # SYNCSPY-CLEAN: final read of the learned quantization scales
    ok = math.isfinite(first) and math.isfinite(last) and last < first and all(0.0 <= a <= 1.0 for a in val_acc) and len(fqs) >= 2 * (2 * BLOCKS + 2) and bool(torch.isfinite(scales).all()) and bool((scales > 0).all())
    print("t125_kws_qat_eager_fakequantize: epochs=%d steps=%d batch=%d keywords=%d width=%d fake_quants=%d result=%s" % (EPOCHS, EPOCHS * STEPS_PER_EPOCH, BATCH, KEYWORDS, WIDTH, len(fqs), "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
