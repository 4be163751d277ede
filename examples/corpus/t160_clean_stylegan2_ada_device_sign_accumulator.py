#!/usr/bin/env python3
"""examples/corpus/t160_clean_stylegan2_ada_device_sign_accumulator.py: corpus workload
(PyTorch), CLEAN. The GAN of t155 (a 128-d latent to 32 x 32 RGB through a linear layer and
three transposed convolutions, a four-convolution discriminator, 4,096 synthetic sprites
rendered on the GPU, the StyleGAN2 PyTorch port's training loop: non-saturating logistic
losses, lazy R1 every 16 steps on the unaugmented reals, the generator's moving average, and
adaptive discriminator augmentation towards a sign target of 0.4) with `AdaptiveAugment.tune`
accumulating on the device (the fix of t155): the sign sum of the real predictions is added to
a 0-dim CUDA tensor with `add_` and the number of predictions is counted on the host (the
batch size is known there), as the official StyleGAN2-ADA's statistics collector keeps its
sums on the device. Nothing is read in the step except every 8th step, when the heuristic
updates p (the port's `update_every`): one `.item()` of the accumulated sum, which is the
heuristic's own cadence. t155 read the sum with `.item()` and uploaded the pair with a
blocking `torch.tensor(..., device=...)` every step.
Clean: all of it; the marked lines are setup (the sprites rendered on the GPU, the models
uploaded once, the EMA copy), allocator growth in the first steps (forward, backward, Adam, R1
lines), the sum read every 8 steps, the statistics table read once after the loop. The check
after the loop replays the heuristic on the host from the per-step sign sums kept on the GPU.
Per step on an H100 (estimated from the sizes, fp32 without TF32): a discriminator step on
2 x 64 images, a generator step and every 16th step an R1 pass, about 2 ms.
"""
import copy
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

IMAGES, RES, LATENT, BATCH, STEPS = 4096, 32, 128, 64, 64
ADA_TARGET, ADA_LENGTH, ADA_EVERY, D_REG_EVERY, R1 = 0.4, 4000, 8, 16, 10.0


class Generator(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(LATENT, 256 * 4 * 4)
        self.up = torch.nn.ModuleList(torch.nn.ConvTranspose2d(c, c // 2, 4, 2, 1) for c in (256, 128, 64))
        self.to_rgb = torch.nn.Conv2d(32, 3, 3, padding=1)

    def forward(self, z):
        x = F.leaky_relu(self.fc(z), 0.2).view(-1, 256, 4, 4)
        for up in self.up:
            x = F.leaky_relu(up(x), 0.2)
        return torch.tanh(self.to_rgb(x))


class Discriminator(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = torch.nn.ModuleList([torch.nn.Conv2d(3, 32, 3, padding=1)] + [
            torch.nn.Conv2d(c, 2 * c, 4, 2, 1) for c in (32, 64, 128)])
        self.out = torch.nn.Linear(256 * 4 * 4, 1)

    def forward(self, x):
        for conv in self.convs:
            x = F.leaky_relu(conv(x), 0.2)
        return self.out(x.flatten(1))


class AdaptiveAugment:
    def __init__(self, ada_aug_target, ada_aug_len, update_every, device):
        self.ada_aug_target = ada_aug_target
        self.ada_aug_len = ada_aug_len
        self.update_every = update_every
        self.ada_update = 0
        self.ada_aug_signs = torch.zeros((), device=device)  # SYNCSPY-CLEAN: setup allocation
        self.ada_aug_n = 0
        self.r_t_stat = 0
        self.ada_aug_p = 0
        self.updates = 0

    @torch.no_grad()
    def tune(self, real_pred):
        self.ada_aug_signs.add_(torch.sign(real_pred).sum())
        self.ada_aug_n += real_pred.shape[0]
        self.ada_update += 1
        if self.ada_update % self.update_every == 0:
            pred_signs, n_pred = self.ada_aug_signs.item(), self.ada_aug_n  # SYNCSPY-CLEAN: the heuristic's update, every 8 steps
            self.r_t_stat = pred_signs / n_pred
            sign = 1 if self.r_t_stat > self.ada_aug_target else -1
            self.ada_aug_p += sign * n_pred / self.ada_aug_len
            self.ada_aug_p = min(1, max(0, self.ada_aug_p))
            self.ada_aug_signs.zero_()
            self.ada_aug_n = 0
            self.ada_update = 0
            self.updates += 1
        return self.ada_aug_p


def augment(x, p, eye, gen):
    """Flip, translate (up to 1/8 of the image) and shift brightness, each with probability p."""
    b = x.shape[0]
    flip = torch.rand(b, 1, 1, 1, device=x.device, generator=gen) < p
    x = torch.where(flip, x.flip(3), x)
    move = (torch.rand(b, 1, device=x.device, generator=gen) < p).to(x.dtype)
    shift = (torch.rand(b, 2, device=x.device, generator=gen) * 2.0 - 1.0) * 0.25 * move
    theta = torch.cat([eye.expand(b, 2, 2), shift[:, :, None]], 2)
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    x = F.grid_sample(x, grid, mode="bilinear", padding_mode="reflection", align_corners=False)
    light = (torch.rand(b, 1, 1, 1, device=x.device, generator=gen) < p).to(x.dtype)
    return x + 0.2 * light * torch.randn(b, 1, 1, 1, device=x.device, generator=gen)


def render_sprites(gen, dev):
    """A disk of one colour on a two-colour vertical gradient, in [-1, 1]."""
    ys = torch.linspace(-1.0, 1.0, RES, device=dev)[None, :, None]
    xs = torch.linspace(-1.0, 1.0, RES, device=dev)[None, None, :]
    top, bottom, ink = (torch.rand(IMAGES, 3, 1, 1, device=dev, generator=gen) * 2 - 1 for _ in range(3))
    cx, cy = (torch.rand(IMAGES, 1, 1, device=dev, generator=gen) * 1.2 - 0.6 for _ in range(2))
    r = 0.2 + 0.3 * torch.rand(IMAGES, 1, 1, device=dev, generator=gen)
    inside = (((xs - cx) ** 2 + (ys - cy) ** 2) < r ** 2).to(torch.float32)[:, None]
    w = (ys[:, None] + 1.0) / 2.0
    background = top * (1.0 - w) + bottom * w
    return background * (1.0 - inside) + ink * inside


def requires_grad(model, flag):
    for p in model.parameters():
        p.requires_grad = flag


def accumulate(model1, model2, decay):
    par1, par2 = dict(model1.named_parameters()), dict(model2.named_parameters())
    for k in par1.keys():
        par1[k].data.mul_(decay).add_(par2[k].data, alpha=1 - decay)


def d_logistic_loss(real_pred, fake_pred):
    return F.softplus(-real_pred).mean() + F.softplus(fake_pred).mean()


def d_r1_loss(real_pred, real_img):
    grad_real, = torch.autograd.grad(outputs=real_pred.sum(), inputs=real_img, create_graph=True)
    return grad_real.pow(2).reshape(grad_real.shape[0], -1).sum(1).mean()


def replay_heuristic(sign_sums):
    """The ADA heuristic replayed on the host from the per-step sign sums."""
    p, r_t, acc, n = 0.0, 0.0, 0.0, 0
    for i, s in enumerate(sign_sums):
        acc, n = acc + s, n + BATCH
        if (i + 1) % ADA_EVERY == 0:
            r_t = acc / n
            p = min(1, max(0, p + (1 if r_t > ADA_TARGET else -1) * n / ADA_LENGTH))
            acc, n = 0.0, 0
    return p, r_t


def main():
    if not torch.cuda.is_available():
        print("t160_clean_stylegan2_ada_device_sign_accumulator: no CUDA device, result=SKIP")
        return 1
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(155)
    images = render_sprites(gen, dev)  # SYNCSPY-CLEAN: setup, the data set rendered on the GPU once
    eye = torch.eye(2, device=dev)
    generator = Generator().to(dev)  # SYNCSPY-CLEAN: setup upload
    discriminator = Discriminator().to(dev)  # SYNCSPY-CLEAN: setup upload
    g_ema = copy.deepcopy(generator).eval()  # SYNCSPY-CLEAN: setup, device copies
    g_optim = torch.optim.Adam(generator.parameters(), lr=2e-3, betas=(0.0, 0.99))
    d_ratio = D_REG_EVERY / (D_REG_EVERY + 1)
    d_optim = torch.optim.Adam(discriminator.parameters(), lr=2e-3 * d_ratio, betas=(0.0, 0.99 ** d_ratio))
    ada_augment = AdaptiveAugment(ADA_TARGET, ADA_LENGTH, ADA_EVERY, dev)
    ada_aug_p, accum = 0.0, 0.5 ** (32 / (10 * 1000))
    stats = torch.zeros(STEPS, 3, device=dev)  # SYNCSPY-CLEAN: setup allocation

    for i in range(STEPS):
        real_img = images[torch.randint(0, IMAGES, (BATCH,), device=dev, generator=gen)]
        requires_grad(generator, False)
        requires_grad(discriminator, True)
        noise = torch.randn(BATCH, LATENT, device=dev, generator=gen)
        fake_img = generator(noise)  # SYNCSPY-CLEAN: allocator growth in the first steps
        fake_pred = discriminator(augment(fake_img, ada_aug_p, eye, gen))  # SYNCSPY-CLEAN: growth, first steps
        real_pred = discriminator(augment(real_img, ada_aug_p, eye, gen))  # SYNCSPY-CLEAN: growth, first steps
        d_loss = d_logistic_loss(real_pred, fake_pred)
        discriminator.zero_grad()
        d_loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        d_optim.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
        ada_aug_p = ada_augment.tune(real_pred)
        sign_sum = torch.sign(real_pred.detach()).sum()

        if i % D_REG_EVERY == 0:
            real_img.requires_grad = True
            real_pred = discriminator(real_img)  # SYNCSPY-CLEAN: allocator growth, first R1 step
            r1_loss = d_r1_loss(real_pred, real_img)  # SYNCSPY-CLEAN: double-backward graph, first R1 step
            discriminator.zero_grad()
            (R1 / 2 * r1_loss * D_REG_EVERY + 0 * real_pred[0]).backward()  # SYNCSPY-CLEAN: growth, first R1 step
            d_optim.step()  # SYNCSPY-CLEAN: optimizer line (state exists by then)

        requires_grad(generator, True)
        requires_grad(discriminator, False)
        noise = torch.randn(BATCH, LATENT, device=dev, generator=gen)
        fake_img = generator(noise)  # SYNCSPY-CLEAN: allocator growth in the first steps
        fake_pred = discriminator(augment(fake_img, ada_aug_p, eye, gen))  # SYNCSPY-CLEAN: growth, first steps
        g_loss = F.softplus(-fake_pred).mean()
        generator.zero_grad()
        g_loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        g_optim.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
        accumulate(g_ema, generator, accum)
        stats[i] = torch.stack([d_loss.detach(), g_loss.detach(), sign_sum])

    table = stats.cpu()  # SYNCSPY-CLEAN: final read
    with torch.no_grad():
        sample = g_ema(torch.randn(BATCH, LATENT, device=dev, generator=gen)).cpu()  # SYNCSPY-CLEAN: final read
    p_ref, r_t_ref = replay_heuristic(table[:, 2].tolist())
    ok = (bool(torch.isfinite(table).all()) and bool(torch.isfinite(sample).all())
          and 0.0 <= ada_aug_p <= 1.0 and abs(ada_aug_p - p_ref) < 1e-9 and abs(ada_augment.r_t_stat - r_t_ref) < 1e-9
          and ada_augment.updates == STEPS // ADA_EVERY
          and float(table[:, 2].abs().max()) <= BATCH and math.isfinite(ada_augment.r_t_stat))
    print("t160_clean_stylegan2_ada_device_sign_accumulator: steps=%d batch=%d res=%d ada_updates=%d "
          "result=%s" % (STEPS, BATCH, RES, ada_augment.updates, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
