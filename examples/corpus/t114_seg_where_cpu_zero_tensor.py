#!/usr/bin/env python3
"""examples/corpus/t114_seg_where_cpu_zero_tensor.py: corpus workload (PyTorch).
Semantic segmentation (19 classes and an ignore label, 255, on region boundaries and void blobs)
of 128x128 scenes with a four-level U-Net, batches of 16, a focal cross-entropy loss helper and a
metrics callback that keeps pixel accuracy and a confusion matrix on the GPU. Both helpers zero
the ignored pixels with a three-argument `torch.where` whose third argument is written
`torch.tensor(0.0)` and `torch.tensor(False)` (a habit from torch versions whose `where` took no
Python scalars): 0-dim CPU tensors. `where` allows CPU scalars beside CUDA tensors by copying them
to the device first (`other_ = other_.to(device)` in where_self_out,
aten/src/ATen/native/TensorCompare.cpp), a copy from pageable memory with `non_blocking=False`, so
the host waits for the stream (`memcpy_and_sync`): in the loss helper behind the whole U-Net
forward pass, in the callback behind the backward pass and the update, every step. A Python
scalar (`torch.where(valid, x, 0.0)`) is filled on the device, and `valid & hit` needs no fill.
Planted: the `torch.where(valid, per_pixel, torch.tensor(0.0))` line in focal_ce and the
`torch.where(valid, pred.eq(target), torch.tensor(False))` line in SegMetrics.on_batch_end, every
step (two problems).
Clean: setup (scenes generated on the GPU), horizontal flips decided on the host, the confusion
matrix accumulated with `scatter_add_` (no `bincount`), allocator growth in the first steps, the
accuracy and mean IoU read once per epoch outside the step loop, the final read.
"""
import math
import os
import random
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

EPOCHS, STEPS_PER_EPOCH, BATCH, IMAGES, SIZE, SEEDS = 2, 20, 16, 640, 128, 12
CLASSES, IGNORE, GAMMA = 19, 255, 2.0
WIDTHS = (32, 64, 128, 256)


def double_conv(cin, cout):
    return torch.nn.Sequential(
        torch.nn.Conv2d(cin, cout, 3, padding=1, bias=False), torch.nn.BatchNorm2d(cout), torch.nn.ReLU(),
        torch.nn.Conv2d(cout, cout, 3, padding=1, bias=False), torch.nn.BatchNorm2d(cout), torch.nn.ReLU())


class UNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.down = torch.nn.ModuleList([double_conv(cin, cout) for cin, cout in zip((3,) + WIDTHS[:-1], WIDTHS)])
        self.up = torch.nn.ModuleList([double_conv(WIDTHS[k] + WIDTHS[k + 1], WIDTHS[k]) for k in reversed(range(len(WIDTHS) - 1))])
        self.head = torch.nn.Conv2d(WIDTHS[0], CLASSES, 1)

    def forward(self, x):
        skips = []
        for k, blk in enumerate(self.down):
            x = blk(x if k == 0 else F.max_pool2d(x, 2))
            skips.append(x)
        x = skips.pop()
        for blk in self.up:
            x = blk(torch.cat([skips.pop(), F.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=False)], dim=1))
        return self.head(x)


def focal_ce(logits, target):
    valid = target != IGNORE
    ce = F.cross_entropy(logits, target.masked_fill(~valid, 0), reduction="none")  # SYNCSPY-CLEAN: large temporary (the log-softmax over 19 classes of every pixel), allocator growth in the first steps
    per_pixel = (1.0 - torch.exp(-ce)).pow(GAMMA) * ce
    per_pixel = torch.where(valid, per_pixel, torch.tensor(0.0))  # SYNCSPY-PROBLEM: a 0-dim CPU tensor: where copies it to the device from pageable memory (memcpy_and_sync), behind the forward pass, every step
    return per_pixel.sum() / valid.sum().clamp_min(1)


class SegMetrics:
    """Pixel accuracy and a confusion matrix kept on the GPU; read once per epoch."""

    def __init__(self, dev):
        self.hit = torch.zeros((), dtype=torch.long, device=dev)  # SYNCSPY-CLEAN: setup allocation
        self.count = torch.zeros((), dtype=torch.long, device=dev)  # SYNCSPY-CLEAN: setup allocation
        self.confusion = torch.zeros(CLASSES, CLASSES, dtype=torch.long, device=dev)  # SYNCSPY-CLEAN: setup allocation

    def reset(self):
        self.hit.zero_()
        self.count.zero_()
        self.confusion.zero_()

    def on_batch_end(self, logits, target):
        pred = logits.argmax(dim=1)
        valid = target != IGNORE
        hit = torch.where(valid, pred.eq(target), torch.tensor(False))  # SYNCSPY-PROBLEM: a 0-dim CPU tensor: where copies it to the device from pageable memory (memcpy_and_sync), behind the backward pass and the update, every step
        self.hit += hit.sum()
        self.count += valid.sum()
        self.confusion.view(-1).scatter_add_(0, (target.clamp(max=CLASSES - 1) * CLASSES + pred).view(-1), valid.view(-1).long())

    def summary(self):
        inter = self.confusion.diagonal()
        union = self.confusion.sum(dim=0) + self.confusion.sum(dim=1) - inter
        return torch.stack([self.hit / self.count.clamp_min(1), (inter / union.clamp_min(1)).mean()])


def make_scenes(dev, gen):
    """Voronoi regions of random classes, boundary pixels and void blobs ignored; images are class colours plus noise."""
    coords = torch.stack(torch.meshgrid(torch.arange(SIZE, device=dev), torch.arange(SIZE, device=dev), indexing="ij"), dim=-1).float()  # SYNCSPY-CLEAN: setup allocation
    seeds = torch.rand(IMAGES, SEEDS, 2, device=dev, generator=gen) * SIZE  # SYNCSPY-CLEAN: setup allocation
    seed_class = torch.randint(0, CLASSES, (IMAGES, SEEDS), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    dist = (coords.view(1, -1, 1, 2) - seeds.unsqueeze(1)).norm(dim=-1)  # SYNCSPY-CLEAN: setup, a large temporary
    near = dist.topk(2, dim=-1, largest=False)  # SYNCSPY-CLEAN: setup allocation
    label = seed_class.gather(1, near.indices[..., 0]).view(IMAGES, SIZE, SIZE)  # SYNCSPY-CLEAN: setup allocation
    boundary = (near.values[..., 1] - near.values[..., 0] < 1.5).view(IMAGES, SIZE, SIZE)  # SYNCSPY-CLEAN: setup allocation
    void = F.interpolate(torch.rand(IMAGES, 1, 8, 8, device=dev, generator=gen), size=(SIZE, SIZE), mode="bilinear", align_corners=False).squeeze(1) > 0.9  # SYNCSPY-CLEAN: setup allocation
    colour = torch.rand(CLASSES, 3, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    images = colour[label].permute(0, 3, 1, 2) + 0.35 * torch.randn(IMAGES, 3, SIZE, SIZE, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup, the image store
    return images.contiguous(), label.masked_fill(boundary | void, IGNORE)  # SYNCSPY-CLEAN: setup allocation


def main():
    torch.manual_seed(0)
    random.seed(114)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(114)
    images, labels = make_scenes(dev, gen)
    model = UNet().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-4)
    metrics = SegMetrics(dev)
    losses = torch.zeros(EPOCHS * STEPS_PER_EPOCH, device=dev)  # SYNCSPY-CLEAN: setup allocation
    history = []

    model.train()
    for epoch in range(EPOCHS):
        metrics.reset()
        for i in range(STEPS_PER_EPOCH):
            step = epoch * STEPS_PER_EPOCH + i
            s = (step * BATCH) % IMAGES
            x, y = images[s:s + BATCH], labels[s:s + BATCH]
            if random.random() < 0.5:
                x, y = x.flip(-1), y.flip(-1)  # SYNCSPY-CLEAN: flipped copies on the device (large temporaries, allocator growth in the first steps)
            logits = model(x)  # SYNCSPY-CLEAN: allocator growth in the first steps
            loss = focal_ce(logits, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            opt.step()  # SYNCSPY-CLEAN: AdamW state allocated on the first step
            losses[step] = loss.detach()  # SYNCSPY-CLEAN: the step's loss copied into the history on the device (asynchronous device-to-device copy)
            metrics.on_batch_end(logits.detach(), y)
        history.append(metrics.summary().tolist())  # SYNCSPY-CLEAN: once per epoch, outside the step loop

    first, last = losses[:5].mean().item(), losses[-5:].mean().item()  # SYNCSPY-CLEAN: final read
    ok = math.isfinite(first) and math.isfinite(last) and last < first and all(0.0 <= v <= 1.0 for h in history for v in h)
    print("t114_seg_where_cpu_zero_tensor: epochs=%d steps=%d batch=%d size=%d classes=%d result=%s" % (EPOCHS, EPOCHS * STEPS_PER_EPOCH, BATCH, SIZE, CLASSES, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
