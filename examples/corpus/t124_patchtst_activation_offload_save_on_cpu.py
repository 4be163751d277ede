#!/usr/bin/env python3
"""examples/corpus/t124_patchtst_activation_offload_save_on_cpu.py: corpus workload (PyTorch).
Long-horizon multivariate forecasting with a channel-independent patch Transformer (PatchTST style:
7 load and temperature channels, a lookback of 512 steps cut into 32 patches of 16, RevIN
normalisation, four pre-norm encoder layers of width 256, a linear head to 96 future steps), windows
gathered on the GPU from a series stored there. The trainer's config keeps
`offload_activations=True` from the 2,880-step-lookback setup, so the forward pass runs under
`torch.autograd.graph.save_on_cpu(pin_memory=True)`. Its pack hook (torch/autograd/graph.py) copies
every tensor autograd saves for the backward pass into a new pinned host tensor with
`packed.copy_(tensor)`, a blocking copy (`non_blocking` is not passed; a device-to-host copy without
it is `memcpy_and_sync`): about a hundred saved tensors per step (activations, attention inputs and
outputs, the weights themselves), some 400 MB, each copy waiting for the layer that produced it, so
the forward pass runs in lockstep with the host. At this lookback the activations take a few hundred
MB of an 80 GB card: the offload buys nothing. (The unpack in the backward pass is an asynchronous
copy from pinned memory.)
Planted: the `pred = self.model(x)` line in Trainer.train_step, every step (the copies happen in the
pack hook while the forward pass runs).
Clean: setup (the series generated on the GPU), windows gathered on the device from device offsets,
allocator growth in the first steps (the backward pass, whose unpack copies are asynchronous), the
validation loss read once per epoch outside the step loop, the final read.
"""
import contextlib
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

EPOCHS, STEPS_PER_EPOCH, BATCH, VAL_BATCH, CHANNELS, LENGTH = 2, 20, 32, 64, 7, 20000
LOOKBACK, HORIZON, PATCH, D_MODEL, HEADS, FF, LAYERS = 512, 96, 16, 256, 8, 512, 4
N_PATCH = LOOKBACK // PATCH


class EncoderLayer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(D_MODEL), torch.nn.LayerNorm(D_MODEL)
        self.qkv, self.proj = torch.nn.Linear(D_MODEL, 3 * D_MODEL), torch.nn.Linear(D_MODEL, D_MODEL)
        self.ff = torch.nn.Sequential(torch.nn.Linear(D_MODEL, FF), torch.nn.GELU(), torch.nn.Linear(FF, D_MODEL))

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, HEADS, D_MODEL // HEADS).permute(2, 0, 3, 1, 4)
        x = x + self.proj(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, t, D_MODEL))
        return x + self.ff(self.ln2(x))


class PatchForecaster(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Linear(PATCH, D_MODEL)
        self.pos = torch.nn.Parameter(0.02 * torch.randn(N_PATCH, D_MODEL))
        self.layers = torch.nn.ModuleList([EncoderLayer() for _ in range(LAYERS)])
        self.norm = torch.nn.LayerNorm(D_MODEL)
        self.head = torch.nn.Linear(N_PATCH * D_MODEL, HORIZON)

    def forward(self, past):
        """past (B, C, LOOKBACK) -> forecast (B, C, HORIZON), channels independent, RevIN around it."""
        mu = past.mean(-1, keepdim=True)
        sigma = past.std(-1, keepdim=True) + 1e-5
        b, c, _ = past.shape
        h = self.embed(((past - mu) / sigma).unfold(-1, PATCH, PATCH).reshape(b * c, N_PATCH, PATCH)) + self.pos
        for layer in self.layers:
            h = layer(h)
        return self.head(self.norm(h).reshape(b, c, -1)) * sigma + mu


class Trainer:
    def __init__(self, model, offload_activations):
        self.model, self.offload = model, offload_activations
        self.opt = torch.optim.Adam(model.parameters(), lr=5e-4)

    def train_step(self, x, y):
        ctx = torch.autograd.graph.save_on_cpu(pin_memory=True) if self.offload else contextlib.nullcontext()
        with ctx:
            pred = self.model(x)  # SYNCSPY-PROBLEM: save_on_cpu packs every saved tensor with a blocking copy_ into pinned memory, ~100 waits per step
        loss = F.mse_loss(pred, y)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: unpacking is an asynchronous copy from pinned memory; allocator growth in the first steps
        self.opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
        return loss.detach()


def make_series(dev, gen):
    """Daily and weekly cycles with channel-specific amplitude and phase, a slow trend, red noise."""
    t = torch.arange(LENGTH, device=dev, dtype=torch.float32)  # SYNCSPY-CLEAN: setup allocation
    amp = 0.5 + torch.rand(CHANNELS, 3, 1, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    ph = 2 * math.pi * torch.rand(CHANNELS, 3, 1, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    periods = torch.tensor([24.0, 168.0, 12.0], device=dev)[None, :, None]  # SYNCSPY-CLEAN: setup upload (pageable, once)
    cycles = (amp * torch.sin(2 * math.pi * t / periods + ph)).sum(1)  # SYNCSPY-CLEAN: setup allocation
    noise = torch.cumsum(0.05 * torch.randn(CHANNELS, LENGTH, device=dev, generator=gen), dim=1)  # SYNCSPY-CLEAN: setup allocation
    return cycles + 0.0002 * t + noise  # SYNCSPY-CLEAN: setup, the series store


def windows(series, starts, offsets):
    w = series[:, starts[:, None] + offsets].permute(1, 0, 2)  # SYNCSPY-CLEAN: windows gathered on the device (a large temporary)
    return w[..., :LOOKBACK], w[..., LOOKBACK:]


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(124)
    series = make_series(dev, gen)
    split = int(LENGTH * 0.8)
    offsets = torch.arange(LOOKBACK + HORIZON, device=dev)  # SYNCSPY-CLEAN: setup allocation
    val_starts = torch.arange(split, LENGTH - LOOKBACK - HORIZON, (LENGTH - split - LOOKBACK - HORIZON) // VAL_BATCH, device=dev)[:VAL_BATCH]  # SYNCSPY-CLEAN: setup allocation
    model = PatchForecaster().to(dev)  # SYNCSPY-CLEAN: setup upload
    trainer = Trainer(model, offload_activations=True)
    losses = torch.zeros(EPOCHS * STEPS_PER_EPOCH, device=dev)  # SYNCSPY-CLEAN: setup allocation
    val_mse = []

    for epoch in range(EPOCHS):
        model.train()
        for i in range(STEPS_PER_EPOCH):
            step = epoch * STEPS_PER_EPOCH + i
            starts = torch.randint(0, split - LOOKBACK - HORIZON, (BATCH,), device=dev, generator=gen)
            x, y = windows(series, starts, offsets)
            loss = trainer.train_step(x, y)
            losses[step] = loss  # SYNCSPY-CLEAN: the step's loss copied into the history on the device (asynchronous device-to-device copy)
        model.eval()
        with torch.no_grad():
            vx, vy = windows(series, val_starts, offsets)
            vl = F.mse_loss(model(vx), vy)  # SYNCSPY-CLEAN: validation once per epoch, outside the step loop
        val_mse.append(vl.item())  # SYNCSPY-CLEAN: once per epoch, outside the step loop

    first, last = losses[:5].mean().item(), losses[-5:].mean().item()  # SYNCSPY-CLEAN: final read
    ok = all(math.isfinite(v) for v in [first, last] + val_mse) and last < first
    print("t124_patchtst_activation_offload_save_on_cpu: epochs=%d steps=%d batch=%d channels=%d lookback=%d horizon=%d result=%s" % (EPOCHS, EPOCHS * STEPS_PER_EPOCH, BATCH, CHANNELS, LOOKBACK, HORIZON, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
