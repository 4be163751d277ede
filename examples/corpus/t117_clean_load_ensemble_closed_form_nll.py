#!/usr/bin/env python3
"""examples/corpus/t117_clean_load_ensemble_closed_form_nll.py: corpus workload (PyTorch),
CLEAN. The deep-ensemble load forecaster of t110 (five MLPs with three hidden layers of 1,536, a
week of hourly load and the hour of day in, a mean and a variance for each of the next 24 hours
out, each member trained on its own with AdamW on 2,048 windows drawn on the GPU) with the loss
helper written out in closed form, `0.5 * (log(var) + (target - mu)**2 / var + log(2*pi))`, the
fix of t110: the variance is `softplus(...) + 1e-4`, positive by construction, and without
`F.gaussian_nll_loss`'s `torch.any(var < 0)` check no member's step reads anything back, so the
host queues the five members' steps ahead of the GPU. The validation NLL of the mixture uses the
same closed form once per epoch. After the loop the closed form is checked against
`F.gaussian_nll_loss(full=True)` on the CPU, on downloaded predictions.
Clean: all of it; the marked lines are setup (the meter series generated on the GPU, the
validation windows drawn once), windows gathered on the device from device-drawn offsets,
allocator growth in the first steps, the validation NLL read once per epoch outside the step loop,
the final reads.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

EPOCHS, STEPS_PER_EPOCH, BATCH, VAL_BATCH, MEMBERS = 2, 20, 2048, 4096, 5
METERS, HOURS, HISTORY, HORIZON, HIDDEN = 64, 17520, 168, 24, 1536


class MemberNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Sequential(
            torch.nn.Linear(HISTORY + 24, HIDDEN), torch.nn.ReLU(),
            torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.ReLU(),
            torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.ReLU(),
            torch.nn.Linear(HIDDEN, 2 * HORIZON))

    def forward(self, x):
        mu, raw = self.body(x).chunk(2, dim=1)
        return mu, F.softplus(raw) + 1e-4


def heteroscedastic_nll(mu, target, var):
    """Gaussian negative log-likelihood with the constant, averaged; var > 0 by construction."""
    return 0.5 * (torch.log(var) + (target - mu).square() / var + math.log(2 * math.pi)).mean()


def make_series(dev, gen):
    """Base load, daily and weekly cycles with meter-specific phase, noise whose scale follows the hour of day."""
    t = torch.arange(HOURS, device=dev, dtype=torch.float32)  # SYNCSPY-CLEAN: setup allocation
    base = 1.0 + torch.rand(METERS, 1, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    phase = 2 * math.pi * torch.rand(METERS, 2, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    daily = torch.sin(2 * math.pi * t / 24 + phase[:, :1])  # SYNCSPY-CLEAN: setup allocation
    weekly = torch.sin(2 * math.pi * t / 168 + phase[:, 1:])  # SYNCSPY-CLEAN: setup allocation
    scale = 0.05 + 0.25 * (1 + torch.sin(2 * math.pi * t / 24)) / 2  # SYNCSPY-CLEAN: setup allocation
    noise = torch.randn(METERS, HOURS, device=dev, generator=gen) * scale  # SYNCSPY-CLEAN: setup allocation
    return base * (1.0 + 0.4 * daily + 0.2 * weekly) + noise  # SYNCSPY-CLEAN: setup allocation


def draw_windows(series, n, gen, offsets):
    """n windows of HISTORY + HORIZON hours at device-drawn meters and starts; inputs are the history and the hour of day."""
    meter = torch.randint(0, METERS, (n, 1), device=series.device, generator=gen)
    start = torch.randint(0, HOURS - HISTORY - HORIZON, (n, 1), device=series.device, generator=gen)
    window = series[meter, start + offsets]  # SYNCSPY-CLEAN: the windows gathered on the device (a large temporary, allocator growth in the first steps)
    hour = F.one_hot((start.squeeze(1) + HISTORY) % 24, 24).float()
    return torch.cat([window[:, :HISTORY], hour], dim=1), window[:, HISTORY:]  # SYNCSPY-CLEAN: the model inputs (a large temporary, allocator growth in the first steps)


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(117)
    series = make_series(dev, gen)
    offsets = torch.arange(HISTORY + HORIZON, device=dev).unsqueeze(0)  # SYNCSPY-CLEAN: setup allocation
    members = [MemberNet().to(dev) for _ in range(MEMBERS)]  # SYNCSPY-CLEAN: setup upload
    opts = [torch.optim.AdamW(m.parameters(), lr=3e-4, weight_decay=1e-4) for m in members]
    x_val, y_val = draw_windows(series, VAL_BATCH, gen, offsets)  # SYNCSPY-CLEAN: setup, the validation windows drawn once
    losses = torch.zeros(EPOCHS * STEPS_PER_EPOCH, MEMBERS, device=dev)  # SYNCSPY-CLEAN: setup allocation
    val_nll = []

    for epoch in range(EPOCHS):
        for net in members:
            net.train()
        for i in range(STEPS_PER_EPOCH):
            step = epoch * STEPS_PER_EPOCH + i
            x, y = draw_windows(series, BATCH, gen, offsets)
            for k, (net, opt) in enumerate(zip(members, opts)):
                mu, var = net(x)  # SYNCSPY-CLEAN: allocator growth in the first steps
                loss = heteroscedastic_nll(mu, y, var)
                opt.zero_grad(set_to_none=True)
                loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
                opt.step()  # SYNCSPY-CLEAN: AdamW state allocated on the first step
                losses[step, k] = loss.detach()  # SYNCSPY-CLEAN: the member's loss copied into the history on the device (asynchronous device-to-device copy)
        with torch.no_grad():
            for net in members:
                net.eval()
            outs = [net(x_val) for net in members]  # SYNCSPY-CLEAN: validation once per epoch, outside the step loop
            mus, variances = torch.stack([m for m, _ in outs]), torch.stack([v for _, v in outs])
            mix_mu, mix_var = mus.mean(dim=0), variances.mean(dim=0) + mus.var(dim=0, unbiased=False)
            val_nll.append(heteroscedastic_nll(mix_mu, y_val, mix_var).item())  # SYNCSPY-CLEAN: once per epoch, outside the step loop

    first, last = losses[:3].mean().item(), losses[-3:].mean().item()  # SYNCSPY-CLEAN: final read
    mu_cpu, y_cpu, var_cpu = mix_mu.cpu(), y_val.cpu(), mix_var.cpu()  # SYNCSPY-CLEAN: final read for the CPU reference
    ref = F.gaussian_nll_loss(mu_cpu, y_cpu, var_cpu, full=True, eps=1e-6).item()
    ok = math.isfinite(first) and math.isfinite(last) and last < first and all(math.isfinite(v) for v in val_nll) and abs(ref - val_nll[-1]) < 1e-4 * max(1.0, abs(ref))
    print("t117_clean_load_ensemble_closed_form_nll: epochs=%d steps=%d batch=%d members=%d hidden=%d horizon=%d result=%s" % (EPOCHS, EPOCHS * STEPS_PER_EPOCH, BATCH, MEMBERS, HIDDEN, HORIZON, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
