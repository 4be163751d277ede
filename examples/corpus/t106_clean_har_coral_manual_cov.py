#!/usr/bin/env python3
"""examples/corpus/t106_clean_har_coral_manual_cov.py: corpus workload (PyTorch), CLEAN.
The phone-to-smartwatch activity-recognition adaptation of t102 (a 1-D CNN on 6-axis inertial
windows, cross-entropy on the labelled phone windows plus the Deep CORAL loss) with the
covariances written out: the features are centred and multiplied by their transpose, divided by
n-1, the batch size being known on the host, so the loss reads nothing back (t102's `torch.cov`
checks its degrees of freedom with a blocking read). Two epochs of 25 steps; each epoch draws a
new device-side `torch.randperm` of each domain's windows (indexing with device indices, no
host copy); the adaptation is measured by the target-domain accuracy, computed on the GPU and
read once per epoch, outside the step loop, with the CORAL distance.
Clean: all of it; the marked lines are setup, the per-epoch permutations and evaluation read,
allocator growth in the first steps and the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

EPOCHS, STEPS_PER_EPOCH, BATCH, POOL, EVAL = 2, 25, 256, 6400, 2048
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


def covariance(f):
    """Unbiased feature covariance (observations in rows); n is a host int."""
    fc = f - f.mean(dim=0, keepdim=True)
    return fc.t() @ fc / (f.shape[0] - 1)


def coral_loss(fs, ft):
    """Deep CORAL: squared Frobenius distance of the feature covariances, over 4 d^2."""
    d = fs.shape[1]
    return (covariance(fs) - covariance(ft)).pow(2).sum() / (4.0 * d * d)


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(106)
    xs, ys = make_windows(POOL, False, dev, gen)
    xt, yt = make_windows(POOL + EVAL, True, dev, gen)
    model = HARNet().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = torch.zeros(EPOCHS * STEPS_PER_EPOCH, device=dev)  # SYNCSPY-CLEAN: setup allocation
    history = []

    for epoch in range(EPOCHS):
        ps = torch.randperm(POOL, device=dev, generator=gen)  # SYNCSPY-CLEAN: once per epoch, a device permutation of the source windows
        pt = torch.randperm(POOL, device=dev, generator=gen)  # SYNCSPY-CLEAN: once per epoch, a device permutation of the target windows
        model.train()
        for i in range(STEPS_PER_EPOCH):
            step = epoch * STEPS_PER_EPOCH + i
            bs, bt = ps[i * BATCH:(i + 1) * BATCH], pt[i * BATCH:(i + 1) * BATCH]
            f = model.embed(torch.cat([xs[bs], xt[bt]]))  # SYNCSPY-CLEAN: allocator growth in the first steps
            fs, ft = f[:BATCH], f[BATCH:]
            loss = F.cross_entropy(model.classifier(fs), ys[bs]) + LAMBDA * coral_loss(fs, ft)
            opt.zero_grad(set_to_none=True)
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
            losses[step] = loss.detach()  # SYNCSPY-CLEAN: the step's loss copied into the loss history on the device (asynchronous device-to-device copy)
        model.eval()
        with torch.no_grad():
            ft_eval = model.embed(xt[POOL:])  # SYNCSPY-CLEAN: evaluation once per epoch, outside the step loop
            acc = (model.classifier(ft_eval).argmax(dim=1) == yt[POOL:]).float().mean()
            dist = coral_loss(model.embed(xs[:EVAL]), ft_eval)  # SYNCSPY-CLEAN: evaluation once per epoch, outside the step loop
            history.append(torch.stack([acc, dist]).tolist())  # SYNCSPY-CLEAN: evaluation read once per epoch, outside the step loop

    first, last = torch.stack([losses[:5].mean(), losses[-5:].mean()]).tolist()  # SYNCSPY-CLEAN: final read
    ok = math.isfinite(first) and math.isfinite(last) and last < first and len(history) == EPOCHS and all(0.0 <= a <= 1.0 and math.isfinite(d) and d >= 0.0 for a, d in history)
    print("t106_clean_har_coral_manual_cov: epochs=%d steps=%d batch=%d channels=%d samples=%d features=%d result=%s" % (EPOCHS, EPOCHS * STEPS_PER_EPOCH, BATCH, CHANNELS, SAMPLES, FEAT, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
