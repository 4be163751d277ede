#!/usr/bin/env python3
"""examples/corpus/t142_ecg_resnet_cpu_tolist_probs.py: corpus workload (PyTorch + NumPy).
Multi-label classification of 12-lead ECG records (10 s at 100 Hz, five diagnostic superclasses
as in PTB-XL: MI, STTC, CD, HYP, AF-like irregular rhythm) with a 1-D ResNet (a strided stem,
four residual blocks up to 256 channels, average and max pooling), 128 records a step from a
`DataLoader(pin_memory=True)` moved with `.to(dev, non_blocking=True)`. To report the training
AUROC per epoch with a host-side (scikit-learn style) metric, the loop collects the predicted
probabilities of every batch: `train_probs.extend(torch.sigmoid(logits.detach()).cpu().tolist())`,
every step. `.cpu()` is `to(kCPU)` without `non_blocking`: `copy_kernel_cuda`
(aten/src/ATen/native/cuda/Copy.cu) queues the device-to-host copy on the current stream and
ends in `memcpy_and_sync` (`cudaStreamSynchronize`), and the Performance Tuning Guide ("Avoid
unnecessary CPU-GPU synchronization") lists `cuda_tensor.cpu()`. Placed after `opt.step()`, the
copy waits for the forward pass, the backward pass and the AdamW update; the GPU then idles while
the host builds 640 Python floats, takes the next pinned batch and queues the next step.
Planted: the `train_probs.extend(... .cpu().tolist())` line, every step.
Clean: setup (the records synthesized on the host, the validation set uploaded once), the
loader's pinned host blocks (first batches only) and the pinned `non_blocking=True` uploads,
`target.tolist()` of the loader's CPU labels (no device read), allocator growth and cuDNN
algorithm selection in the first steps, the validation AUROC computed on the GPU and read once
per epoch outside the step loop, the host AUROC over the epoch's lists, the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

LEADS, SAMPLES, CLASSES, TEMPLATE, N_TRAIN, N_VAL = 12, 1000, 5, 61, 1536, 256
EPOCHS, BATCH, LR = 4, 128, 1e-3


def synth_records(n, gen):
    """Beat trains convolved with per-lead beat templates; each label adds its own pattern."""
    labels = (torch.rand(n, CLASSES, generator=gen) < 0.3).float()
    tt = torch.linspace(-1.0, 1.0, TEMPLATE)
    qrs, twave = torch.exp(-(tt / 0.05) ** 2), torch.exp(-((tt - 0.5) / 0.15) ** 2)
    gain = 0.5 + torch.rand(LEADS, 1, generator=gen)
    lead = torch.arange(LEADS)[:, None]
    basis = torch.stack([gain * (qrs + 0.3 * twave),
                         -0.6 * twave * (lead < 4),  # MI: inverted T waves, leads I-aVR
                         0.4 * ((tt > 0.1) & (tt < 0.45)).float() * (lead >= 6),  # STTC
                         gain * torch.exp(-(tt / 0.12) ** 2) - gain * qrs,  # CD: wide QRS
                         1.2 * qrs * ((lead == 4) | (lead == 5)),  # HYP: tall QRS
                         torch.zeros(LEADS, TEMPLATE)])  # AF: rhythm only
    coef = torch.cat([torch.ones(n, 1), labels], dim=1)
    out = torch.empty(n, LEADS, SAMPLES)
    for c in range(0, n, 256):
        m = min(256, n - c)
        period = 60.0 + 40.0 * torch.rand(m, 1, generator=gen)
        jitter = torch.where(labels[c:c + m, 4:5] > 0, 0.35, 0.03)
        gaps = period * (1.0 + jitter * torch.randn(m, 24, generator=gen))
        beats = (torch.rand(m, 1, generator=gen) * 60 + gaps.cumsum(1)).long()
        spikes = torch.zeros(m, SAMPLES + 200)
        spikes.scatter_(1, beats.clamp(max=SAMPLES + 199), 1.0)
        x = F.conv1d(spikes[:, None], basis.reshape(-1, 1, TEMPLATE).flip(-1), padding=30)
        x = (x[..., :SAMPLES].reshape(m, 6, LEADS, SAMPLES) * coef[c:c + m, :, None, None]).sum(1)
        fib = 0.08 * torch.sin(2 * math.pi * 6.0 * torch.arange(SAMPLES) / 100.0)
        out[c:c + m] = x + labels[c:c + m, 4, None, None] * fib + 0.05 * torch.randn(
            m, LEADS, SAMPLES, generator=gen)
    return out, labels


class ResBlock(torch.nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = torch.nn.Conv1d(cin, cout, 7, stride, 3, bias=False)
        self.b1 = torch.nn.BatchNorm1d(cout)
        self.c2 = torch.nn.Conv1d(cout, cout, 7, 1, 3, bias=False)
        self.b2 = torch.nn.BatchNorm1d(cout)
        self.skip = (torch.nn.Sequential(torch.nn.Conv1d(cin, cout, 1, stride, bias=False),
                                         torch.nn.BatchNorm1d(cout))
                     if stride != 1 or cin != cout else torch.nn.Identity())

    def forward(self, x):
        return F.relu(self.skip(x) + self.b2(self.c2(F.relu(self.b1(self.c1(x))))))


class ECGResNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Sequential(torch.nn.Conv1d(LEADS, 64, 15, 2, 7, bias=False),
                                        torch.nn.BatchNorm1d(64), torch.nn.ReLU())
        self.blocks = torch.nn.Sequential(ResBlock(64, 64, 1), ResBlock(64, 128, 2),
                                          ResBlock(128, 128, 2), ResBlock(128, 256, 2))
        self.head = torch.nn.Linear(512, CLASSES)

    def forward(self, x):
        h = self.blocks(self.stem(x))  # SYNCSPY-CLEAN: allocator growth, cuDNN setup, first steps
        return self.head(torch.cat([h.mean(-1), h.amax(-1)], dim=1))


def host_auroc(p, y):
    """Macro AUROC from ranks (Mann-Whitney), as sklearn.metrics.roc_auc_score(average='macro')."""
    ranks = p.argsort(0).argsort(0) + 1.0
    pos = y.sum(0)
    return float(np.mean(((ranks * y).sum(0) - pos * (pos + 1) / 2) / (pos * (len(y) - pos))))


def device_auroc(p, y):
    ranks = p.argsort(0).argsort(0).float() + 1.0
    pos = y.sum(0)
    return (((ranks * y).sum(0) - pos * (pos + 1) / 2) / (pos * (y.shape[0] - pos))).mean()


def main():
    if not torch.cuda.is_available():
        print("t142_ecg_resnet_cpu_tolist_probs: no CUDA device, result=SKIP")
        return 1
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator().manual_seed(142)
    x, y = synth_records(N_TRAIN + N_VAL, gen)
    val_x = x[N_TRAIN:].to(dev)  # SYNCSPY-CLEAN: setup upload, once
    val_y = y[N_TRAIN:].to(dev)  # SYNCSPY-CLEAN: setup upload, once
    loader = DataLoader(TensorDataset(x[:N_TRAIN], y[:N_TRAIN]), batch_size=BATCH, shuffle=True,
                        generator=torch.Generator().manual_seed(7), pin_memory=True,
                        drop_last=True)
    model = ECGResNet().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=1e-2)
    losses, train_auc, val_auc = [], [], []

    for epoch in range(EPOCHS):
        model.train()
        train_probs, train_targets = [], []
        for records, target in loader:  # SYNCSPY-CLEAN: pinned host blocks, first batches only
            xb = records.to(dev, non_blocking=True)  # SYNCSPY-CLEAN: pinned source, asynchronous
            yb = target.to(dev, non_blocking=True)  # SYNCSPY-CLEAN: pinned source, asynchronous
            logits = model(xb)  # SYNCSPY-CLEAN: allocator growth, cuDNN setup in the first steps
            loss = F.binary_cross_entropy_with_logits(logits, yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            opt.step()  # SYNCSPY-CLEAN: AdamW state allocated on the first step
            losses.append(loss.detach())
            train_probs.extend(torch.sigmoid(logits.detach()).cpu().tolist())  # SYNCSPY-PROBLEM: blocking read, waits for the step
            train_targets.extend(target.tolist())  # SYNCSPY-CLEAN: the loader's CPU labels
        train_auc.append(host_auroc(np.array(train_probs), np.array(train_targets)))
        model.eval()
        with torch.no_grad():
            probs = torch.sigmoid(model(val_x))  # SYNCSPY-CLEAN: validation, once per epoch
        val_auc.append(device_auroc(probs, val_y).item())  # SYNCSPY-CLEAN: once per epoch

    hist = torch.stack(losses).cpu()  # SYNCSPY-CLEAN: final read
    first, last = hist[:3].mean().item(), hist[-3:].mean().item()
    ok = (math.isfinite(first) and math.isfinite(last) and last < first
          and hist.numel() == EPOCHS * (N_TRAIN // BATCH) and train_auc[-1] > train_auc[0]
          and train_auc[-1] > 0.75 and val_auc[-1] > 0.75)
    print("t142_ecg_resnet_cpu_tolist_probs: epochs=%d steps=%d batch=%d leads=%d result=%s"
          % (EPOCHS, hist.numel(), BATCH, LEADS, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
