#!/usr/bin/env python3
"""examples/corpus/t82_clean_tcn_forecast_pinned_windowed.py: corpus workload (PyTorch), CLEAN.
Multi-horizon load forecasting with a temporal convolutional network (dilated causal Conv1d
residual blocks) on windows of a multivariate series. The series is built on the host and
pinned once; every step's window batch is gathered on the host into one of two pinned staging
buffers and uploaded with `.to(dev, non_blocking=True)` (an asynchronous copy from page-locked
memory; before a staging buffer is refilled, the host waits on the event recorded after the
upload that last read it, two steps back). `cudnn.benchmark` is on with one fixed window shape
(one autotuning in the first step). The logger's debug line uses lazy %-formatting at INFO
level, so the tensor is never formatted. The gradient norm from `clip_grad_norm_` and the loss
are summed on the GPU; the loss window is read every 20 steps (one read per logging window,
outside the per-step cost), OneCycleLR runs on the host, and one `torch.cuda.synchronize()`
after the loop ends the timing.
"""
import logging
import math
import os
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

STEPS, BATCH, SERIES_LEN, CHANNELS, WINDOW, HORIZON, LOG_EVERY = 60, 128, 20000, 8, 168, 24, 20
log = logging.getLogger("tcn")


class CausalBlock(torch.nn.Module):
    def __init__(self, c, dilation):
        super().__init__()
        self.pad = 2 * dilation
        self.c1 = torch.nn.Conv1d(c, c, 3, dilation=dilation)
        self.c2 = torch.nn.Conv1d(c, c, 3, dilation=dilation)

    def forward(self, x):
        y = F.gelu(self.c1(F.pad(x, (self.pad, 0))))
        return x + self.c2(F.pad(y, (self.pad, 0)))


class TCN(torch.nn.Module):
    def __init__(self, hidden=64):
        super().__init__()
        self.inp = torch.nn.Conv1d(CHANNELS, hidden, 1)
        self.blocks = torch.nn.Sequential(*[CausalBlock(hidden, d) for d in (1, 2, 4, 8, 16)])
        self.head = torch.nn.Linear(hidden, HORIZON * CHANNELS)

    def forward(self, x):
        h = self.blocks(self.inp(x.transpose(1, 2)))[..., -1]
        return self.head(h).view(-1, HORIZON, CHANNELS)


def make_series():
    g = torch.Generator().manual_seed(12)
    t = torch.arange(SERIES_LEN, dtype=torch.float32).unsqueeze(1)
    phase = torch.rand(1, CHANNELS, generator=g) * 6.28
    daily = torch.sin(2 * math.pi * t / 24 + phase)
    weekly = 0.5 * torch.sin(2 * math.pi * t / 168 + phase)
    return (daily + weekly + 0.1 * torch.randn(SERIES_LEN, CHANNELS, generator=g)).pin_memory()  # SYNCSPY-CLEAN: setup, the series pinned once


def main():
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    series = make_series()
    starts = torch.randint(0, SERIES_LEN - WINDOW - HORIZON, (STEPS, BATCH), generator=torch.Generator().manual_seed(3))
    offs = torch.arange(WINDOW + HORIZON)
    staging = [torch.empty(BATCH, WINDOW + HORIZON, CHANNELS, pin_memory=True) for _ in range(2)]  # SYNCSPY-CLEAN: setup, two pinned staging buffers allocated once
    uploaded = [torch.cuda.Event() for _ in range(2)]
    model = TCN().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-2)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=STEPS)
    window_loss = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
    norm_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
    logged = []

    t0 = time.perf_counter()
    for step in range(STEPS):
        buf = staging[step % 2]
        if step >= 2:
            uploaded[step % 2].synchronize()  # SYNCSPY-CLEAN: double buffer: the upload two steps back, long finished
        torch.index_select(series, 0, (starts[step].unsqueeze(1) + offs).reshape(-1), out=buf.view(-1, CHANNELS))
        batch = buf.to(dev, non_blocking=True)  # SYNCSPY-CLEAN: asynchronous copy from pinned memory
        uploaded[step % 2].record()
        x, y = batch[:, :WINDOW], batch[:, WINDOW:]
        pred = model(x)  # SYNCSPY-CLEAN: cudnn.benchmark autotunes once (one fixed shape), allocator growth in the first steps
        loss = F.smooth_l1_loss(pred, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        gnorm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()  # SYNCSPY-CLEAN: AdamW state allocated on the first step
        sched.step()
        log.debug("step %d grad norm %s", step, gnorm)
        norm_sum += gnorm
        window_loss += loss.detach()
        if (step + 1) % LOG_EVERY == 0:
            logged.append(round(window_loss.item() / LOG_EVERY, 3))  # SYNCSPY-CLEAN: one read per logging window (every 20 steps)
            window_loss.zero_()

    torch.cuda.synchronize()  # SYNCSPY-CLEAN: once after the loop, to end the timing
    elapsed = time.perf_counter() - t0
    mean_norm = norm_sum.item() / STEPS  # SYNCSPY-CLEAN: final read
    ok = len(logged) == STEPS // LOG_EVERY and all(math.isfinite(v) for v in logged) and math.isfinite(mean_norm) and elapsed >= 0.0
    print("t82_clean_tcn_forecast_pinned_windowed: steps=%d batch=%d window=%d horizon=%d logs=%d result=OK" % (STEPS, BATCH, WINDOW, HORIZON, len(logged)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
