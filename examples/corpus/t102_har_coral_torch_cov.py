#!/usr/bin/env python3
"""examples/corpus/t102_har_coral_torch_cov.py: corpus workload (PyTorch).
Human-activity recognition (walking, stairs up, stairs down, sitting, standing, lying) from
2.56 s windows of 6-axis inertial data at 50 Hz, with unsupervised domain adaptation from a
labelled phone dataset to an unlabelled smartwatch (other axes, gain, bias and noise): a 1-D CNN
feature extractor trained with cross-entropy on the phone windows plus the Deep CORAL loss,
the distance between the feature covariances of the two domains. The CORAL helper computes the
covariances with `torch.cov`. ATen's cov (aten/src/ATen/native/Correlation.cpp) checks the
degrees of freedom with `if (at::is_scalar_tensor_true(norm_factor.le(0)))`, and without weights
`norm_factor` is a 0-dim tensor created with the input's options, on the GPU: the check is a
blocking device-to-host read inside every call. Two calls per step, the first behind the whole
feature extractor's forward pass, the second right after it; the GPU then idles while the host
queues the loss and the backward pass. The covariance written out (centred features, one
matmul, divided by n-1: t106) reads nothing.
Planted: the two `torch.cov(...)` lines in coral_loss (source and target), every step.
Clean: setup (the windows generated on the GPU, the model upload), allocator growth in the
first steps, the target-domain evaluation after the loop, the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

STEPS, BATCH, POOL, EVAL = 50, 256, 8192, 2048
CHANNELS, SAMPLES, CLASSES, FEAT, FS, LAMBDA = 6, 128, 6, 128, 50.0, 1.0


def make_windows(n, watch, dev, gen):
    """Gravity orientation, gait frequency and amplitude per activity; the watch rotates the axes."""
    label = torch.randint(0, CLASSES, (n,), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    freq = torch.tensor([1.8, 1.5, 2.1, 0.0, 0.0, 0.0], device=dev)[label]  # SYNCSPY-CLEAN: setup upload of the activity table (pageable, once)
    amp = torch.tensor([1.0, 1.4, 1.6, 0.05, 0.08, 0.03], device=dev)[label]  # SYNCSPY-CLEAN: setup upload of the activity table (pageable, once)
    tilt = torch.tensor([0.1, 0.3, -0.3, 1.2, 0.0, 1.57], device=dev)[label]  # SYNCSPY-CLEAN: setup upload of the activity table (pageable, once)
    t = torch.arange(SAMPLES, device=dev, dtype=torch.float32) / FS  # SYNCSPY-CLEAN: setup allocation
    phase = torch.rand(n, 1, device=dev, generator=gen) * 2 * math.pi  # SYNCSPY-CLEAN: setup allocation
    f = freq.unsqueeze(1) * (1.0 + 0.1 * torch.randn(n, 1, device=dev, generator=gen))  # SYNCSPY-CLEAN: setup allocation
    gait = amp.unsqueeze(1) * torch.sin(2 * math.pi * f * t + phase)
    acc = torch.stack([9.8 * torch.sin(tilt).unsqueeze(1) + gait, 0.3 * gait, 9.8 * torch.cos(tilt).unsqueeze(1) + 0.5 * gait], dim=1)
    gyro = torch.stack([0.8 * torch.cos(2 * math.pi * f * t + phase) * amp.unsqueeze(1), 0.2 * gait, 0.1 * gait], dim=1)
    x = torch.cat([acc, gyro], dim=1) + 0.2 * torch.randn(n, CHANNELS, SAMPLES, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    if watch:
        rot = torch.tensor([[0.0, 1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, 1.0]], device=dev)  # SYNCSPY-CLEAN: setup upload of the axis map (pageable, once)
        x = torch.cat([torch.einsum("ij,njt->nit", rot, x[:, :3]) * 1.3 + 0.5, torch.einsum("ij,njt->nit", rot, x[:, 3:]) * 1.3], dim=1)
        x = x + 0.4 * torch.randn(x.shape, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    return x / 10.0, label


class HARNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        layers, cin = [], CHANNELS
        for cout, k, stride in ((64, 7, 1), (128, 5, 2), (128, 5, 2), (FEAT, 3, 1)):
            layers += [torch.nn.Conv1d(cin, cout, k, stride=stride, padding=k // 2, bias=False), torch.nn.BatchNorm1d(cout), torch.nn.ReLU()]
            cin = cout
        self.features = torch.nn.Sequential(*layers)
        self.classifier = torch.nn.Linear(FEAT, CLASSES)

    def embed(self, x):
        return self.features(x).mean(dim=2)


def coral_loss(fs, ft):
    """Deep CORAL: squared Frobenius distance of the feature covariances, over 4 d^2."""
    d = fs.shape[1]
    cs = torch.cov(fs.t())  # SYNCSPY-PROBLEM: torch.cov checks its degrees of freedom with a blocking read of a 0-dim GPU tensor, every step
    ct = torch.cov(ft.t())  # SYNCSPY-PROBLEM: torch.cov checks its degrees of freedom with a blocking read of a 0-dim GPU tensor, every step
    return (cs - ct).pow(2).sum() / (4.0 * d * d)


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(102)
    xs, ys = make_windows(POOL, False, dev, gen)
    xt, yt = make_windows(POOL + EVAL, True, dev, gen)
    model = HARNet().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = torch.zeros(STEPS, 2, device=dev)  # SYNCSPY-CLEAN: setup allocation

    model.train()
    for step in range(STEPS):
        s = (step * BATCH) % POOL
        f = model.embed(torch.cat([xs[s:s + BATCH], xt[s:s + BATCH]]))  # SYNCSPY-CLEAN: allocator growth in the first steps
        fs, ft = f[:BATCH], f[BATCH:]
        cls_loss = F.cross_entropy(model.classifier(fs), ys[s:s + BATCH])
        da_loss = coral_loss(fs, ft)
        loss = cls_loss + LAMBDA * da_loss
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
        losses[step] = torch.stack([cls_loss.detach(), da_loss.detach()])  # SYNCSPY-CLEAN: the step's losses copied into the loss history on the device (asynchronous device-to-device copy)

    model.eval()
    with torch.no_grad():
        pred = model.classifier(model.embed(xt[POOL:])).argmax(dim=1)  # SYNCSPY-CLEAN: evaluation after the loop
        target_acc = (pred == yt[POOL:]).float().mean()
    first, last, coral_last, acc = torch.stack([losses[:5, 0].mean(), losses[-5:, 0].mean(), losses[-5:, 1].mean(), target_acc]).tolist()  # SYNCSPY-CLEAN: final read
    ok = math.isfinite(first) and math.isfinite(last) and last < first and math.isfinite(coral_last) and coral_last >= 0.0 and 0.0 <= acc <= 1.0
    print("t102_har_coral_torch_cov: steps=%d batch=%d channels=%d samples=%d features=%d result=%s" % (STEPS, BATCH, CHANNELS, SAMPLES, FEAT, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
