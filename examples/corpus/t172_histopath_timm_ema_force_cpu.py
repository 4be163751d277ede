#!/usr/bin/env python3
"""examples/corpus/t172_histopath_timm_ema_force_cpu.py: corpus workload (PyTorch).
Histopathology: colorectal tissue-type classification (the nine classes of Kather et al.'s
NCT-CRC-HE-100K: adipose, background, debris, lymphocytes, mucus, smooth muscle, normal mucosa,
cancer-associated stroma, tumour epithelium) on 64 x 64 patches, trained with
pytorch-image-models' (timm 0.5/0.6) `train.py` loop and its weight EMA: `utils.ModelEmaV2(model,
decay=args.model_ema_decay, device='cpu' if args.model_ema_force_cpu else None)`, the run
started with `--model-ema --model-ema-force-cpu` (the help text: "Force ema to be tracked on
CPU"; a common choice when the GPU is full, copied into many training scripts). 4,096 synthetic
H&E-like patches (class colour, texture frequency and nuclei density, generated on the GPU), a
small ResNet (a 3x3 stem and three BasicBlocks, 0.3M parameters in 56 state_dict entries), timm's
`LabelSmoothingCrossEntropy(smoothing=0.1)` and SGD with Nesterov momentum, 2 epochs of 32 steps
of 128 patches.
`train_one_epoch` does, every step, as timm 0.5/0.6 wrote it:
- `losses_m.update(loss.item(), input.size(0))` before the backward pass (`.item()`: waits for
  the forward pass, the GPU idle since the previous step's synchronize);
- `model_ema.update(model)`: `ModelEmaV2._update` walks both state_dicts and, with `self.device`
  set, does `model_v = model_v.to(device=self.device)` for each of the 56 entries: a
  device-to-host copy into new pageable memory, which `copy_kernel_cuda` ends with
  `memcpy_and_sync` (the first waits for the backward pass and the SGD update, expensive), then
  the EMA arithmetic on the CPU;
- `torch.cuda.synchronize()` (timm's, for `batch_time_m`; cheap here, the GPU already idle).
The Performance Tuning Guide lists `.item()` and copies to the host among the CPU-GPU
synchronizations to avoid; `torch.cuda.set_sync_debug_mode` reports `.item()` and the
copies.
Fix (not in this set): the EMA kept on the GPU (`device=None`, or timm's later ModelEmaV3,
which updates with `torch._foreach_lerp_`), the loss summed on the device and read at the log
interval, no synchronize per step (later timm releases make it optional,
`--synchronize-step`).
Planted: `losses_m.update(loss.item(), ...)`, `model_v = model_v.to(device=self.device)` (56
copies a step) and `torch.cuda.synchronize()`, every step.
Clean: setup (the patches generated on the GPU, the model uploaded, the EMA's deep copy and its
move to the CPU), the per-epoch device shuffle, allocator growth in the first steps (the batch
gathered on the GPU, forward, backward, SGD momentum buffers), a device-to-device snapshot of
the classifier weights for the check, the final reads.
The script was written without timm's DataLoader, prefetcher and per-epoch `validate()` (the
patches live on the GPU; one evaluation after the loop), so that the problem is the one named.
Per step on an H100 (estimated from the sizes, fp32 without TF32): 128 patches through a
0.3M-parameter ResNet (about 12 GFLOP forward), forward and backward, about 1.5 ms; the 56
copies (1.2 MB) and the CPU EMA about as much again.
"""
import math
import sys
from copy import deepcopy

import torch
import torch.nn.functional as F

N_TRAIN, N_VAL, IMG, CLASSES = 4096, 1024, 64, 9
BATCH, EPOCHS, LR, MODEL_EMA_DECAY, LOG_INTERVAL = 128, 2, 0.05, 0.9998, 10


class AverageMeter:
    """Computes and stores the average and current value (timm.utils)."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.val = 0
        self.avg = 0
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


class ModelEmaV2(torch.nn.Module):
    """Model Exponential Moving Average V2 (timm.utils.model_ema)."""

    def __init__(self, model, decay=0.9999, device=None):
        super().__init__()
        # make a copy of the model for accumulating moving average of weights
        self.module = deepcopy(model)  # SYNCSPY-CLEAN: setup, the EMA's copy of the model
        self.module.eval()
        self.decay = decay
        self.device = device  # perform ema on different device from model if set
        if self.device is not None:
            self.module.to(device=device)  # SYNCSPY-CLEAN: setup, the EMA moved to the CPU once

    def _update(self, model, update_fn):
        with torch.no_grad():
            for ema_v, model_v in zip(self.module.state_dict().values(), model.state_dict().values()):
                if self.device is not None:
                    model_v = model_v.to(device=self.device)  # SYNCSPY-PROBLEM: blocking device-to-host copy, 56 a step
                ema_v.copy_(update_fn(ema_v, model_v))

    def update(self, model):
        self._update(model, update_fn=lambda e, m: self.decay * e + (1. - self.decay) * m)


class LabelSmoothingCrossEntropy(torch.nn.Module):
    """NLL loss with label smoothing (timm.loss)."""

    def __init__(self, smoothing=0.1):
        super().__init__()
        assert smoothing < 1.0
        self.smoothing = smoothing
        self.confidence = 1. - smoothing

    def forward(self, x, target):
        logprobs = F.log_softmax(x, dim=-1)
        nll_loss = -logprobs.gather(dim=-1, index=target.unsqueeze(1))
        nll_loss = nll_loss.squeeze(1)
        smooth_loss = -logprobs.mean(dim=-1)
        loss = self.confidence * nll_loss + self.smoothing * smooth_loss
        return loss.mean()


class BasicBlock(torch.nn.Module):
    def __init__(self, inplanes, planes, stride=1):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(planes)
        self.conv2 = torch.nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or inplanes != planes:
            self.downsample = torch.nn.Sequential(torch.nn.Conv2d(inplanes, planes, 1, stride, bias=False), torch.nn.BatchNorm2d(planes))

    def forward(self, x):
        shortcut = x if self.downsample is None else self.downsample(x)
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.bn2(self.conv2(x))
        return F.relu(x + shortcut)


class TissueResNet(torch.nn.Module):
    def __init__(self, num_classes=CLASSES):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 32, 3, 2, 1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(32)
        self.layer1, self.layer2, self.layer3 = BasicBlock(32, 32), BasicBlock(32, 64, 2), BasicBlock(64, 128, 2)
        self.fc = torch.nn.Linear(128, num_classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.layer3(self.layer2(self.layer1(x)))
        return self.fc(x.mean((2, 3)))


def make_patches(n, gen, dev, style):
    """H&E-like textures: a class colour, a stripe texture at a class frequency and dark nuclei at
    a class density, with noise."""
    colors, freqs, density = style
    labels = torch.randint(0, CLASSES, (n,), device=dev, generator=gen)
    yy, xx = torch.meshgrid(torch.arange(IMG, device=dev, dtype=torch.float32), torch.arange(IMG, device=dev, dtype=torch.float32), indexing="ij")
    f = freqs[labels]
    phase = torch.rand(n, 1, 1, device=dev, generator=gen) * 2 * math.pi
    wave = torch.sin(2 * math.pi * (f[:, 0, None, None] * xx + f[:, 1, None, None] * yy) + phase)
    nuclei = (torch.rand(n, 1, IMG, IMG, device=dev, generator=gen) < density[labels][:, None, None, None]).float()
    nuclei = F.avg_pool2d(nuclei, 3, 1, 1)
    x = colors[labels][:, :, None, None] * (1 + 0.25 * wave[:, None]) - 0.8 * nuclei
    x = x + 0.1 * torch.randn(n, 3, IMG, IMG, device=dev, generator=gen)
    return (x - 0.5) / 0.25, labels


class GpuLoader:
    """Batches of a dataset kept on the GPU, in a new device-side order each epoch."""

    def __init__(self, x, y, batch_size, gen):
        self.x, self.y, self.batch_size, self.gen = x, y, batch_size, gen

    def __len__(self):
        return self.x.size(0) // self.batch_size

    def __iter__(self):
        order = torch.randperm(self.x.size(0), device=self.x.device, generator=self.gen)  # SYNCSPY-CLEAN: once per epoch, a device-side shuffle
        for b in range(len(self)):
            idx = order[b * self.batch_size:(b + 1) * self.batch_size]
            yield self.x[idx], self.y[idx]  # SYNCSPY-CLEAN: allocator growth in the first steps


def train_one_epoch(epoch, model, loader, optimizer, loss_fn, model_ema, log, fc_hist, num_updates):
    """timm train.py's train_one_epoch (0.5/0.6), without AMP, mixup and the prefetcher."""
    losses_m = AverageMeter()
    model.train()
    last_idx = len(loader) - 1
    for batch_idx, (input, target) in enumerate(loader):
        last_batch = batch_idx == last_idx
        output = model(input)  # SYNCSPY-CLEAN: allocator growth in the first steps
        loss = loss_fn(output, target)
        losses_m.update(loss.item(), input.size(0))  # SYNCSPY-PROBLEM: .item() every step, behind the forward pass
        optimizer.zero_grad()
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        optimizer.step()  # SYNCSPY-CLEAN: SGD momentum buffers allocated on the first step
        fc_hist[num_updates].copy_(model.fc.weight.detach())  # SYNCSPY-CLEAN: device-to-device snapshot for the check
        if model_ema is not None:
            model_ema.update(model)
        torch.cuda.synchronize()  # SYNCSPY-PROBLEM: device synchronize every step, for batch_time_m
        num_updates += 1
        if last_batch or batch_idx % LOG_INTERVAL == 0:
            lr = sum(g["lr"] for g in optimizer.param_groups) / len(optimizer.param_groups)
            log.append("Train: {} [{:>4d}/{}]  Loss: {:>9.6f} ({:>6.4f})  LR: {:.3e}".format(
                epoch, batch_idx, last_idx + 1, losses_m.val, losses_m.avg, lr))
    return num_updates, losses_m.avg


def main():
    if not torch.cuda.is_available():
        print("t172_histopath_timm_ema_force_cpu: no CUDA device, result=SKIP")
        return 1
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(172)
    colors = torch.rand(CLASSES, 3, device=dev, generator=gen) * 0.6 + 0.2  # SYNCSPY-CLEAN: setup, the class styles drawn on the GPU
    freqs = torch.rand(CLASSES, 2, device=dev, generator=gen) * 0.3 + 0.02  # SYNCSPY-CLEAN: setup, the class styles drawn on the GPU
    density = torch.linspace(0.02, 0.3, CLASSES, device=dev)[torch.randperm(CLASSES, device=dev, generator=gen)]  # SYNCSPY-CLEAN: setup, the class styles drawn on the GPU
    style = (colors, freqs, density)
    x_train, y_train = make_patches(N_TRAIN, gen, dev, style)  # SYNCSPY-CLEAN: setup, the patches generated on the GPU once
    x_val, y_val = make_patches(N_VAL, gen, dev, style)  # SYNCSPY-CLEAN: setup, the patches generated on the GPU once
    model = TissueResNet().to(dev)  # SYNCSPY-CLEAN: setup upload
    # Important to create EMA model after cuda(), DP wrapper, and AMP but before DDP wrapper
    model_ema = ModelEmaV2(model, decay=MODEL_EMA_DECAY, device="cpu")  # SYNCSPY-CLEAN: setup, the EMA copy made and moved to the CPU once
    ema_fc0 = model_ema.module.fc.weight.detach().clone()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=0.9, nesterov=True, weight_decay=2e-5)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=EPOCHS)
    loss_fn = LabelSmoothingCrossEntropy(smoothing=0.1)
    steps_per_epoch = N_TRAIN // BATCH
    fc_hist = torch.zeros(EPOCHS * steps_per_epoch, CLASSES, 128, device=dev)  # SYNCSPY-CLEAN: setup allocation, for the check
    log, epoch_losses, num_updates = [], [], 0

    loader = GpuLoader(x_train, y_train, BATCH, gen)
    for epoch in range(EPOCHS):
        num_updates, avg = train_one_epoch(epoch, model, loader, optimizer, loss_fn, model_ema, log, fc_hist, num_updates)
        epoch_losses.append(avg)
        scheduler.step()

    model.eval()
    with torch.no_grad():
        correct = (model(x_val).argmax(1) == y_val).sum().item()  # SYNCSPY-CLEAN: final read
        snapshots = fc_hist.cpu()  # SYNCSPY-CLEAN: final read, for the check
    # The CPU EMA of the classifier weights against the same recurrence replayed from the snapshots.
    expected = ema_fc0
    for k in range(num_updates):
        expected = MODEL_EMA_DECAY * expected + (1. - MODEL_EMA_DECAY) * snapshots[k]
    ema_fc = model_ema.module.fc.weight.detach()
    drift = (ema_fc - ema_fc0).abs().max().item()
    err = (ema_fc - expected).abs().max().item()
    on_cpu = all(p.device.type == "cpu" for p in model_ema.module.parameters())
    first, last = epoch_losses[0], epoch_losses[-1]
    ok = (num_updates == EPOCHS * steps_per_epoch and len(log) == EPOCHS * 5 and on_cpu and math.isfinite(last)
          and last < first and correct / N_VAL >= 0.7 and err <= 1e-5 and drift > 1e-6)
    print("t172_histopath_timm_ema_force_cpu: epochs=%d steps=%d batch=%d classes=%d ema_decay=%g "
          "result=%s" % (EPOCHS, num_updates, BATCH, CLASSES, MODEL_EMA_DECAY, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
