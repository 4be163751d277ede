#!/usr/bin/env python3
"""examples/corpus/t69_clean_ddim_host_schedule.py: corpus workload (PyTorch), CLEAN.
Class-conditional DDIM sampling with classifier-free guidance in a small latent space. The
scheduler's tables (betas, cumulative alphas) and the chosen timesteps are computed once on
the host as Python floats and ints, so every per-step coefficient (`sqrt(alpha_bar)`, the
timestep of the sinusoidal embedding) is host arithmetic on Python numbers,
and the device only ever receives them as scalar arguments of kernels: no tensor is read
back inside the loop. The conditional and unconditional branches run as one doubled batch,
the guidance mix and the DDIM update are tensor ops, the latents are decoded once at the end,
and the result is read once.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

TRAIN_T, STEPS, BATCH, LATENT, HIDDEN, CLASSES, GUIDANCE, EMB = 1000, 50, 64, 64, 512, 10, 3.0, 128


class HostSchedule:
    """Linear-beta DDPM schedule, kept as Python numbers."""

    def __init__(self):
        betas = [1e-4 + (2e-2 - 1e-4) * i / (TRAIN_T - 1) for i in range(TRAIN_T)]
        self.alpha_bar, acc = [], 1.0
        for b in betas:
            acc *= 1.0 - b
            self.alpha_bar.append(acc)
        stride = TRAIN_T // STEPS
        self.timesteps = list(range(TRAIN_T - 1, -1, -stride))[:STEPS]

    def pair(self, i):
        t = self.timesteps[i]
        prev = self.timesteps[i + 1] if i + 1 < len(self.timesteps) else -1
        return t, self.alpha_bar[t], (self.alpha_bar[prev] if prev >= 0 else 1.0)


class Denoiser(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.class_emb = torch.nn.Embedding(CLASSES + 1, EMB)  # the last row is the null class
        self.register_buffer("freqs", torch.exp(-math.log(10000.0) * torch.arange(EMB // 2) / (EMB // 2)))
        self.inp = torch.nn.Linear(LATENT, HIDDEN)
        self.cond = torch.nn.Linear(2 * EMB, HIDDEN)
        self.blocks = torch.nn.ModuleList([torch.nn.Sequential(torch.nn.LayerNorm(HIDDEN), torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.SiLU(), torch.nn.Linear(HIDDEN, HIDDEN)) for _ in range(4)])
        self.out = torch.nn.Linear(HIDDEN, LATENT)

    def time_embedding(self, t, batch):
        angles = float(t) * self.freqs
        return torch.cat([angles.sin(), angles.cos()]).expand(batch, -1)

    def forward(self, z, t, labels):
        c = torch.cat([self.time_embedding(t, z.shape[0]), self.class_emb(labels)], dim=-1)
        h = self.inp(z) + self.cond(c)
        for block in self.blocks:
            h = h + block(h)
        return self.out(h)


class DDIMSampler:
    def __init__(self, model, schedule):
        self.model, self.schedule = model, schedule

    @torch.no_grad()
    def sample(self, z, labels):
        null = torch.full_like(labels, CLASSES)
        both = torch.cat([labels, null])
        for i in range(len(self.schedule.timesteps)):
            t, ab, ab_prev = self.schedule.pair(i)
            eps_cond, eps_uncond = self.model(torch.cat([z, z]), t, both).chunk(2)  # SYNCSPY-CLEAN: allocator growth in the first steps
            eps = eps_uncond + GUIDANCE * (eps_cond - eps_uncond)
            x0 = (z - math.sqrt(1.0 - ab) * eps) / math.sqrt(ab)
            z = math.sqrt(ab_prev) * x0.clamp(-4.0, 4.0) + math.sqrt(1.0 - ab_prev) * eps
        return z


class Decoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(LATENT, 256), torch.nn.GELU(), torch.nn.Linear(256, 3 * 16 * 16))

    def forward(self, z):
        return torch.tanh(self.net(z)).view(-1, 3, 16, 16)


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    model = Denoiser().to(dev).eval()  # SYNCSPY-CLEAN: setup upload
    decoder = Decoder().to(dev).eval()  # SYNCSPY-CLEAN: setup upload
    gen = torch.Generator(device=dev).manual_seed(4)
    z = torch.randn(BATCH, LATENT, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    labels = torch.arange(BATCH, device=dev) % CLASSES  # SYNCSPY-CLEAN: setup allocation
    sampler = DDIMSampler(model, HostSchedule())

    latents = sampler.sample(z, labels)
    with torch.no_grad():
        images = decoder(F.layer_norm(latents, (LATENT,)))  # SYNCSPY-CLEAN: decoded once after the loop
    stats = torch.stack([images.abs().max(), torch.isfinite(latents).all().float()]).tolist()  # SYNCSPY-CLEAN: final read
    ok = stats[0] <= 1.0 and stats[1] == 1.0
    print("t69_clean_ddim_host_schedule: steps=%d batch=%d guidance=%.1f result=OK" % (STEPS, BATCH, GUIDANCE))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
