#!/usr/bin/env python3
"""examples/corpus/t84_vit_amp_skipped_step_get_scale.py: corpus workload (PyTorch AMP). A
small Vision Transformer (4x4 patches, six pre-norm encoder layers) trained with fp16 autocast,
`torch.amp.GradScaler` and `AdamW(fused=True)` on 32x32 texture images (oriented gratings, ten
orientation classes) synthesized on the GPU every step. The warm-up/cosine learning-rate
schedule must not advance when GradScaler skipped the optimizer step (inf/NaN gradients, which
happen in the first steps while the scale backs off from 2**16), so `amp_update` uses the
recipe often given for it on the PyTorch forums: read the scale, `scaler.update()`, read it
again, and step the scheduler only if it did not shrink. `GradScaler.get_scale` returns
`self._scale.item()`; its docstring warns "get_scale() incurs a CPU-GPU sync". The first read
waits for the whole step (forward, backward, the fused update) every step; the second reads the
updated scale right after (cheap: little is queued by then). The fused optimizer keeps
`scaler.step` itself asynchronous (found_inf is handed to the kernel, as in t38).
Planted: the two `scaler.get_scale()` lines in amp_update (the first expensive, the second
cheap), every step.
Clean: setup (the model upload, the position table), the images generated on the GPU, the
fused `scaler.step`, allocator growth in the first steps, the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

STEPS, BATCH, IMG, PATCH, DIM, DEPTH, HEADS, CLASSES, WARMUP = 60, 256, 32, 4, 192, 6, 3, 10, 10


class ViT(torch.nn.Module):
    def __init__(self):
        super().__init__()
        tokens = (IMG // PATCH) ** 2
        self.patch = torch.nn.Conv2d(3, DIM, PATCH, stride=PATCH)
        self.cls = torch.nn.Parameter(torch.zeros(1, 1, DIM))
        self.pos = torch.nn.Parameter(0.02 * torch.randn(1, tokens + 1, DIM))
        layer = torch.nn.TransformerEncoderLayer(DIM, HEADS, 4 * DIM, dropout=0.0, activation="gelu", batch_first=True, norm_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, DEPTH, enable_nested_tensor=False)
        self.norm = torch.nn.LayerNorm(DIM)
        self.head = torch.nn.Linear(DIM, CLASSES)

    def forward(self, x):
        h = self.patch(x).flatten(2).transpose(1, 2)
        h = torch.cat([self.cls.expand(h.shape[0], -1, -1), h], dim=1) + self.pos
        return self.head(self.norm(self.encoder(h)[:, 0]))


def gratings(n, grid, dev, gen):
    """Sinusoidal gratings; the class is the orientation (k * 18 degrees, jittered)."""
    label = torch.randint(0, CLASSES, (n,), device=dev, generator=gen)
    theta = (label.float() + 0.3 * (torch.rand(n, device=dev, generator=gen) - 0.5)) * (math.pi / CLASSES)
    freq = 2.0 + 3.0 * torch.rand(n, 1, 1, device=dev, generator=gen)
    phase = 2 * math.pi * torch.rand(n, 1, 1, device=dev, generator=gen)
    yy, xx = grid
    proj = xx * torch.cos(theta).view(-1, 1, 1) + yy * torch.sin(theta).view(-1, 1, 1)
    wave = torch.sin(2 * math.pi * freq * proj + phase)
    colour = 0.5 + torch.rand(n, 3, 1, 1, device=dev, generator=gen)
    img = colour * wave.unsqueeze(1) + 0.3 * torch.randn(n, 3, IMG, IMG, device=dev, generator=gen)
    return img, label


def amp_update(scaler, opt, sched):
    """Optimizer step under GradScaler; the LR schedule only advances on applied steps."""
    scaler.step(opt)  # SYNCSPY-CLEAN: fused AdamW, found_inf stays on the GPU (state allocated on the first step)
    scale = scaler.get_scale()  # SYNCSPY-PROBLEM: get_scale() is self._scale.item(): a blocking read behind the whole step, every step
    scaler.update()
    skipped = scaler.get_scale() < scale  # SYNCSPY-PROBLEM: a second .item() of the updated scale, every step (cheap)
    if not skipped:
        sched.step()
    return skipped


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(84)
    lin = torch.linspace(-1.0, 1.0, IMG, device=dev)  # SYNCSPY-CLEAN: setup allocation
    grid = torch.meshgrid(lin, lin, indexing="ij")
    model = ViT().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05, fused=True)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / WARMUP) * 0.5 * (1 + math.cos(math.pi * min(s, STEPS) / STEPS)))
    scaler = torch.amp.GradScaler("cuda", init_scale=2.0 ** 16)
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
    correct = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation

    skipped_steps = 0
    for step in range(STEPS):
        x, y = gratings(BATCH, grid, dev, gen)
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device_type="cuda", dtype=torch.float16):
            logits = model(x)  # SYNCSPY-CLEAN: allocator growth in the first steps (fp16 weight copies, activations)
            loss = F.cross_entropy(logits.float(), y, label_smoothing=0.1)
        scaler.scale(loss).backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        skipped_steps += amp_update(scaler, opt, sched)
        loss_sum += loss.detach()
        correct += (logits.argmax(dim=1) == y).sum()

    mean_loss, acc = (torch.stack([loss_sum / STEPS, correct / (STEPS * BATCH)])).tolist()  # SYNCSPY-CLEAN: final read
    ok = math.isfinite(mean_loss) and 0.0 <= acc <= 1.0 and 0 <= skipped_steps < STEPS and tuple(logits.shape) == (BATCH, CLASSES)
    print("t84_vit_amp_skipped_step_get_scale: steps=%d batch=%d img=%d depth=%d dim=%d result=%s" % (STEPS, BATCH, IMG, DEPTH, DIM, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
