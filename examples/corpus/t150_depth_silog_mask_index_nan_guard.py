#!/usr/bin/env python3
"""examples/corpus/t150_depth_silog_mask_index_nan_guard.py: corpus workload (PyTorch + NumPy).
Monocular depth estimation for driving scenes, trained against sparse LiDAR-like ground truth
in the manner of the BTS repository: a small encoder-decoder CNN (four stride-2 stages of 32-128
channels, a skip-connected upsampling decoder, a sigmoid head scaled to 80 m) predicts depth
from 96 x 320 images, and the scale-invariant log loss (`silog_loss`, variance focus 0.85) is
taken over the pixels with ground truth, `mask = depth_gt > 1.0`. The scenes (a ground plane, a
sky band, a few boxes, shading from the depth, 8% of the pixels carrying a depth) are rendered on
the GPU every step. Two of BTS's lines sync every step. `silog_loss` selects the valid pixels
with `depth_est[mask]` and `depth_gt[mask]`: boolean-mask indexing calls `nonzero`, whose output
size the host must read (the torch.nonzero note: "When input is on CUDA, torch.nonzero() causes
host-device synchronization"), so the host waits for the whole forward pass. After
`optimizer.step()`, the divergence guard `if np.isnan(loss.cpu().item()):` copies the loss to
the host (`.cpu()` ends in `memcpy_and_sync`; the Performance Tuning Guide lists `.item()` and
`.cpu()` among the syncs to avoid), waiting for the backward pass and the update.
Fix: the loss as masked sums, `d = torch.where(mask, log(est) - log(gt), 0)`, the means divided
by `mask.sum()` kept on the device; the non-finite check on a device flag read once per epoch
(or `torch.nan_to_num` plus a device counter), not every step.
Planted: the `d = torch.log(depth_est[mask]) - torch.log(depth_gt[mask])` line in `silog_loss`
(expensive) and `if np.isnan(loss.cpu().item()):` (expensive: behind the backward pass and the
update), every step.
Clean: setup (the model uploaded once), allocator growth in the first steps (rendering,
forward, backward, AdamW), the losses read once after the loop.
Per step on an H100 (estimated from the sizes, fp32 without TF32): 8 images of 96 x 320 through
the encoder-decoder, forward and backward about 2-4 ms.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

H, W, MAX_DEPTH, BATCH, EPOCHS, STEPS_PER_EPOCH, LR, GT_DENSITY = 96, 320, 80.0, 8, 2, 25, 2e-4, 0.08


class silog_loss(torch.nn.Module):
    def __init__(self, variance_focus):
        super().__init__()
        self.variance_focus = variance_focus

    def forward(self, depth_est, depth_gt, mask):
        d = torch.log(depth_est[mask]) - torch.log(depth_gt[mask])  # SYNCSPY-PROBLEM: boolean mask: nonzero, every step
        return torch.sqrt((d ** 2).mean() - self.variance_focus * (d.mean() ** 2)) * 10.0


def conv_bn(cin, cout, stride=1):
    return torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False),
                               torch.nn.BatchNorm2d(cout), torch.nn.ELU())


class DepthNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        chans = [3, 32, 64, 96, 128]
        self.enc = torch.nn.ModuleList(
            torch.nn.Sequential(conv_bn(chans[i], chans[i + 1], 2), conv_bn(chans[i + 1], chans[i + 1]))
            for i in range(4))
        self.dec = torch.nn.ModuleList(conv_bn(chans[i + 1] + chans[i] if i else chans[1], chans[i] if i else 32)
                                       for i in range(3, -1, -1))
        self.head = torch.nn.Conv2d(32, 1, 3, padding=1)

    def forward(self, x):
        skips = []
        for stage in self.enc:
            skips.append(x)
            x = stage(x)
        for i, layer in enumerate(self.dec):
            x = F.interpolate(x, scale_factor=2.0, mode="nearest")
            skip = skips[3 - i]
            x = layer(torch.cat([x, skip], 1) if i < 3 else x)
        return torch.sigmoid(self.head(x)) * MAX_DEPTH


def render_scenes(gen, dev):
    """Ground plane below the horizon, sky above, boxes in front; sparse ground truth."""
    rows = torch.arange(H, device=dev, dtype=torch.float32)[None, :, None]
    cols = torch.arange(W, device=dev, dtype=torch.float32)[None, None, :]
    horizon = 30.0 + 8.0 * torch.rand(BATCH, 1, 1, device=dev, generator=gen)
    ground = (1.65 * 300.0 / (rows - horizon).clamp(min=1.0)).clamp(max=MAX_DEPTH - 1.0)
    depth = torch.where(rows > horizon + 1.0, ground, torch.full_like(ground, MAX_DEPTH - 1.0))
    depth = depth.expand(BATCH, H, W).clone()
    for _ in range(3):
        c0 = torch.rand(BATCH, 1, 1, device=dev, generator=gen) * (W - 60)
        r0 = horizon + torch.rand(BATCH, 1, 1, device=dev, generator=gen) * 20.0 - 15.0
        z = 5.0 + 40.0 * torch.rand(BATCH, 1, 1, device=dev, generator=gen)
        inside = (cols >= c0) & (cols < c0 + 50.0) & (rows >= r0) & (rows < r0 + 35.0)
        depth = torch.where(inside & (z < depth), z.expand_as(depth), depth)
    shade = torch.log(depth)[:, None] / math.log(MAX_DEPTH)
    tex = torch.randn(BATCH, 3, H, W, device=dev, generator=gen)
    image = torch.cat([shade, 1.0 - shade, shade * shade], 1) + 0.05 * tex
    keep = torch.rand(BATCH, H, W, device=dev, generator=gen) < GT_DENSITY
    depth_gt = torch.where(keep & (rows > horizon - 15.0), depth, torch.zeros_like(depth))
    return image, depth_gt[:, None]


def main():
    if not torch.cuda.is_available():
        print("t150_depth_silog_mask_index_nan_guard: no CUDA device, result=SKIP")
        return 1
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(150)
    model = DepthNet().to(dev)  # SYNCSPY-CLEAN: setup upload (stand-in for an ImageNet encoder)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=1e-2)
    silog_criterion = silog_loss(variance_focus=0.85)
    losses, steps = [], 0

    for epoch in range(EPOCHS):
        model.train()
        for step in range(STEPS_PER_EPOCH):
            image, depth_gt = render_scenes(gen, dev)  # SYNCSPY-CLEAN: allocator growth, first steps
            optimizer.zero_grad(set_to_none=True)
            depth_est = model(image)  # SYNCSPY-CLEAN: allocator growth in the first steps
            mask = depth_gt > 1.0
            loss = silog_criterion.forward(depth_est, depth_gt, mask.to(torch.bool))
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            optimizer.step()  # SYNCSPY-CLEAN: AdamW state allocated on the first step
            losses.append(loss.detach())
            if np.isnan(loss.cpu().item()):  # SYNCSPY-PROBLEM: blocking read every step, waits for the step
                print("NaN in loss occurred. Aborting training.")
                return 1
            steps += 1

    hist = torch.stack(losses).cpu()  # SYNCSPY-CLEAN: final read
    first, last = hist[:5].mean().item(), hist[-5:].mean().item()
    ok = (math.isfinite(first) and math.isfinite(last) and last < first
          and steps == EPOCHS * STEPS_PER_EPOCH)
    print("t150_depth_silog_mask_index_nan_guard: epochs=%d steps=%d batch=%d size=%dx%d "
          "result=%s" % (EPOCHS, steps, BATCH, H, W, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
