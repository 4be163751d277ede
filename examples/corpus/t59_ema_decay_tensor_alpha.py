#!/usr/bin/env python3
"""examples/corpus/t59_ema_decay_tensor_alpha.py: corpus workload (PyTorch). BYOL-style
self-supervised pre-training of a small CNN on augmented image pairs. The momentum teacher
keeps its update counter as a device buffer (so that it is checkpointed with the module) and
computes the cosine momentum schedule from it on the GPU, which leaves `decay` a 0-dim CUDA
tensor. The update then passes `1 - decay` as the `alpha=` of `Tensor.add_`: `alpha` is a
Scalar argument, and PyTorch's argument parser turns a 0-dim tensor given for a Scalar into a
number with `Tensor.item()`, a blocking device-to-host copy that waits for the whole step
queued before it (forward, backward, optimizer). It happens once per parameter tensor, every
step, in `MomentumTeacher.update`. `lerp_(s, 1 - decay)` (a Tensor weight) or a Python-float
schedule keeps the update asynchronous.
Planted: the `add_(..., alpha=1 - decay)` line in MomentumTeacher.update, every step.
Clean: setup, the teacher's deep copy, allocator growth in the first steps, the buffers'
device-to-device `copy_`, the final read.
"""
import copy
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

STEPS, BATCH, POOL, IMG, FEAT, PROJ, BASE_DECAY = 40, 64, 512, 32, 256, 128, 0.99


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        chans = [3, 32, 64, 128]
        layers = []
        for cin, cout in zip(chans[:-1], chans[1:]):
            layers += [torch.nn.Conv2d(cin, cout, 3, padding=1, bias=False), torch.nn.BatchNorm2d(cout), torch.nn.ReLU(inplace=True), torch.nn.MaxPool2d(2)]
        self.features = torch.nn.Sequential(*layers)
        self.fc = torch.nn.Linear(128 * (IMG // 8) ** 2, FEAT)

    def forward(self, x):
        return self.fc(self.features(x).flatten(1))


def mlp(din, dhid, dout):
    return torch.nn.Sequential(torch.nn.Linear(din, dhid), torch.nn.BatchNorm1d(dhid), torch.nn.ReLU(inplace=True), torch.nn.Linear(dhid, dout))


class Online(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = Encoder()
        self.projector = mlp(FEAT, 512, PROJ)

    def forward(self, x):
        return self.projector(self.encoder(x))


class MomentumTeacher(torch.nn.Module):
    """Target network: an exponential moving average of the online network."""

    def __init__(self, online, total_steps):
        super().__init__()
        self.net = copy.deepcopy(online)  # SYNCSPY-CLEAN: setup copy of the weights (device to device)
        for p in self.net.parameters():
            p.requires_grad_(False)
        self.register_buffer("updates", torch.zeros((), device=next(online.parameters()).device))  # SYNCSPY-CLEAN: setup allocation
        self.total_steps = total_steps

    def momentum(self):
        progress = self.updates / self.total_steps
        return 1.0 - (1.0 - BASE_DECAY) * (torch.cos(math.pi * progress) + 1.0) / 2.0

    @torch.no_grad()
    def update(self, online):
        self.updates += 1
        decay = self.momentum()
        for t, s in zip(self.net.parameters(), online.parameters()):
            t.mul_(decay).add_(s, alpha=1.0 - decay)  # SYNCSPY-PROBLEM: alpha is a Scalar: the 0-dim CUDA tensor is read with .item() (blocking D2H), per parameter, every step
        for tb, sb in zip(self.net.buffers(), online.buffers()):
            tb.copy_(sb)  # SYNCSPY-CLEAN: device-to-device copy of the BatchNorm statistics

    @torch.no_grad()
    def forward(self, x):
        return self.net(x)


def augment(images, gen):
    b = images.shape[0]
    flip = torch.rand(b, 1, 1, 1, device=images.device, generator=gen) < 0.5
    x = torch.where(flip, images.flip(-1), images)
    gain = 0.8 + 0.4 * torch.rand(b, 3, 1, 1, device=images.device, generator=gen)
    noise = 0.05 * torch.randn(images.shape, device=images.device, generator=gen)
    return x * gain + noise


def byol_loss(p, z):
    return (2.0 - 2.0 * F.cosine_similarity(p, z.detach(), dim=-1)).mean()


class Pretrainer:
    def __init__(self, dev):
        self.online = Online().to(dev)  # SYNCSPY-CLEAN: setup upload
        self.predictor = mlp(PROJ, 512, PROJ).to(dev)  # SYNCSPY-CLEAN: setup upload
        self.teacher = MomentumTeacher(self.online, STEPS)
        params = list(self.online.parameters()) + list(self.predictor.parameters())
        self.opt = torch.optim.SGD(params, lr=0.05, momentum=0.9, weight_decay=1e-5)
        self.loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation

    def step(self, images, gen):
        v1, v2 = augment(images, gen), augment(images, gen)  # SYNCSPY-CLEAN: allocator growth in the first steps
        p1 = self.predictor(self.online(v1))  # SYNCSPY-CLEAN: allocator growth in the first steps
        p2 = self.predictor(self.online(v2))  # SYNCSPY-CLEAN: allocator growth in the first steps
        z1, z2 = self.teacher(v1), self.teacher(v2)  # SYNCSPY-CLEAN: allocator growth in the first steps
        loss = byol_loss(p1, z2) + byol_loss(p2, z1)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        self.opt.step()  # SYNCSPY-CLEAN: momentum buffers allocated on the first step
        self.teacher.update(self.online)
        self.loss_sum += loss.detach()


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(7)
    pool = torch.rand(POOL, 3, IMG, IMG, device=dev)  # SYNCSPY-CLEAN: setup allocation
    trainer = Pretrainer(dev)

    for step in range(STEPS):
        start = (step * BATCH) % POOL
        trainer.step(pool[start:start + BATCH], gen)

    mean_loss = trainer.loss_sum.item() / STEPS  # SYNCSPY-CLEAN: final read
    updates = int(trainer.teacher.updates.item())  # SYNCSPY-CLEAN: final read
    ok = math.isfinite(mean_loss) and 0.0 <= mean_loss <= 8.0 and updates == STEPS
    print("t59_ema_decay_tensor_alpha: steps=%d batch=%d teacher_updates=%d result=OK" % (STEPS, BATCH, updates))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
