#!/usr/bin/env python3
"""examples/corpus/t143_tabular_ddpm_sampler_device_timesteps.py: corpus workload (PyTorch).
A TabDDPM-style generator of synthetic tabular records (16 standardized numeric features): an
MLP denoiser (sinusoidal time embedding, three residual blocks of width 768) is trained to
predict the noise for 200 steps, then 16,384 records are sampled with 50 DDPM steps of a
hand-written scheduler modelled on diffusers' `DDPMScheduler`: the schedule's `alphas_cumprod`
kept in CPU memory, `set_timesteps(50, device=dev)` putting the timesteps on the GPU, and the
loop `for t in scheduler.timesteps:` handing `step()` a 0-dim CUDA tensor. In `step()`,
`self.alphas_cumprod[t]` indexes with a 0-dim integer tensor, which the indexing code turns into
a `select` at `tensor.item<int64_t>()` (`handleDimInMultiDimIndexing`,
aten/src/ATen/TensorIndexing.h): a blocking read of `t`. `... if prev_t >= 0 else ...` and
`if t > 0:` call `Tensor.__bool__` (`is_nonzero`, i.e. `.item()`) on CUDA tensors: the
Performance Tuning Guide lists "python control flow which depends on results of operations
performed on CUDA tensors" among the CPU-GPU synchronizations to avoid. The first read comes
right after the denoiser's forward pass was queued, so the host waits for all of it; the GPU
then idles while the host computes the coefficients and queues the update and the next forward
pass. The later reads find the stream almost empty and cost their own round trips. The
timesteps are known on the host from the start (a Python range would do).
Planted: in `DDPMScheduler.step`, `alpha_prod_t = self.alphas_cumprod[t]` (expensive), the
`alphas_cumprod[prev_t] if prev_t >= 0` line and `if t > 0:` (cheap), every sampling step (one
problem, three lines).
Clean: setup (the training table uploaded once from pinned memory, the schedule copied to the
GPU once for training), the training loop (noise levels drawn on the GPU, losses kept there),
allocator growth in the first steps, the training losses and the samples read once after the
loops.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

FEATURES, CLUSTERS, RADIUS, SPREAD, ROWS = 16, 6, 3.0, 0.3, 65536
T, INFERENCE_STEPS, HIDDEN, TEMB, TRAIN_STEPS, TRAIN_BATCH, N_SAMPLES = 1000, 50, 768, 128, 200, 4096, 16384


class DDPMScheduler:
    """Linear beta schedule, epsilon prediction, 'fixed_small' variance, x0 clipping."""

    def __init__(self, num_train_timesteps=T, clip=5.0):
        betas = torch.linspace(1e-4, 0.02, num_train_timesteps, dtype=torch.float32)
        self.alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)
        self.one = torch.tensor(1.0)
        self.clip, self.num_train_timesteps = clip, num_train_timesteps

    def set_timesteps(self, n, device):
        self.step_ratio = self.num_train_timesteps // n
        steps = torch.arange(n - 1, -1, -1) * self.step_ratio
        self.timesteps = steps.to(device)  # SYNCSPY-CLEAN: setup upload, once

    def step(self, eps, t, sample, generator):
        prev_t = t - self.step_ratio
        alpha_prod_t = self.alphas_cumprod[t]  # SYNCSPY-PROBLEM: 0-dim CUDA index: t.item(), waits for the denoiser
        alpha_prod_prev = self.alphas_cumprod[prev_t] if prev_t >= 0 else self.one  # SYNCSPY-PROBLEM: bool() and item()
        beta_prod_t, beta_prod_prev = 1.0 - alpha_prod_t, 1.0 - alpha_prod_prev
        alpha_t = alpha_prod_t / alpha_prod_prev
        x0 = ((sample - beta_prod_t.sqrt() * eps) / alpha_prod_t.sqrt()).clamp(-self.clip, self.clip)
        prev = (alpha_prod_prev.sqrt() * (1.0 - alpha_t) / beta_prod_t) * x0 \
            + (alpha_t.sqrt() * beta_prod_prev / beta_prod_t) * sample
        if t > 0:  # SYNCSPY-PROBLEM: Python branch on a CUDA tensor: bool() is .item()
            variance = (beta_prod_prev / beta_prod_t * (1.0 - alpha_t)).clamp(min=1e-20)
            noise = torch.randn(sample.shape, generator=generator, device=sample.device)
            prev = prev + variance.sqrt() * noise
        return prev


def timestep_embedding(t, dim):
    half = dim // 2
    freqs = torch.exp(-math.log(10000.0) * torch.arange(half, device=t.device) / half)
    arg = t.float()[:, None] * freqs[None, :]
    return torch.cat([arg.sin(), arg.cos()], dim=-1)


class Denoiser(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = torch.nn.Linear(FEATURES, HIDDEN)
        self.temb = torch.nn.Sequential(torch.nn.Linear(TEMB, HIDDEN), torch.nn.SiLU(),
                                        torch.nn.Linear(HIDDEN, HIDDEN))
        self.blocks = torch.nn.ModuleList(
            torch.nn.Sequential(torch.nn.LayerNorm(HIDDEN), torch.nn.SiLU(),
                                torch.nn.Linear(HIDDEN, HIDDEN)) for _ in range(3))
        self.out = torch.nn.Linear(HIDDEN, FEATURES)

    def forward(self, x, t):
        h = self.inp(x) + self.temb(timestep_embedding(t, TEMB))  # SYNCSPY-CLEAN: growth, first steps
        for blk in self.blocks:
            h = h + blk(h)
        return self.out(F.silu(h))


def make_table(gen):
    centres = torch.randn(CLUSTERS, FEATURES, generator=gen)
    centres = RADIUS * centres / centres.norm(dim=1, keepdim=True)
    which = torch.randint(0, CLUSTERS, (ROWS,), generator=gen)
    return centres[which] + SPREAD * torch.randn(ROWS, FEATURES, generator=gen), centres


def main():
    if not torch.cuda.is_available():
        print("t143_tabular_ddpm_sampler_device_timesteps: no CUDA device, result=SKIP")
        return 1
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    table, centres = make_table(torch.Generator().manual_seed(143))
    data = table.pin_memory().to(dev, non_blocking=True)  # SYNCSPY-CLEAN: setup, pinned, once
    gen = torch.Generator(device=dev).manual_seed(143)
    scheduler = DDPMScheduler()
    ab = scheduler.alphas_cumprod.to(dev)  # SYNCSPY-CLEAN: setup upload, once
    model = Denoiser().to(dev)  # SYNCSPY-CLEAN: setup upload (stand-in for a checkpoint)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
    losses = []
    for _ in range(TRAIN_STEPS):
        idx = torch.randint(0, ROWS, (TRAIN_BATCH,), device=dev, generator=gen)
        t = torch.randint(0, T, (TRAIN_BATCH,), device=dev, generator=gen)
        eps = torch.randn(TRAIN_BATCH, FEATURES, device=dev, generator=gen)
        a = ab[t][:, None]
        x_t = a.sqrt() * data[idx] + (1.0 - a).sqrt() * eps
        loss = F.mse_loss(model(x_t, t), eps)  # SYNCSPY-CLEAN: allocator growth, first steps
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: AdamW state allocated on the first step
        losses.append(loss.detach())

    model.eval()
    scheduler.set_timesteps(INFERENCE_STEPS, device=dev)  # SYNCSPY-CLEAN: setup upload, once
    x = torch.randn(N_SAMPLES, FEATURES, device=dev, generator=gen)
    with torch.inference_mode():
        for t in scheduler.timesteps:
            eps = model(x, t.expand(N_SAMPLES))  # SYNCSPY-CLEAN: allocator growth, first step
            x = scheduler.step(eps, t, x, gen)

    hist = torch.stack(losses).cpu()  # SYNCSPY-CLEAN: final read
    samples = x.cpu()  # SYNCSPY-CLEAN: final read
    dist = torch.cdist(samples, centres)
    near, which = dist.min(dim=1)
    share = torch.bincount(which, minlength=CLUSTERS).float() / N_SAMPLES
    frac = (near < 2.0).float().mean().item()
    first, last = hist[:10].mean().item(), hist[-10:].mean().item()
    ok = (math.isfinite(first) and math.isfinite(last) and last < first
          and bool(torch.isfinite(samples).all()) and frac > 0.6
          and share.min().item() > 0.25 / CLUSTERS)
    print("t143_tabular_ddpm_sampler_device_timesteps: train_steps=%d sample_steps=%d samples=%d "
          "features=%d result=%s" % (TRAIN_STEPS, INFERENCE_STEPS, N_SAMPLES, FEATURES,
                                     "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
