#!/usr/bin/env python3
"""examples/corpus/t138_clean_ddpm_cuda_generator_noise.py: corpus workload (PyTorch), CLEAN.
The diffusion trainer of t135 (DDPM, epsilon prediction, a small U-Net on 32 x 32 images, AdamW,
an exponential moving average of the weights, the noise drawn through diffusers' `randn_tensor`
pattern) with a seeded CUDA generator, `torch.Generator(device="cuda")` (the fix of t135): the
noise is drawn on the GPU with the Philox generator, so `randn_tensor`'s `noise.to(device)`
returns the tensor itself (`Tensor.to` to the device it is on does not copy), and the
timesteps come from `torch.randint(..., generator=gen, device=dev)`. Seeded runs stay
reproducible on one kind of GPU; nothing in the step loop waits for the GPU or copies from the
host.
Clean: all of it; the marked lines are setup (images generated on the GPU, the schedule built on
the device, the model uploaded, the EMA copy), the `.to(device)` that is now a no-op, allocator
growth in the first steps, the final reads.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

STEPS, BATCH, IMAGES, RES, BASE, T_STEPS, EMA_DECAY = 60, 64, 1024, 32, 64, 1000, 0.99


def randn_tensor(shape, generator, device):
    """Noise from the caller's generator, drawn on its device, then moved (as in diffusers)."""
    noise = torch.randn(shape, generator=generator, device=generator.device)
    return noise.to(device)  # SYNCSPY-CLEAN: already on the device: no copy


def make_images(n, dev, gen):
    """Soft coloured discs on a gradient background, in [-1, 1]."""
    g = torch.linspace(-1.0, 1.0, RES, device=dev)  # SYNCSPY-CLEAN: setup
    yy, xx = torch.meshgrid(g, g, indexing="ij")
    centre = 1.2 * torch.rand(n, 2, 1, 1, device=dev, generator=gen) - 0.6  # SYNCSPY-CLEAN: setup
    radius = 0.2 + 0.3 * torch.rand(n, 1, 1, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup
    colour = 2.0 * torch.rand(n, 3, 1, 1, device=dev, generator=gen) - 1.0  # SYNCSPY-CLEAN: setup
    back = 2.0 * torch.rand(n, 3, 1, 1, device=dev, generator=gen) - 1.0  # SYNCSPY-CLEAN: setup
    dist = ((xx - centre[:, 0]) ** 2 + (yy - centre[:, 1]) ** 2).sqrt()
    disc = torch.sigmoid((radius - dist) * 30.0)[:, None]
    return (disc * colour + (1 - disc) * back * (0.5 + 0.25 * xx)).clamp(-1.0, 1.0)


class ResBlock(torch.nn.Module):
    def __init__(self, cin, cout, temb):
        super().__init__()
        self.n1, self.c1 = torch.nn.GroupNorm(8, cin), torch.nn.Conv2d(cin, cout, 3, padding=1)
        self.t = torch.nn.Linear(temb, cout)
        self.n2, self.c2 = torch.nn.GroupNorm(8, cout), torch.nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = torch.nn.Conv2d(cin, cout, 1) if cin != cout else torch.nn.Identity()

    def forward(self, x, temb):
        h = self.c1(F.silu(self.n1(x))) + self.t(temb)[:, :, None, None]
        return self.skip(x) + self.c2(F.silu(self.n2(h)))


class TinyUNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        temb = 4 * BASE
        self.register_buffer("freqs", torch.exp(-math.log(10000.0) * torch.arange(BASE // 2)
                                                / (BASE // 2)))
        self.temb = torch.nn.Sequential(torch.nn.Linear(BASE, temb), torch.nn.SiLU(),
                                        torch.nn.Linear(temb, temb))
        self.inc = torch.nn.Conv2d(3, BASE, 3, padding=1)
        self.down = ResBlock(BASE, 2 * BASE, temb)
        self.mid = ResBlock(2 * BASE, 2 * BASE, temb)
        self.up = ResBlock(3 * BASE, BASE, temb)
        self.out = torch.nn.Sequential(torch.nn.GroupNorm(8, BASE), torch.nn.SiLU(),
                                       torch.nn.Conv2d(BASE, 3, 3, padding=1))

    def forward(self, x, t):
        arg = t.float()[:, None] * self.freqs
        temb = self.temb(torch.cat([arg.sin(), arg.cos()], dim=-1))
        h0 = self.inc(x)  # SYNCSPY-CLEAN: allocator growth in the first steps
        h1 = self.down(F.avg_pool2d(h0, 2), temb)
        h1 = self.mid(h1, temb)
        up = F.interpolate(h1, scale_factor=2.0, mode="nearest")
        h = self.up(torch.cat([up, h0], dim=1), temb)  # SYNCSPY-CLEAN: growth, first steps
        return self.out(h)


def main():
    if not torch.cuda.is_available():
        print("t138_clean_ddpm_cuda_generator_noise: no CUDA device, result=SKIP")
        return 1
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    data_gen = torch.Generator(device=dev).manual_seed(138)
    noise_gen = torch.Generator(device=dev).manual_seed(1380)
    images = make_images(IMAGES, dev, data_gen)
    perm = torch.randperm(IMAGES, device=dev, generator=data_gen)  # SYNCSPY-CLEAN: setup
    betas = torch.linspace(1e-4, 0.02, T_STEPS, device=dev)  # SYNCSPY-CLEAN: setup, on the device
    abar = torch.cumprod(1.0 - betas, dim=0)
    sqrt_ab, sqrt_1mab = abar.sqrt(), (1.0 - abar).sqrt()
    model = TinyUNet().to(dev)  # SYNCSPY-CLEAN: setup upload
    ema = [p.detach().clone() for p in model.parameters()]  # SYNCSPY-CLEAN: setup allocation
    opt = torch.optim.AdamW(model.parameters(), lr=2e-4, weight_decay=0.0)
    losses = []

    for step in range(STEPS):
        s = (step * BATCH) % IMAGES
        x0 = images[perm[s:s + BATCH]]
        noise = randn_tensor(x0.shape, noise_gen, dev)
        t = torch.randint(0, T_STEPS, (BATCH,), generator=noise_gen, device=dev)
        xt = sqrt_ab[t][:, None, None, None] * x0 + sqrt_1mab[t][:, None, None, None] * noise
        loss = F.mse_loss(model(xt, t), noise)  # SYNCSPY-CLEAN: growth in the first steps
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: AdamW state allocated on the first step
        with torch.no_grad():
            params = [p.detach() for p in model.parameters()]
            torch._foreach_mul_(ema, EMA_DECAY)
            torch._foreach_add_(ema, params, alpha=1.0 - EMA_DECAY)
        losses.append(loss.detach())

    hist = torch.stack(losses).cpu()  # SYNCSPY-CLEAN: final read
    peak = torch.stack([e.abs().max() for e in ema])
    ema_ok = bool(peak.isfinite().all())  # SYNCSPY-CLEAN: teardown, read once
    first, last = hist[:5].mean().item(), hist[-5:].mean().item()
    ok = math.isfinite(first) and math.isfinite(last) and last < first and ema_ok
    print("t138_clean_ddpm_cuda_generator_noise: steps=%d batch=%d res=%d timesteps=%d result=%s"
          % (STEPS, BATCH, RES, T_STEPS, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
