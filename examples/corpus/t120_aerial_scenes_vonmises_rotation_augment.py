#!/usr/bin/env python3
"""examples/corpus/t120_aerial_scenes_vonmises_rotation_augment.py: corpus workload (PyTorch).
Aerial scene classification (10 classes of oriented ground textures, 3x96x96 tiles, a small ResNet,
batches of 64) with the augmentation done on the GPU by a module, `GpuAugment`: a random rotation
(`affine_grid` + `grid_sample`) and a random hue rotation about the grey axis. Both angles are
circular, so they are drawn from von Mises laws centred on 0 (concentration 4 for the rotation, most
tiles near their survey orientation, and 8 for the hue), with `torch.distributions.VonMises(...,
validate_args=False).sample()`. VonMises has no rsample: `sample()` runs Best and Fisher's rejection
sampler, `_rejection_sample` in torch/distributions/von_mises.py, a Python loop `while not
done.all():` with `if accept.any():` inside, two blocking reads of device tensors per round, and
rounds continue until all 64 angles are accepted (about five rounds). The first read of the step
waits for the previous step's backward pass and update; nothing else is queued until both angles are
drawn.
Planted: the two `VonMises(...).sample()` lines in GpuAugment.forward, every step (the first behind
the previous step's work, the second cheaper).
Clean: setup (the tiles generated on the GPU), a device `randperm` per epoch, allocator growth in
the first steps, validation on unaugmented tiles read once per epoch outside the step loop, the
final reads and the augmentation's invariants checked after the loop.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.distributions import VonMises  # noqa: E402

EPOCHS, STEPS_PER_EPOCH, BATCH, TILES, VAL_TILES, SIZE, CLASSES = 2, 20, 64, 2048, 256, 96, 10
WIDTHS = (64, 128, 256)


class GpuAugment(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("loc", torch.tensor(0.0))
        self.register_buffer("rot_kappa", torch.tensor(4.0))
        self.register_buffer("hue_kappa", torch.tensor(8.0))
        u = torch.full((3,), 1.0 / math.sqrt(3.0))
        cross = torch.tensor([[0.0, -1.0, 1.0], [1.0, 0.0, -1.0], [-1.0, 1.0, 0.0]]) * u[0]
        self.register_buffer("eye", torch.eye(3))
        self.register_buffer("outer", torch.outer(u, u))
        self.register_buffer("cross", cross)

    def rotate(self, x, angle):
        c, s = angle.cos(), angle.sin()
        zero = torch.zeros_like(c)
        mats = torch.stack([torch.stack([c, -s, zero], 1), torch.stack([s, c, zero], 1)], 1)
        grid = F.affine_grid(mats, list(x.shape), align_corners=False)  # SYNCSPY-CLEAN: a large temporary, allocator growth in the first steps
        return F.grid_sample(x, grid, mode="bilinear", padding_mode="reflection", align_corners=False)  # SYNCSPY-CLEAN: a large temporary, allocator growth in the first steps

    def hue_rotate(self, x, angle):
        """Rodrigues rotation of every RGB vector about the grey axis (1, 1, 1) / sqrt(3)."""
        c, s = angle.cos()[:, None, None], angle.sin()[:, None, None]
        rot = c * self.eye + (1 - c) * self.outer + s * self.cross
        return torch.einsum("bij,bjhw->bihw", rot, x)  # SYNCSPY-CLEAN: a large temporary, allocator growth in the first steps

    def forward(self, x):
        b = x.shape[0]
        theta = VonMises(self.loc.expand(b), self.rot_kappa.expand(b), validate_args=False).sample()  # SYNCSPY-PROBLEM: rejection sampler, `while not done.all()` and `if accept.any()` read the device every round, every step
        x = self.rotate(x, theta)
        hue = VonMises(self.loc.expand(b), self.hue_kappa.expand(b), validate_args=False).sample()  # SYNCSPY-PROBLEM: the same rejection loop for the hue angle, every step
        return self.hue_rotate(x, hue)


def basic_block(cin, cout, stride):
    return torch.nn.Sequential(
        torch.nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False), torch.nn.BatchNorm2d(cout), torch.nn.ReLU(),
        torch.nn.Conv2d(cout, cout, 3, padding=1, bias=False), torch.nn.BatchNorm2d(cout), torch.nn.ReLU())


class SceneNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Sequential(torch.nn.Conv2d(3, WIDTHS[0], 5, stride=2, padding=2, bias=False), torch.nn.BatchNorm2d(WIDTHS[0]), torch.nn.ReLU())
        self.stages = torch.nn.Sequential(*[basic_block(cin, cout, 1 if i == 0 else 2) for i, (cin, cout) in enumerate(zip((WIDTHS[0],) + WIDTHS[:-1], WIDTHS))])
        self.head = torch.nn.Linear(WIDTHS[-1], CLASSES)

    def forward(self, x):
        return self.head(self.stages(self.stem(x)).mean(dim=(2, 3)))


def make_tiles(n, dev, gen, freqs, orients, tints):
    """Each class: two gratings with class-specific frequency and orientation, a colour tint; random phase and noise."""
    label = torch.randint(0, CLASSES, (n,), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    coord = torch.linspace(-1.0, 1.0, SIZE, device=dev)  # SYNCSPY-CLEAN: setup allocation
    yy, xx = torch.meshgrid(coord, coord, indexing="ij")
    phase = 2 * math.pi * torch.rand(n, 2, 1, 1, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    th = orients[label][:, :, None, None]
    proj = xx * th.cos() + yy * th.sin()  # SYNCSPY-CLEAN: setup, a large temporary
    pattern = torch.sin(2 * math.pi * freqs[label][:, :, None, None] * proj + phase).sum(1, keepdim=True)  # SYNCSPY-CLEAN: setup, a large temporary
    noise = 0.4 * torch.randn(n, 3, SIZE, SIZE, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    return 0.5 + 0.25 * tints[label][:, :, None, None] * pattern + noise, label  # SYNCSPY-CLEAN: setup, the tile store


def main():
    torch.manual_seed(0)
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(120)
    freqs = 2.0 + 6.0 * torch.rand(CLASSES, 2, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    orients = math.pi * torch.rand(CLASSES, 2, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    tints = 0.5 + torch.rand(CLASSES, 3, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    tiles, labels = make_tiles(TILES, dev, gen, freqs, orients, tints)
    val_tiles, val_labels = make_tiles(VAL_TILES, dev, gen, freqs, orients, tints)
    augment = GpuAugment().to(dev)  # SYNCSPY-CLEAN: setup upload of the augmentation's buffers
    model = SceneNet().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    losses = torch.zeros(EPOCHS * STEPS_PER_EPOCH, device=dev)  # SYNCSPY-CLEAN: setup allocation
    val_acc = []

    for epoch in range(EPOCHS):
        model.train()
        order = torch.randperm(TILES, device=dev, generator=gen)  # SYNCSPY-CLEAN: device permutation once per epoch
        for i in range(STEPS_PER_EPOCH):
            step = epoch * STEPS_PER_EPOCH + i
            idx = order[i * BATCH:(i + 1) * BATCH]
            batch = tiles[idx]  # SYNCSPY-CLEAN: the batch gathered on the device (a large temporary, allocator growth in the first steps)
            x = augment(batch)  # its reads are the planted lines in GpuAugment.forward, its temporaries the marked lines of rotate and hue_rotate
            loss = F.cross_entropy(model(x), labels[idx])  # SYNCSPY-CLEAN: allocator growth in the first steps
            opt.zero_grad(set_to_none=True)
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            opt.step()  # SYNCSPY-CLEAN: momentum buffers allocated on the first step
            losses[step] = loss.detach()  # SYNCSPY-CLEAN: the step's loss copied into the history on the device (asynchronous device-to-device copy)
        model.eval()
        with torch.no_grad():
            pred = model(val_tiles).argmax(dim=1)  # SYNCSPY-CLEAN: validation once per epoch, outside the step loop
        val_acc.append(pred.eq(val_labels).float().mean().item())  # SYNCSPY-CLEAN: once per epoch, outside the step loop

    first, last = losses[:5].mean().item(), losses[-5:].mean().item()  # SYNCSPY-CLEAN: final read
    probe = val_tiles[:8]
    zero = torch.zeros(8, device=dev)  # SYNCSPY-CLEAN: teardown allocation
    angles = torch.linspace(-3.0, 3.0, 8, device=dev)  # SYNCSPY-CLEAN: teardown allocation
    ident_err = (augment.rotate(probe, zero) - probe).abs().max().item()  # SYNCSPY-CLEAN: teardown check, read once
    grey_err = (augment.hue_rotate(probe, angles).mean(1) - probe.mean(1)).abs().max().item()  # SYNCSPY-CLEAN: teardown check, read once
    ok = math.isfinite(first) and math.isfinite(last) and last < first and all(0.0 <= a <= 1.0 for a in val_acc) and ident_err < 1e-4 and grey_err < 1e-4
    print("t120_aerial_scenes_vonmises_rotation_augment: epochs=%d steps=%d batch=%d size=%d classes=%d result=%s" % (EPOCHS, EPOCHS * STEPS_PER_EPOCH, BATCH, SIZE, CLASSES, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
