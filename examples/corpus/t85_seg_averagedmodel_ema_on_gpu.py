#!/usr/bin/env python3
"""examples/corpus/t85_seg_averagedmodel_ema_on_gpu.py: corpus workload (PyTorch). Semantic
segmentation of synthetic aerial tiles (background, field parcels, roads, water) with a small
U-Net (GroupNorm, SiLU), trained with cross-entropy plus soft Dice, and an exponential moving
average of the weights kept by `torch.optim.swa_utils.AveragedModel(model, device=dev,
avg_fn=ema_avg)` in the style of the AveragedModel documentation's EMA example.
AveragedModel registers its counter as a buffer, `torch.tensor(0, dtype=torch.long,
device=device)`: on the GPU. `update_parameters` (torch/optim/swa_utils.py) branches on it on
the host, `copy_param = bool(self.n_averaged == 0)` and `if self.n_averaged > 0:`, and
`Tensor.__bool__` of a CUDA tensor is `.item()`: two blocking device-to-host reads right after
the optimizer step, in Trainer.after_step, every step (torch 1.x read it once per parameter).
The first waits for the whole step (forward, backward, AdamW); the GPU then idles while the
host runs the per-parameter averaging and queues the next step. An EMA kept with
`torch._foreach_lerp_` over the parameter lists never reads the device.
Planted: the `self.ema.update_parameters(self.model)` line in Trainer.after_step, every step.
Clean: setup (the tiles generated on the GPU, the model upload, AveragedModel's copy of the
weights), allocator growth in the first steps, the EMA model's evaluation after the loop, the
final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.optim.swa_utils import AveragedModel  # noqa: E402

STEPS, BATCH, TILE, POOL, VAL, CLASSES, EMA_DECAY = 50, 32, 64, 1024, 128, 4, 0.99


def conv_gn(cin, cout):
    return torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 3, padding=1), torch.nn.GroupNorm(8, cout), torch.nn.SiLU(), torch.nn.Conv2d(cout, cout, 3, padding=1), torch.nn.GroupNorm(8, cout), torch.nn.SiLU())


class UNet(torch.nn.Module):
    def __init__(self, ch=32):
        super().__init__()
        self.e1, self.e2, self.e3 = conv_gn(3, ch), conv_gn(ch, 2 * ch), conv_gn(2 * ch, 4 * ch)
        self.d2, self.d1 = conv_gn(6 * ch, 2 * ch), conv_gn(3 * ch, ch)
        self.out = torch.nn.Conv2d(ch, CLASSES, 1)

    def forward(self, x):
        h1 = self.e1(x)
        h2 = self.e2(F.max_pool2d(h1, 2))
        h3 = self.e3(F.max_pool2d(h2, 2))
        u2 = self.d2(torch.cat([F.interpolate(h3, scale_factor=2.0, mode="bilinear", align_corners=False), h2], dim=1))
        u1 = self.d1(torch.cat([F.interpolate(u2, scale_factor=2.0, mode="bilinear", align_corners=False), h1], dim=1))
        return self.out(u1)


def make_tiles(n, dev, gen):
    """Rectangular parcels, straight roads and round ponds; the image is a per-class colour plus texture."""
    lin = torch.linspace(0.0, 1.0, TILE, device=dev)  # SYNCSPY-CLEAN: setup allocation
    yy, xx = lin.view(1, 1, -1, 1), lin.view(1, 1, 1, -1)
    r = torch.rand(n, 6, 4, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    x0, y0 = r[..., 0, None, None] * 0.8, r[..., 1, None, None] * 0.8
    field = ((xx >= x0) & (xx < x0 + 0.1 + 0.3 * r[..., 2, None, None]) & (yy >= y0) & (yy < y0 + 0.1 + 0.3 * r[..., 3, None, None])).any(dim=1)  # SYNCSPY-CLEAN: setup temporaries
    ang = math.pi * torch.rand(n, 1, 1, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    off = torch.rand(n, 1, 1, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    road = (xx[:, 0] * torch.cos(ang) + yy[:, 0] * torch.sin(ang) - off).abs() < 0.035
    c = torch.rand(n, 2, 1, 1, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    water = (xx[:, 0] - c[:, 0]) ** 2 + (yy[:, 0] - c[:, 1]) ** 2 < (0.05 + 0.1 * off) ** 2
    label = torch.where(water, 3, torch.where(road, 2, torch.where(field, 1, 0)))
    palette = torch.tensor([[0.35, 0.30, 0.20], [0.20, 0.55, 0.15], [0.55, 0.55, 0.55], [0.10, 0.20, 0.60]], device=dev)  # SYNCSPY-CLEAN: setup upload of the palette (pageable, once)
    img = palette[label].permute(0, 3, 1, 2) + 0.15 * torch.randn(n, 3, TILE, TILE, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    return img, label


def soft_dice(logits, target):
    probs = logits.softmax(dim=1)
    onehot = F.one_hot(target, CLASSES).permute(0, 3, 1, 2).float()
    inter = (probs * onehot).sum(dim=(0, 2, 3))
    union = probs.sum(dim=(0, 2, 3)) + onehot.sum(dim=(0, 2, 3))
    return 1.0 - ((2 * inter + 1.0) / (union + 1.0)).mean()


def ema_avg(averaged_param, model_param, num_averaged):
    return EMA_DECAY * averaged_param + (1.0 - EMA_DECAY) * model_param


class Trainer:
    def __init__(self, model, dev):
        self.model = model
        self.opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-4)
        self.ema = AveragedModel(model, device=dev, avg_fn=ema_avg)  # SYNCSPY-CLEAN: setup, the EMA copy of the weights (device to device) and its counter
        self.loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation

    def train_step(self, x, y):
        logits = self.model(x)  # SYNCSPY-CLEAN: allocator growth in the first steps
        loss = F.cross_entropy(logits, y) + soft_dice(logits, y)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        self.opt.step()  # SYNCSPY-CLEAN: AdamW state allocated on the first step
        self.loss_sum += loss.detach()
        self.after_step()

    def after_step(self):
        self.ema.update_parameters(self.model)  # SYNCSPY-PROBLEM: AveragedModel branches on its CUDA counter n_averaged (bool(n_averaged == 0), n_averaged > 0): two blocking reads, every step


@torch.no_grad()
def mean_iou(model, x, y):
    pred = model(x).argmax(dim=1)
    conf = F.one_hot(y.flatten(), CLASSES).float().t() @ F.one_hot(pred.flatten(), CLASSES).float()
    inter = conf.diag()
    union = conf.sum(dim=0) + conf.sum(dim=1) - inter
    return (inter / union.clamp(min=1.0)).mean()


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(85)
    xs, ys = make_tiles(POOL, dev, gen)
    xv, yv = make_tiles(VAL, dev, gen)
    model = UNet().to(dev)  # SYNCSPY-CLEAN: setup upload
    trainer = Trainer(model, dev)

    for step in range(STEPS):
        s = (step * BATCH) % POOL
        trainer.train_step(xs[s:s + BATCH], ys[s:s + BATCH])

    trainer.ema.eval()
    miou = mean_iou(trainer.ema, xv, yv)  # SYNCSPY-CLEAN: evaluation of the EMA model after the loop
    mean_loss, iou, averaged = torch.stack([trainer.loss_sum / STEPS, miou, trainer.ema.n_averaged.float()]).tolist()  # SYNCSPY-CLEAN: final read
    ok = math.isfinite(mean_loss) and 0.0 <= iou <= 1.0 and int(averaged) == STEPS
    print("t85_seg_averagedmodel_ema_on_gpu: steps=%d batch=%d tile=%d classes=%d result=%s" % (STEPS, BATCH, TILE, CLASSES, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
