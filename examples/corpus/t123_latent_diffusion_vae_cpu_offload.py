#!/usr/bin/env python3
"""examples/corpus/t123_latent_diffusion_vae_cpu_offload.py: corpus workload (PyTorch).
Latent diffusion training: a frozen convolutional VAE encoder (128x128 RGB to 4x16x16 latents, 6.3M
parameters, 25 MB) and a small time-conditioned U-Net trained with the DDPM noise-prediction loss,
batches of 32 images uploaded asynchronously from a pinned host store. The helper `encode_latents`
comes from a recipe written for 8 GB cards: it moves the VAE to the GPU, encodes the batch, and
moves the VAE back to the CPU "to leave the memory to the denoiser". `Module.to` converts every
parameter with `Tensor.to`: the 14 parameter tensors are copied from pageable memory to the device
one by one (a non-pinned host-to-device copy is `memcpy_and_sync`, a stream synchronization each),
the first behind the previous step's backward pass and update, and after the encode the 14 are
copied back into new pageable CPU tensors, each a blocking device-to-host copy, the first behind the
whole encode. Every step moves 50 MB through pageable memory and waits 28 times; on an 80 GB card
the VAE fits beside the U-Net many times over (t129 keeps it there).
Planted: the `vae.to(images.device)` and `vae.to("cpu")` lines in encode_latents, every step (one
problem, two lines).
Clean: setup (the images generated on the GPU and downloaded once into a pinned host store, the
noise schedule), the batches' asynchronous uploads from pinned memory, the encode itself and
allocator growth in the first steps, the final reads and the latents checked against the
CPU-resident VAE after the loop.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

EPOCHS, STEPS_PER_EPOCH, BATCH, IMAGES, SIZE, T_STEPS, LATENT_SCALE = 2, 20, 32, 1024, 128, 1000, 0.18215


class VAEEncoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Conv2d(3, 64, 3, padding=1), torch.nn.SiLU(),
            torch.nn.Conv2d(64, 128, 3, stride=2, padding=1), torch.nn.SiLU(),
            torch.nn.Conv2d(128, 256, 3, stride=2, padding=1), torch.nn.SiLU(),
            torch.nn.Conv2d(256, 512, 3, stride=2, padding=1), torch.nn.SiLU(),
            torch.nn.Conv2d(512, 512, 3, padding=1), torch.nn.SiLU(),
            torch.nn.Conv2d(512, 512, 3, padding=1), torch.nn.SiLU(),
            torch.nn.Conv2d(512, 8, 3, padding=1))

    def forward(self, x):
        return self.net(x)[:, :4]  # the posterior mean


def encode_latents(vae, images):
    vae.to(images.device)  # SYNCSPY-PROBLEM: 14 pageable host-to-device parameter copies, each memcpy_and_sync, every step
    with torch.no_grad():
        z = vae(images) * LATENT_SCALE  # SYNCSPY-CLEAN: the encode (large temporaries, allocator growth in the first steps)
    vae.to("cpu")  # SYNCSPY-PROBLEM: 14 blocking device-to-host copies into new pageable tensors, the first behind the encode, every step
    return z


class ResBlock(torch.nn.Module):
    def __init__(self, ch, temb):
        super().__init__()
        self.n1, self.c1 = torch.nn.GroupNorm(8, ch), torch.nn.Conv2d(ch, ch, 3, padding=1)
        self.n2, self.c2 = torch.nn.GroupNorm(8, ch), torch.nn.Conv2d(ch, ch, 3, padding=1)
        self.t = torch.nn.Linear(temb, ch)

    def forward(self, x, e):
        h = self.c1(F.silu(self.n1(x))) + self.t(e)[:, :, None, None]
        return x + self.c2(F.silu(self.n2(h)))


class LatentUNet(torch.nn.Module):
    def __init__(self, ch=(128, 256, 256), temb=256):
        super().__init__()
        self.temb = temb
        self.emb = torch.nn.Sequential(torch.nn.Linear(temb, temb), torch.nn.SiLU(), torch.nn.Linear(temb, temb))
        self.inp = torch.nn.Conv2d(4, ch[0], 3, padding=1)
        self.e1, self.d1 = ResBlock(ch[0], temb), torch.nn.Conv2d(ch[0], ch[1], 3, stride=2, padding=1)
        self.e2, self.d2 = ResBlock(ch[1], temb), torch.nn.Conv2d(ch[1], ch[2], 3, stride=2, padding=1)
        self.mid = ResBlock(ch[2], temb)
        self.u2, self.r2 = torch.nn.Conv2d(ch[2] + ch[1], ch[1], 3, padding=1), ResBlock(ch[1], temb)
        self.u1, self.r1 = torch.nn.Conv2d(ch[1] + ch[0], ch[0], 3, padding=1), ResBlock(ch[0], temb)
        self.out = torch.nn.Conv2d(ch[0], 4, 3, padding=1)
        self.register_buffer("freqs", torch.exp(-math.log(10000.0) * torch.arange(temb // 2) / (temb // 2)), persistent=False)

    def forward(self, z, t):
        ang = t[:, None].float() * self.freqs[None]
        e = self.emb(torch.cat([ang.sin(), ang.cos()], dim=1))
        h1 = self.e1(self.inp(z), e)
        h2 = self.e2(self.d1(h1), e)
        m = self.mid(self.d2(h2), e)
        u2 = self.r2(self.u2(torch.cat([F.interpolate(m, scale_factor=2.0), h2], 1)), e)
        u1 = self.r1(self.u1(torch.cat([F.interpolate(u2, scale_factor=2.0), h1], 1)), e)
        return self.out(u1)


def make_images(n, dev, gen):
    """Coloured discs on colour gradients."""
    g = torch.linspace(-1.0, 1.0, SIZE, device=dev)  # SYNCSPY-CLEAN: setup allocation
    yy, xx = torch.meshgrid(g, g, indexing="ij")
    base = torch.rand(n, 3, 1, 1, device=dev, generator=gen) + 0.3 * torch.rand(n, 3, 1, 1, device=dev, generator=gen) * xx  # SYNCSPY-CLEAN: setup, a large temporary
    c = 1.2 * torch.rand(n, 2, 1, 1, device=dev, generator=gen) - 0.6  # SYNCSPY-CLEAN: setup allocation
    r = 0.15 + 0.3 * torch.rand(n, 1, 1, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    disc = (((xx - c[:, 0]) ** 2 + (yy - c[:, 1]) ** 2) < r ** 2).float()[:, None]  # SYNCSPY-CLEAN: setup, a large temporary
    colour = torch.rand(n, 3, 1, 1, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    return (base * (1 - disc) + colour * disc) * 2 - 1  # SYNCSPY-CLEAN: setup, the image store


def main():
    torch.manual_seed(0)
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(123)
    images_dev = make_images(IMAGES, dev, gen)
    store = torch.empty(images_dev.shape, pin_memory=True)  # SYNCSPY-CLEAN: setup, the pinned host store
    store.copy_(images_dev[torch.randperm(IMAGES, device=dev, generator=gen)])  # SYNCSPY-CLEAN: setup, the store shuffled and downloaded once (stand-in for the decoded dataset)
    del images_dev
    vae = VAEEncoder().eval().requires_grad_(False)  # frozen, kept on the CPU between uses
    unet = LatentUNet().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.AdamW(unet.parameters(), lr=2e-4, weight_decay=0.0)
    betas = torch.linspace(1e-4, 0.02, T_STEPS, device=dev, dtype=torch.float64)  # SYNCSPY-CLEAN: setup allocation
    abar = torch.cumprod(1.0 - betas, 0)  # SYNCSPY-CLEAN: setup allocation
    sqrt_ab, sqrt_1mab = abar.sqrt().float(), (1.0 - abar).sqrt().float()  # SYNCSPY-CLEAN: setup allocation
    losses = torch.zeros(EPOCHS * STEPS_PER_EPOCH, device=dev)  # SYNCSPY-CLEAN: setup allocation

    for epoch in range(EPOCHS):
        for i in range(STEPS_PER_EPOCH):
            step = epoch * STEPS_PER_EPOCH + i
            s = (step * BATCH) % IMAGES
            images = store[s:s + BATCH].to(dev, non_blocking=True)  # SYNCSPY-CLEAN: asynchronous copy from pinned memory (the store is never rewritten)
            z = encode_latents(vae, images)  # its copies and waits are the planted lines inside encode_latents
            t = torch.randint(0, T_STEPS, (BATCH,), device=dev, generator=gen)
            noise = torch.randn(z.shape, device=dev, generator=gen)
            zt = sqrt_ab[t][:, None, None, None] * z + sqrt_1mab[t][:, None, None, None] * noise
            loss = F.mse_loss(unet(zt, t), noise)  # SYNCSPY-CLEAN: allocator growth in the first steps
            opt.zero_grad(set_to_none=True)
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            opt.step()  # SYNCSPY-CLEAN: AdamW state allocated on the first step
            losses[step] = loss.detach()  # SYNCSPY-CLEAN: the step's loss copied into the history on the device (asynchronous device-to-device copy)

    first, last = losses[:5].mean().item(), losses[-5:].mean().item()  # SYNCSPY-CLEAN: final read
    on_cpu = all(p.device.type == "cpu" for p in vae.parameters())
    with torch.no_grad():
        ref = vae(images[:2].cpu()) * LATENT_SCALE  # SYNCSPY-CLEAN: teardown, the CPU reference (one download)
    err = (z[:2].cpu() - ref).abs().max().item() / ref.abs().max().item()  # SYNCSPY-CLEAN: teardown, one download
    ok = math.isfinite(first) and math.isfinite(last) and last < first and on_cpu and err < 1e-3
    print("t123_latent_diffusion_vae_cpu_offload: epochs=%d steps=%d batch=%d size=%d latent=4x%d result=%s" % (EPOCHS, EPOCHS * STEPS_PER_EPOCH, BATCH, SIZE, SIZE // 8, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
