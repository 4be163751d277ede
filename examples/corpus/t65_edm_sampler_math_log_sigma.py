#!/usr/bin/env python3
"""examples/corpus/t65_edm_sampler_math_log_sigma.py: corpus workload (PyTorch). Image
sampling with an EDM-style (Karras et al.) preconditioned denoiser and Heun's second-order
sampler. The noise schedule is built on the GPU (`torch.linspace` and powers, as in the EDM
reference sampler), so every `sigma` the sampler hands to the denoiser is a 0-dim CUDA tensor.
The preconditioner computes the noise conditioning with `math.log(sigma) / 4`: `math.log`
converts its argument with `Tensor.__float__`, which is `.item()`, a blocking device-to-host
copy that waits for the previous denoiser evaluation. Two denoiser calls per step (Heun), so
two host waits per step; the GPU idles while the host queues the next network. `sigma.log()`
(a tensor) or a schedule of Python floats (t69) keeps the loop asynchronous.
Planted: the `math.log(sigma)` line in EDMPrecond.forward, every denoiser call.
Clean: setup, allocator growth in the first steps, the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

STEPS, BATCH, IMG, CH, WIDTH, EMB = 36, 32, 32, 3, 64, 128
SIGMA_MIN, SIGMA_MAX, RHO, SIGMA_DATA = 0.002, 80.0, 7.0, 0.5


class FourierEmbedding(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("freqs", torch.randn(EMB // 2) * 16.0)

    def forward(self, c_noise, batch):
        angles = (c_noise * 2 * math.pi) * self.freqs
        emb = torch.cat([angles.cos(), angles.sin()])
        return emb.expand(batch, -1)


class ResBlock(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.norm1, self.norm2 = torch.nn.GroupNorm(8, c), torch.nn.GroupNorm(8, c)
        self.conv1 = torch.nn.Conv2d(c, c, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(c, c, 3, padding=1)
        self.emb = torch.nn.Linear(EMB, c)

    def forward(self, x, emb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.emb(emb)[:, :, None, None]
        return x + self.conv2(F.silu(self.norm2(h)))


class TinyUNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.noise_emb = FourierEmbedding()
        self.emb_mlp = torch.nn.Sequential(torch.nn.Linear(EMB, EMB), torch.nn.SiLU())
        self.inp = torch.nn.Conv2d(CH, WIDTH, 3, padding=1)
        self.enc = ResBlock(WIDTH)
        self.down = torch.nn.Conv2d(WIDTH, WIDTH, 3, stride=2, padding=1)
        self.mid = ResBlock(WIDTH)
        self.up = torch.nn.ConvTranspose2d(WIDTH, WIDTH, 4, stride=2, padding=1)
        self.dec = ResBlock(WIDTH)
        self.out = torch.nn.Conv2d(WIDTH, CH, 3, padding=1)

    def forward(self, x, c_noise):
        emb = self.emb_mlp(self.noise_emb(c_noise, x.shape[0]))
        h = self.enc(self.inp(x), emb)
        h = self.up(self.mid(self.down(h), emb)) + h
        return self.out(self.dec(h, emb))


class EDMPrecond(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.model = TinyUNet()

    def forward(self, x, sigma):
        c_skip = SIGMA_DATA ** 2 / (sigma ** 2 + SIGMA_DATA ** 2)
        c_out = sigma * SIGMA_DATA / (sigma ** 2 + SIGMA_DATA ** 2).sqrt()
        c_in = 1 / (SIGMA_DATA ** 2 + sigma ** 2).sqrt()
        c_noise = math.log(sigma) / 4  # SYNCSPY-PROBLEM: math.log converts the 0-dim CUDA sigma with __float__ (.item(): blocking D2H), every denoiser call
        return c_skip * x + c_out * self.model(c_in * x, c_noise)  # SYNCSPY-CLEAN: allocator growth in the first steps


def karras_sigmas(n, dev):
    ramp = torch.linspace(0, 1, n, device=dev)  # SYNCSPY-CLEAN: setup allocation
    inv = SIGMA_MAX ** (1 / RHO) + ramp * (SIGMA_MIN ** (1 / RHO) - SIGMA_MAX ** (1 / RHO))
    return torch.cat([inv ** RHO, torch.zeros(1, device=dev)])  # SYNCSPY-CLEAN: setup allocation


class HeunSampler:
    def __init__(self, net, steps, dev):
        self.net = net
        self.sigmas = karras_sigmas(steps, dev)
        self.steps = steps

    @torch.no_grad()
    def sample(self, noise):
        x = noise * self.sigmas[0]
        for i in range(self.steps):
            sigma, sigma_next = self.sigmas[i], self.sigmas[i + 1]
            denoised = self.net(x, sigma)  # SYNCSPY-CLEAN: allocator growth in the first steps
            d = (x - denoised) / sigma
            x_next = x + (sigma_next - sigma) * d
            if i < self.steps - 1:
                denoised_next = self.net(x_next, sigma_next)  # SYNCSPY-CLEAN: allocator growth in the first steps
                d_next = (x_next - denoised_next) / sigma_next
                x_next = x + (sigma_next - sigma) * (0.5 * d + 0.5 * d_next)
            x = x_next
        return x


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    net = EDMPrecond().to(dev).eval()  # SYNCSPY-CLEAN: setup upload
    gen = torch.Generator(device=dev).manual_seed(1)
    noise = torch.randn(BATCH, CH, IMG, IMG, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    sampler = HeunSampler(net, STEPS, dev)
    images = sampler.sample(noise)

    finite = bool(torch.isfinite(images).all().item())  # SYNCSPY-CLEAN: final read
    spread = images.std().item()  # SYNCSPY-CLEAN: final read
    ok = finite and 0.0 < spread < 1e4
    print("t65_edm_sampler_math_log_sigma: steps=%d batch=%d denoiser_calls=%d result=OK" % (STEPS, BATCH, 2 * STEPS - 1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
