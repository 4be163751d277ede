#!/usr/bin/env python3
"""examples/corpus/t76_ddpm_detect_anomaly_left_on.py: corpus workload (PyTorch). DDPM training
(epsilon prediction, cosine noise schedule) of a small convolutional U-Net with sinusoidal time
embeddings on 16x16 synthetic images, with an EMA of the weights. The experiment config still
has `detect_anomaly: True` from an earlier hunt for NaNs, and `configure_debugging` turns on
`torch.autograd.set_detect_anomaly(True)`. In anomaly mode the autograd engine checks every
backward function's outputs for NaN (engine.cpp `call_function`: `isnan(output)` reduced and
read with `.item()`), a blocking device-to-host read per output of every node of the graph,
inside `loss.backward()`, every step; the documentation says the mode "should be enabled only
for debugging as the different tests will slow down your program execution". The forward pass
only records tracebacks (host work). The schedule's tables are gathered on the device.
Planted: the `loss.backward()` line of the training step (anomaly mode's NaN checks), every
step.
Clean: setup (the schedule tables, the image pool, the EMA copy), allocator growth in the first
steps, the EMA update with a Python-float weight, the final read.
"""
import copy
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

CONFIG = {"steps": 30, "batch": 64, "pool": 512, "img": 16, "timesteps": 1000, "lr": 2e-4, "ema": 0.995, "detect_anomaly": True}


def timestep_embedding(t, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, device=t.device, dtype=torch.float32) / half)
    args = t.float().unsqueeze(1) * freqs.unsqueeze(0)
    return torch.cat([torch.sin(args), torch.cos(args)], dim=1)


class ResBlock(torch.nn.Module):
    def __init__(self, cin, cout, tdim):
        super().__init__()
        self.n1 = torch.nn.GroupNorm(8, cin)
        self.c1 = torch.nn.Conv2d(cin, cout, 3, padding=1)
        self.t = torch.nn.Linear(tdim, cout)
        self.n2 = torch.nn.GroupNorm(8, cout)
        self.c2 = torch.nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = torch.nn.Conv2d(cin, cout, 1) if cin != cout else torch.nn.Identity()

    def forward(self, x, temb):
        h = self.c1(F.silu(self.n1(x))) + self.t(temb)[:, :, None, None]
        return self.c2(F.silu(self.n2(h))) + self.skip(x)


class UNet(torch.nn.Module):
    def __init__(self, ch=32, tdim=128):
        super().__init__()
        self.tdim = tdim
        self.tmlp = torch.nn.Sequential(torch.nn.Linear(tdim, tdim), torch.nn.SiLU(), torch.nn.Linear(tdim, tdim))
        self.inp = torch.nn.Conv2d(3, ch, 3, padding=1)
        self.d1 = ResBlock(ch, ch, tdim)
        self.d2 = ResBlock(ch, 2 * ch, tdim)
        self.mid = ResBlock(2 * ch, 2 * ch, tdim)
        self.u2 = ResBlock(4 * ch, ch, tdim)
        self.u1 = ResBlock(2 * ch, ch, tdim)
        self.out = torch.nn.Conv2d(ch, 3, 3, padding=1)

    def forward(self, x, t):
        temb = self.tmlp(timestep_embedding(t, self.tdim))
        h1 = self.d1(self.inp(x), temb)
        h2 = self.d2(F.avg_pool2d(h1, 2), temb)
        m = self.mid(F.avg_pool2d(h2, 2), temb)
        u2 = self.u2(torch.cat([F.interpolate(m, scale_factor=2.0, mode="nearest"), h2], dim=1), temb)
        u1 = self.u1(torch.cat([F.interpolate(u2, scale_factor=2.0, mode="nearest"), h1], dim=1), temb)
        return self.out(F.silu(u1))


def cosine_alphas_cumprod(steps, dev):
    s = 0.008
    t = torch.linspace(0, steps, steps + 1, dtype=torch.float64, device=dev)  # SYNCSPY-CLEAN: setup allocation
    f = torch.cos(((t / steps) + s) / (1 + s) * math.pi / 2) ** 2
    betas = (1 - f[1:] / f[:-1]).clamp(max=0.999)
    return torch.cumprod(1 - betas, 0).float()


def configure_debugging(cfg):
    if cfg.get("detect_anomaly"):
        torch.autograd.set_detect_anomaly(True)


def main():
    cfg = CONFIG
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(13)
    configure_debugging(cfg)
    abar = cosine_alphas_cumprod(cfg["timesteps"], dev)
    yy, xx = torch.meshgrid(torch.linspace(-1, 1, cfg["img"]), torch.linspace(-1, 1, cfg["img"]), indexing="ij")
    radius = torch.rand(cfg["pool"], 1, 1, 1, generator=torch.Generator().manual_seed(1)) * 0.6 + 0.2
    discs = ((xx ** 2 + yy ** 2).view(1, 1, cfg["img"], cfg["img"]) < radius ** 2).float()
    pool = (2 * discs.expand(-1, 3, -1, -1) - 1).contiguous().to(dev)  # SYNCSPY-CLEAN: setup upload of the image pool, once
    model = UNet().to(dev)  # SYNCSPY-CLEAN: setup upload
    ema = copy.deepcopy(model).requires_grad_(False)  # SYNCSPY-CLEAN: setup copy of the weights (device to device)
    opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation

    b = cfg["batch"]
    for step in range(cfg["steps"]):
        s = (step * b) % cfg["pool"]
        x0 = pool[s:s + b]
        t = torch.randint(0, cfg["timesteps"], (b,), device=dev, generator=gen)
        noise = torch.randn(x0.shape, device=dev, generator=gen)
        a = abar[t].view(-1, 1, 1, 1)
        xt = a.sqrt() * x0 + (1 - a).sqrt() * noise
        loss = F.mse_loss(model(xt, t), noise)  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-PROBLEM: anomaly mode reads isnan(...) of every backward node's outputs with .item() (blocking), every step
        opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
        with torch.no_grad():
            for pe, pm in zip(ema.parameters(), model.parameters()):
                pe.lerp_(pm, 1.0 - cfg["ema"])
        loss_sum += loss.detach()

    torch.autograd.set_detect_anomaly(False)
    mean_loss = loss_sum.item() / cfg["steps"]  # SYNCSPY-CLEAN: final read
    ok = math.isfinite(mean_loss) and mean_loss < 2.0
    print("t76_ddpm_detect_anomaly_left_on: steps=%d batch=%d img=%d timesteps=%d result=OK" % (cfg["steps"], b, cfg["img"], cfg["timesteps"]))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
