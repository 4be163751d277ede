#!/usr/bin/env python3
"""examples/corpus/t89_pointcloud_pillar_backward_any.py: corpus workload (PyTorch). Shape
classification of point clouds (eight synthetic shape classes, 1024 points each, rotated,
scaled and jittered on the GPU) with a PointPillars-style network: a per-point MLP, a custom
autograd Function `PillarScatterMean` that averages the point features of each bird's-eye-view
pillar into a dense 32x32 grid (`index_add_` forward, `index_select` backward), and a 2-D CNN
on the grid. The Function's backward starts with a shortcut for scenes whose pillars receive no
gradient, `if not grad_grid.any():`. `Tensor.__bool__` of a CUDA tensor is `.item()`: a
blocking device-to-host read inside the backward pass, every step. CUDA backward functions run
on the autograd engine's device thread, so that thread waits for the CNN's backward kernels and
the GPU then idles while it queues the point MLP's backward; the zero-gradient case never
happens in training, and the general path handles it anyway.
Planted: the `if not grad_grid.any():` line in PillarScatterMean.backward, every step.
Clean: setup (the point clouds generated on the GPU, the model upload), the per-step counts
with `index_add_` (no `bincount`), the grid and gradient temporaries and allocator growth in
the first steps, the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

STEPS, BATCH, POINTS, POOL, GRID, CLASSES, FEAT = 40, 64, 1024, 1024, 32, 8, 64
EXTENT = 1.2


class PillarScatterMean(torch.autograd.Function):
    """Mean of the point features in each pillar, written into a dense (cells, C) grid."""

    @staticmethod
    def forward(ctx, feats, cell, counts, n_cells):
        grid = feats.new_zeros(n_cells, feats.shape[1]).index_add_(0, cell, feats)  # SYNCSPY-CLEAN: the grid temporary, allocator growth in the first steps
        grid /= counts.clamp(min=1.0).unsqueeze(1)
        ctx.save_for_backward(cell, counts)
        return grid

    @staticmethod
    def backward(ctx, grad_grid):
        cell, counts = ctx.saved_tensors
        if not grad_grid.any():  # SYNCSPY-PROBLEM: Tensor.__bool__ is .item(): a blocking read in the autograd engine's device thread, every backward pass
            return grad_grid.new_zeros(cell.shape[0], grad_grid.shape[1]), None, None, None
        grad_feats = (grad_grid / counts.clamp(min=1.0).unsqueeze(1)).index_select(0, cell)  # SYNCSPY-CLEAN: the gradient temporary, allocator growth in the first steps
        return grad_feats, None, None, None


class PillarNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.point_mlp = torch.nn.Sequential(torch.nn.Linear(6, FEAT), torch.nn.ReLU(), torch.nn.Linear(FEAT, FEAT), torch.nn.ReLU())
        self.bev = torch.nn.Sequential(
            torch.nn.Conv2d(FEAT, 64, 3, padding=1, bias=False), torch.nn.BatchNorm2d(64), torch.nn.ReLU(),
            torch.nn.Conv2d(64, 128, 3, stride=2, padding=1, bias=False), torch.nn.BatchNorm2d(128), torch.nn.ReLU(),
            torch.nn.Conv2d(128, 128, 3, stride=2, padding=1, bias=False), torch.nn.BatchNorm2d(128), torch.nn.ReLU())
        self.head = torch.nn.Linear(128, CLASSES)

    def forward(self, pts, cell, counts, centers):
        b, n, _ = pts.shape
        local = pts[..., :2] - centers
        feats = self.point_mlp(torch.cat([pts, local, pts[..., 2:] ** 2], dim=-1)).reshape(b * n, FEAT)
        grid = PillarScatterMean.apply(feats, cell, counts, b * GRID * GRID)
        grid = grid.view(b, GRID, GRID, FEAT).permute(0, 3, 1, 2)
        return self.head(self.bev(grid).mean(dim=(2, 3)))


def voxelize(pts):
    """Pillar index of every point (flattened over the batch), points per pillar, pillar centres."""
    b, n, _ = pts.shape
    ij = ((pts[..., :2] + EXTENT) / (2 * EXTENT) * GRID).long().clamp(0, GRID - 1)
    offset = (torch.arange(b, device=pts.device) * GRID * GRID).view(b, 1)
    cell = (offset + ij[..., 1] * GRID + ij[..., 0]).reshape(-1)
    counts = torch.zeros(b * GRID * GRID, device=pts.device).index_add_(0, cell, torch.ones_like(cell, dtype=torch.float32))
    centers = (ij.float() + 0.5) / GRID * (2 * EXTENT) - EXTENT
    return cell, counts, centers


def make_clouds(dev, gen):
    """Eight parametric surfaces; each cloud gets a class, a z rotation, a scale and noise."""
    label = torch.randint(0, CLASSES, (POOL,), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    u = torch.rand(POOL, POINTS, device=dev, generator=gen) * 2 * math.pi  # SYNCSPY-CLEAN: setup allocation
    v = torch.rand(POOL, POINTS, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    w = torch.rand(POOL, POINTS, device=dev, generator=gen) * 2 - 1  # SYNCSPY-CLEAN: setup allocation
    r = torch.sqrt(1 - w ** 2)
    ring = 0.7 + 0.3 * torch.cos(2 * math.pi * v)
    sphere = torch.stack([r * torch.cos(u), r * torch.sin(u), w], -1)  # SYNCSPY-CLEAN: setup allocation
    plates = torch.stack([w, 2 * v - 1, torch.sign(torch.sin(3 * u))], -1)  # SYNCSPY-CLEAN: setup allocation
    cylinder = torch.stack([torch.cos(u), torch.sin(u), w], -1)  # SYNCSPY-CLEAN: setup allocation
    cone = torch.stack([v * torch.cos(u), v * torch.sin(u), 1 - 2 * v], -1)  # SYNCSPY-CLEAN: setup allocation
    torus = torch.stack([ring * torch.cos(u), ring * torch.sin(u), 0.3 * torch.sin(2 * math.pi * v)], -1)  # SYNCSPY-CLEAN: setup allocation
    sheet = torch.stack([w, 2 * v - 1, 0.2 * torch.sin(3 * w)], -1)  # SYNCSPY-CLEAN: setup allocation
    helix = torch.stack([0.6 * torch.cos(3 * u), 0.6 * torch.sin(3 * u), u / math.pi - 1], -1)  # SYNCSPY-CLEAN: setup allocation
    blobs = torch.stack([0.5 * r * torch.cos(u) + torch.sign(w) * 0.5, 0.5 * r * torch.sin(u), 0.5 * w], -1)  # SYNCSPY-CLEAN: setup allocation
    shapes = torch.stack([sphere, plates, cylinder, cone, torus, sheet, helix, blobs], dim=1)  # SYNCSPY-CLEAN: setup allocation
    pts = shapes[torch.arange(POOL, device=dev), label]  # SYNCSPY-CLEAN: setup allocation
    ang = torch.rand(POOL, 1, device=dev, generator=gen) * 2 * math.pi  # SYNCSPY-CLEAN: setup allocation
    c, s = torch.cos(ang), torch.sin(ang)
    x, y = c * pts[..., 0] - s * pts[..., 1], s * pts[..., 0] + c * pts[..., 1]
    scale = 0.8 + 0.3 * torch.rand(POOL, 1, 1, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    pts = scale * torch.stack([x, y, pts[..., 2]], -1) + 0.02 * torch.randn(POOL, POINTS, 3, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    return pts, label


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(89)
    clouds, labels = make_clouds(dev, gen)
    model = PillarNet().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
    correct = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation

    for step in range(STEPS):
        s = (step * BATCH) % POOL
        pts, y = clouds[s:s + BATCH], labels[s:s + BATCH]
        cell, counts, centers = voxelize(pts)
        logits = model(pts, cell, counts, centers)  # SYNCSPY-CLEAN: allocator growth in the first steps
        loss = F.cross_entropy(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
        loss_sum += loss.detach()
        correct += (logits.argmax(dim=1) == y).sum()

    mean_loss, acc = torch.stack([loss_sum / STEPS, correct / (STEPS * BATCH)]).tolist()  # SYNCSPY-CLEAN: final read
    ok = math.isfinite(mean_loss) and 0.0 <= acc <= 1.0 and tuple(logits.shape) == (BATCH, CLASSES)
    print("t89_pointcloud_pillar_backward_any: steps=%d batch=%d points=%d grid=%d classes=%d result=%s" % (STEPS, BATCH, POINTS, GRID, CLASSES, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
