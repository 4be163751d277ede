#!/usr/bin/env python3
"""examples/corpus/t60_histc_activation_monitor.py: corpus workload (PyTorch). A small
residual CNN trained on synthetic 10-class images, with an activation monitor that a debugging
session left in: forward hooks on every ReLU record a 64-bin histogram of the activations with
`torch.histc(out, bins=64)` and keep the fraction of near-zero ("dead") activations on the GPU.
`histc` is called with its default range, `min=0, max=0`, which means "use the data's range":
on CUDA the kernel reads `self.min()` and `self.max()` back to the host to set the bin edges
(two blocking device-to-host copies), so every hooked ReLU of every step waits for all the
work queued before it, in the middle of the forward pass. A fixed range (`min=0.0, max=...`)
keeps the histogram asynchronous.
Planted: the `torch.histc` line in ActivationMonitor._hook, every hooked layer of every step.
Clean: setup, allocator growth in the first steps, the final read of the statistics.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

STEPS, BATCH, CHUNKS, IMG, CLASSES, BINS, WIDTH = 50, 128, 4, 32, 10, 64, 64


class ResBlock(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(c)
        self.conv2 = torch.nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(c)
        self.act1 = torch.nn.ReLU()
        self.act2 = torch.nn.ReLU()

    def forward(self, x):
        h = self.act1(self.bn1(self.conv1(x)))
        return self.act2(x + self.bn2(self.conv2(h)))


class ResNetTiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Sequential(torch.nn.Conv2d(3, WIDTH, 3, padding=1, bias=False), torch.nn.BatchNorm2d(WIDTH), torch.nn.ReLU())
        self.stage1 = ResBlock(WIDTH)
        self.down = torch.nn.Conv2d(WIDTH, 2 * WIDTH, 3, stride=2, padding=1)
        self.stage2 = ResBlock(2 * WIDTH)
        self.head = torch.nn.Linear(2 * WIDTH, CLASSES)

    def forward(self, x):
        h = self.stage2(self.down(self.stage1(self.stem(x))))
        return self.head(h.mean(dim=(2, 3)))


class ActivationMonitor:
    """Per-layer dead-activation fraction, from a histogram of each ReLU's output."""

    def __init__(self, model, dev):
        self.dead = {}
        self.calls = 0
        self.handles = []
        for name, module in model.named_modules():
            if isinstance(module, torch.nn.ReLU):
                self.dead[name] = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
                self.handles.append(module.register_forward_hook(self._make_hook(name)))

    def _make_hook(self, name):
        def hook(module, inputs, out):
            self._hook(name, out)
        return hook

    @torch.no_grad()
    def _hook(self, name, out):
        hist = torch.histc(out.detach().float(), bins=BINS)  # SYNCSPY-PROBLEM: default range (min=max=0): histc reads the tensor's min and max back to the host, every hooked layer of every step
        self.dead[name] += hist[0] / out.numel()
        self.calls += 1

    def close(self):
        for h in self.handles:
            h.remove()


def make_data(dev, gen):
    labels = torch.randint(0, CLASSES, (CHUNKS, BATCH), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    protos = torch.randn(CLASSES, 3, IMG, IMG, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    images = protos[labels] + 0.5 * torch.randn(CHUNKS, BATCH, 3, IMG, IMG, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    return images, labels


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(3)
    images, labels = make_data(dev, gen)
    model = ResNetTiny().to(dev)  # SYNCSPY-CLEAN: setup upload
    monitor = ActivationMonitor(model, dev)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=2e-3, total_steps=STEPS)
    correct = torch.zeros((), dtype=torch.long, device=dev)  # SYNCSPY-CLEAN: setup allocation

    model.train()
    for step in range(STEPS):
        x, y = images[step % CHUNKS], labels[step % CHUNKS]
        logits = model(x)  # SYNCSPY-CLEAN: allocator growth in the first steps
        loss = F.cross_entropy(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: AdamW state allocated on the first step
        sched.step()
        correct += (logits.detach().argmax(dim=1) == y).sum()
    monitor.close()

    dead = {name: v.item() / STEPS for name, v in monitor.dead.items()}  # SYNCSPY-CLEAN: final read, once after the loop
    accuracy = correct.item() / (STEPS * BATCH)  # SYNCSPY-CLEAN: final read
    ok = monitor.calls == STEPS * len(dead) and all(0.0 <= f <= 1.0 for f in dead.values()) and accuracy > 0.3
    print("t60_histc_activation_monitor: steps=%d hooked_layers=%d hook_calls=%d result=OK" % (STEPS, len(dead), monitor.calls))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
