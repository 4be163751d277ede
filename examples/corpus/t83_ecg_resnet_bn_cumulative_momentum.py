#!/usr/bin/env python3
"""examples/corpus/t83_ecg_resnet_bn_cumulative_momentum.py: corpus workload (PyTorch).
Rhythm classification of 12-lead ECG windows (five classes: sinus rhythm, tachycardia,
bradycardia, atrial fibrillation, bundle branch block; 4 s at 250 Hz) with a 1-D ResNet of
Conv1d + BatchNorm1d blocks. The experiment config sets `bn_momentum: None`, which the
BatchNorm documentation describes as "Can be set to None for cumulative moving average (i.e.
simple average)". `_BatchNorm.forward` (torch/nn/modules/batchnorm.py) implements it as
`exponential_average_factor = 1.0 / float(self.num_batches_tracked)`: `num_batches_tracked`
is a buffer, on the GPU with the rest of the model, and `float()` of a CUDA tensor is
`.item()`, a blocking device-to-host read. Each of the network's 20 BatchNorm layers does it
in training mode, in the middle of the forward pass, every step: the host waits for all the
work queued before that layer, then the GPU idles while the host queues the next layer. With
a momentum (the default 0.1) the factor is a Python float and the forward pass does not wait.
Planted: the `self.bn(self.conv(x))` line in ConvBN.forward (the BatchNorm call), every
BatchNorm layer of every step.
Clean: setup (the synthetic ECG pool generated on the GPU, the model upload), allocator growth
in the first steps, the evaluation in eval mode after the loop (running statistics, no counter
read), the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

CONFIG = {"steps": 40, "batch": 128, "pool": 4096, "val": 512, "lr": 1e-3, "warmup": 8, "bn_momentum": None}
LEADS, FS, SECONDS, CLASSES, BEATS = 12, 250, 4, 5, 12
SAMPLES = FS * SECONDS


class ConvBN(torch.nn.Module):
    def __init__(self, cin, cout, k, stride=1):
        super().__init__()
        self.conv = torch.nn.Conv1d(cin, cout, k, stride=stride, padding=k // 2, bias=False)
        self.bn = torch.nn.BatchNorm1d(cout, momentum=CONFIG["bn_momentum"])

    def forward(self, x):
        return self.bn(self.conv(x))  # SYNCSPY-PROBLEM: momentum=None: BatchNorm reads float(num_batches_tracked), a CUDA buffer (.item(), blocking), every BatchNorm layer of every step


class BasicBlock(torch.nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.c1 = ConvBN(cin, cout, 7, stride)
        self.c2 = ConvBN(cout, cout, 7)
        self.down = ConvBN(cin, cout, 1, stride) if (stride != 1 or cin != cout) else None

    def forward(self, x):
        h = F.relu(self.c1(x))
        skip = x if self.down is None else self.down(x)
        return F.relu(self.c2(h) + skip)


class ECGResNet(torch.nn.Module):
    def __init__(self, widths=(32, 64, 128, 192)):
        super().__init__()
        self.stem = ConvBN(LEADS, widths[0], 15, 2)
        blocks, cin = [], widths[0]
        for i, w in enumerate(widths):
            blocks += [BasicBlock(cin, w, 1 if i == 0 else 2), BasicBlock(w, w, 1)]
            cin = w
        self.blocks = torch.nn.Sequential(*blocks)
        self.head = torch.nn.Linear(cin, CLASSES)

    def forward(self, x):
        h = F.max_pool1d(F.relu(self.stem(x)), 3, 2, 1)
        return self.head(self.blocks(h).mean(dim=2))


def synth_ecg(n, dev, gen):
    """Gaussian P/QRS/T waves per beat; rate, rhythm regularity and QRS width set by the class."""
    label = torch.randint(0, CLASSES, (n,), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    lo = torch.tensor([60.0, 110.0, 40.0, 80.0, 60.0], device=dev)[label]  # SYNCSPY-CLEAN: setup upload of the class table (pageable, once)
    hi = torch.tensor([90.0, 150.0, 55.0, 140.0, 90.0], device=dev)[label]  # SYNCSPY-CLEAN: setup upload of the class table (pageable, once)
    rate = lo + (hi - lo) * torch.rand(n, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    rr = (60.0 / rate).unsqueeze(1)
    irregular = torch.where(label == 3, 0.25, 0.02).unsqueeze(1)
    rr_i = rr * (1.0 + irregular * torch.randn(n, BEATS, device=dev, generator=gen)).clamp(0.5, 1.6)  # SYNCSPY-CLEAN: setup allocation
    beat_t = torch.cumsum(rr_i, dim=1) - rr * (1.0 + torch.rand(n, 1, device=dev, generator=gen))  # SYNCSPY-CLEAN: setup allocation
    t = torch.arange(SAMPLES, device=dev, dtype=torch.float32).view(1, 1, -1) / FS  # SYNCSPY-CLEAN: setup allocation
    p_amp = torch.where(label == 3, 0.0, 0.15).view(-1, 1, 1)
    qrs_w = torch.where(label == 4, 0.030, 0.012).view(-1, 1, 1)
    sig = torch.zeros(n, SAMPLES, device=dev)  # SYNCSPY-CLEAN: setup allocation
    for offset, amp, width in ((-0.16, p_amp, 0.025), (0.0, 1.0, qrs_w), (0.30, 0.30, 0.05)):
        d = t - (beat_t.unsqueeze(2) + offset)  # SYNCSPY-CLEAN: setup temporary (pool x beats x samples)
        sig += (amp * torch.exp(-0.5 * (d / width) ** 2)).sum(dim=1)  # SYNCSPY-CLEAN: setup temporaries
    gains = torch.linspace(-1.0, 1.2, LEADS, device=dev).view(1, -1, 1)  # SYNCSPY-CLEAN: setup allocation
    wander = 0.1 * torch.sin(2 * math.pi * 0.3 * t.view(1, 1, -1) + 6.28 * torch.rand(n, 1, 1, device=dev, generator=gen))  # SYNCSPY-CLEAN: setup allocation
    x = gains * sig.unsqueeze(1) + wander + 0.05 * torch.randn(n, LEADS, SAMPLES, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    return x, label


def main():
    cfg = CONFIG
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(83)
    xs, ys = synth_ecg(cfg["pool"], dev, gen)
    xv, yv = synth_ecg(cfg["val"], dev, gen)
    model = ECGResNet().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], weight_decay=1e-2)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / cfg["warmup"]))
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
    correct = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation

    b = cfg["batch"]
    model.train()
    for step in range(cfg["steps"]):
        s = (step * b) % cfg["pool"]
        x, y = xs[s:s + b], ys[s:s + b]
        logits = model(x)  # SYNCSPY-CLEAN: allocator growth in the first steps
        loss = F.cross_entropy(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: AdamW state allocated on the first step
        sched.step()
        loss_sum += loss.detach()
        correct += (logits.argmax(dim=1) == y).sum()

    model.eval()
    with torch.no_grad():
        val_correct = (model(xv).argmax(dim=1) == yv).sum()  # SYNCSPY-CLEAN: evaluation after the loop, eval mode (running statistics)
    min_var = torch.stack([m.running_var.min() for m in model.modules() if isinstance(m, torch.nn.BatchNorm1d)]).min()
    stats = torch.stack([loss_sum / cfg["steps"], correct / (cfg["steps"] * b), val_correct / cfg["val"], min_var, model.stem.bn.num_batches_tracked.float()]).tolist()  # SYNCSPY-CLEAN: final read
    mean_loss, train_acc, val_acc, var_floor, tracked = stats
    n_bn = sum(isinstance(m, torch.nn.BatchNorm1d) for m in model.modules())
    ok = math.isfinite(mean_loss) and 0.0 <= train_acc <= 1.0 and 0.0 <= val_acc <= 1.0 and var_floor > 0.0 and int(tracked) == cfg["steps"] and n_bn == 20
    print("t83_ecg_resnet_bn_cumulative_momentum: steps=%d batch=%d leads=%d samples=%d bn_layers=%d result=%s" % (cfg["steps"], b, LEADS, SAMPLES, n_bn, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
