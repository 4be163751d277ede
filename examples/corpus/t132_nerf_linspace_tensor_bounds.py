#!/usr/bin/env python3
"""examples/corpus/t132_nerf_linspace_tensor_bounds.py: corpus workload (PyTorch).
A small neural radiance field (positional encoding, a four-layer MLP, volume rendering by alpha
compositing) fitted to 8 views of a procedural scene inside the box [-1, 1]^3. Each step draws
1,024 rays on the device, intersects them with the box, and places 64 stratified samples per
ray in bins shared by the batch, between the batch's nearest box entry and farthest exit:
`torch.linspace(lo, hi, N_SAMPLES + 1, device=...)` with `lo` and `hi` 0-dim CUDA tensors (the
results of `near.min()` and `far.max()`). linspace takes its ends as Scalars: the Tensor
overloads in aten/src/ATen/native/RangeFactories.cpp are
`at::linspace(start.item(), end.item(), steps, ...)`, two blocking reads, every step. The first
waits for the batch's rays, which are queued behind the previous step's backward pass and Adam
update; the second finds the stream empty. The bin edges need no host value at all:
`lo + (hi - lo) * unit`, with `unit = torch.linspace(0, 1, ...)` built once (t136).
Planted: the `torch.linspace(lo, hi, ...)` line in Renderer.forward, every step (one line, two
reads, the first expensive).
Clean: setup (camera rays and the ground-truth colours rendered on the GPU), allocator growth in
the first steps, the held-out view rendered after the loop (through the same planted line,
outside the step loop) and its PSNR read once, the final reads.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

VIEWS, RES, FOCAL, RADIUS, N_RAYS, N_SAMPLES, GT_SAMPLES = 9, 48, 96.0, 3.0, 1024, 64, 192
STEPS, HIDDEN, FREQS, CHUNK = 60, 128, 6, 4096
SCENE = [[0.2, 0.0, 0.1], [-0.4, 0.3, -0.3], [0.0, 2.0, 4.0]]  # sphere centres, colour phases


def box_hits(o, d):
    """Entry and exit distances of the rays o + t d through the box [-1, 1]^3."""
    inv = 1.0 / torch.where(d.abs() < 1e-9, torch.full_like(d, 1e-9), d)
    t0, t1 = (-1.0 - o) * inv, (1.0 - o) * inv
    near = torch.minimum(t0, t1).amax(dim=-1).clamp(min=0.0)
    far = torch.maximum(t0, t1).amin(dim=-1)
    return near, far


def true_field(p, scene):
    """Density and colour of the scene: two soft spheres, a colour that varies in space."""
    s1 = torch.sigmoid(40.0 * (0.55 - (p - scene[0]).norm(dim=-1)))
    s2 = torch.sigmoid(40.0 * (0.35 - (p - scene[1]).norm(dim=-1)))
    return 25.0 * (s1 + s2), 0.5 + 0.5 * torch.sin(2.0 * p + scene[2])


def composite(sigma, rgb, t, step):
    delta = torch.diff(t, dim=1, append=t[:, -1:] + step)
    alpha = 1.0 - torch.exp(-sigma * delta)
    trans = torch.cumprod(1.0 - alpha + 1e-10, dim=1)
    trans = torch.cat([torch.ones_like(trans[:, :1]), trans[:, :-1]], dim=1)
    return ((alpha * trans)[..., None] * rgb).sum(dim=1)  # SYNCSPY-CLEAN: growth, first steps


def make_rays(views, dev):
    """Cameras on a circle around the box, looking at the origin; one ray per pixel."""
    ang = torch.arange(views, device=dev) * (2 * math.pi / views)  # SYNCSPY-CLEAN: setup
    eye = torch.stack([RADIUS * ang.cos(), 0.6 * torch.ones_like(ang), RADIUS * ang.sin()], 1)
    fwd = F.normalize(-eye, dim=-1)
    up = torch.tensor([0.0, 1.0, 0.0], device=dev).expand_as(fwd)  # SYNCSPY-CLEAN: setup upload
    right = F.normalize(torch.cross(fwd, up, dim=-1), dim=-1)
    up = torch.cross(right, fwd, dim=-1)
    pix = (torch.arange(RES, device=dev) - RES / 2 + 0.5) / FOCAL  # SYNCSPY-CLEAN: setup
    py, px = torch.meshgrid(-pix, pix, indexing="ij")
    d = (px[None, ..., None] * right[:, None, None] + py[None, ..., None] * up[:, None, None]
         + fwd[:, None, None])
    d = F.normalize(d, dim=-1).reshape(-1, 3)
    o = eye[:, None, None].expand(-1, RES, RES, -1).reshape(-1, 3)
    return o.contiguous(), d


def render_truth(o, d, scene):
    near, far = box_hits(o, d)
    u = (torch.arange(GT_SAMPLES, device=o.device) + 0.5) / GT_SAMPLES  # SYNCSPY-CLEAN: setup
    t = near[:, None] + (far - near)[:, None] * u
    sigma, rgb = true_field(o[:, None] + t[..., None] * d[:, None], scene)
    step = ((far - near) / GT_SAMPLES)[:, None]
    return composite(sigma, rgb, t, step)


class TinyNeRF(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("freqs", 2.0 ** torch.arange(FREQS, dtype=torch.float32))
        self.mlp = torch.nn.Sequential(
            torch.nn.Linear(3 + 6 * FREQS, HIDDEN), torch.nn.ReLU(),
            torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.ReLU(),
            torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, 4))

    def forward(self, p):
        x = (p[..., None] * self.freqs).flatten(-2)  # SYNCSPY-CLEAN: large temporary, first steps
        out = self.mlp(torch.cat([p, x.sin(), x.cos()], dim=-1))  # SYNCSPY-CLEAN: first steps
        return F.softplus(out[..., 0]), torch.sigmoid(out[..., 1:])


class Renderer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.field = TinyNeRF()

    def forward(self, o, d, gen):
        near, far = box_hits(o, d)
        lo, hi = near.min(), far.max()
        edges = torch.linspace(lo, hi, N_SAMPLES + 1, device=o.device)  # SYNCSPY-PROBLEM: .item()x2
        jitter = torch.rand(o.shape[0], N_SAMPLES, device=o.device, generator=gen)
        t = edges[:-1] + (edges[1:] - edges[:-1]) * jitter
        sigma, rgb = self.field(o[:, None] + t[..., None] * d[:, None])
        return composite(sigma, rgb, t, (hi - lo) / N_SAMPLES)


def main():
    if not torch.cuda.is_available():
        print("t132_nerf_linspace_tensor_bounds: no CUDA device, result=SKIP")
        return 1
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(132)
    rays_o, rays_d = make_rays(VIEWS, dev)
    scene = torch.tensor(SCENE, device=dev)  # SYNCSPY-CLEAN: setup upload, once
    with torch.no_grad():
        colors = torch.cat([render_truth(o, d, scene) for o, d in  # SYNCSPY-CLEAN: setup
                            zip(rays_o.split(CHUNK), rays_d.split(CHUNK))])
    per_view = RES * RES
    train_rays = (VIEWS - 1) * per_view
    renderer = Renderer().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(renderer.parameters(), lr=3e-3)
    losses = []

    for step in range(STEPS):
        idx = torch.randint(0, train_rays, (N_RAYS,), device=dev, generator=gen)
        pred = renderer(rays_o[idx], rays_d[idx], gen)  # SYNCSPY-CLEAN: growth, first steps
        loss = F.mse_loss(pred, colors[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
        losses.append(loss.detach())

    with torch.no_grad():
        o, d = rays_o[train_rays:], rays_d[train_rays:]
        view = torch.cat([renderer(oc, dc, gen) for oc, dc in zip(o.split(CHUNK), d.split(CHUNK))])
        mse = F.mse_loss(view, colors[train_rays:])
    psnr = -10.0 * math.log10(max(mse.item(), 1e-12))  # SYNCSPY-CLEAN: teardown, read once
    hist = torch.stack(losses).cpu()  # SYNCSPY-CLEAN: final read
    first, last = hist[:5].mean().item(), hist[-5:].mean().item()
    ok = math.isfinite(first) and math.isfinite(last) and last < first and math.isfinite(psnr)
    print("t132_nerf_linspace_tensor_bounds: steps=%d rays=%d samples=%d views=%d result=%s"
          % (STEPS, N_RAYS, N_SAMPLES, VIEWS, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
