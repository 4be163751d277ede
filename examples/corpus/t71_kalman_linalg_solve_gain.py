#!/usr/bin/env python3
"""examples/corpus/t71_kalman_linalg_solve_gain.py: corpus workload (PyTorch). Learning the
parameters of a linear-Gaussian state-space model (transition, observation matrix, diagonal
process and measurement noise) for multivariate sensor series by maximizing the Kalman
filter's likelihood, with the filter written in batched torch and differentiated end to end.
The innovation covariance S is factored with `torch.linalg.cholesky_ex` for the
log-likelihood (the `_ex` variants return `info` as a tensor and do not check it), but the
Kalman gain is computed with `torch.linalg.solve(S, C P)`: the PyTorch documentation of
`torch.linalg.solve` says that on a CUDA device it synchronizes the device with the CPU (it is
`linalg_solve_ex` followed by `_linalg_check_errors`, which reads `info` on the host) and
points to `torch.linalg.solve_ex` for a version that does not. The read waits for everything
queued so far, once per filter time step (HORIZON of them), every training step.
`torch.cholesky_solve(PCᵀ, L)` with the factor already computed is the asynchronous fix.
Planted: the `torch.linalg.solve` line in KalmanFilter.update, every time step of every
training step.
Clean: setup (the synthetic series generated on the GPU), allocator growth in the first steps,
`cholesky_ex` and `solve_triangular` (no error check), the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

STEPS, SERIES, LENGTH, HORIZON, BATCH, STATE, OBS = 40, 512, 96, 12, 64, 6, 3


class StateSpaceModel(torch.nn.Module):
    """x_t = A x_{t-1} + w_t, y_t = C x_t + v_t, w ~ N(0, diag(q)), v ~ N(0, diag(r))."""

    def __init__(self):
        super().__init__()
        self.A = torch.nn.Parameter(0.85 * torch.eye(STATE) + 0.02 * torch.randn(STATE, STATE))
        self.C = torch.nn.Parameter(0.3 * torch.randn(OBS, STATE))
        self.log_q = torch.nn.Parameter(torch.full((STATE,), -2.0))
        self.log_r = torch.nn.Parameter(torch.full((OBS,), -1.0))

    def process_noise(self):
        return torch.diag(self.log_q.exp())

    def measurement_noise(self):
        return torch.diag(self.log_r.exp())


class KalmanFilter:
    def __init__(self, model):
        self.m = model

    def predict(self, mean, cov):
        A = self.m.A
        return mean @ A.T, A @ cov @ A.T + self.m.process_noise()

    def update(self, mean, cov, y):
        C = self.m.C
        S = C @ cov @ C.T + self.m.measurement_noise()
        PCt = cov @ C.T
        gain = torch.linalg.solve(S, PCt.transpose(-1, -2)).transpose(-1, -2)  # SYNCSPY-PROBLEM: linalg.solve checks info on the host on CUDA (blocking read), every filter time step
        resid = y - mean @ C.T
        L, _ = torch.linalg.cholesky_ex(S)
        z = torch.linalg.solve_triangular(L, resid.unsqueeze(-1), upper=False).squeeze(-1)
        nll = 0.5 * (z * z).sum(-1) + torch.log(torch.diagonal(L, dim1=-2, dim2=-1)).sum(-1) + 0.5 * OBS * math.log(2 * math.pi)
        mean = mean + (gain @ resid.unsqueeze(-1)).squeeze(-1)
        cov = cov - gain @ C @ cov
        cov = 0.5 * (cov + cov.transpose(-1, -2))
        return mean, cov, nll

    def log_likelihood_loss(self, ys):
        b = ys.shape[0]
        mean = ys.new_zeros(b, STATE)
        cov = torch.eye(STATE, device=ys.device).expand(b, STATE, STATE)
        total = ys.new_zeros(b)
        for t in range(ys.shape[1]):
            mean, cov = self.predict(mean, cov)
            mean, cov, nll = self.update(mean, cov, ys[:, t])
            total = total + nll
        return total.mean() / ys.shape[1]


def simulate(dev, gen):
    """Ground-truth series from a slowly rotating latent oscillator."""
    theta = 0.2
    rot = torch.tensor([[math.cos(theta), -math.sin(theta)], [math.sin(theta), math.cos(theta)]])
    A = torch.block_diag(0.97 * rot, 0.95 * rot, 0.9 * rot).to(dev)  # SYNCSPY-CLEAN: setup upload
    C = torch.randn(OBS, STATE, device=dev, generator=gen) * 0.5  # SYNCSPY-CLEAN: setup allocation
    x = torch.randn(SERIES, STATE, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    ys = torch.empty(SERIES, LENGTH, OBS, device=dev)  # SYNCSPY-CLEAN: setup allocation
    for t in range(LENGTH):
        x = x @ A.T + 0.1 * torch.randn(SERIES, STATE, device=dev, generator=gen)
        ys[:, t] = x @ C.T + 0.2 * torch.randn(SERIES, OBS, device=dev, generator=gen)
    return ys


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(5)
    ys = simulate(dev, gen)
    model = StateSpaceModel().to(dev)  # SYNCSPY-CLEAN: setup upload
    kf = KalmanFilter(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation

    windows = (SERIES // BATCH) * ((LENGTH - HORIZON) // HORIZON)
    for step in range(STEPS):
        w = step % windows
        s0 = (w % (SERIES // BATCH)) * BATCH
        t0 = (w // (SERIES // BATCH)) * HORIZON
        batch = ys[s0:s0 + BATCH, t0:t0 + HORIZON]
        loss = kf.log_likelihood_loss(batch)  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
        loss_sum += loss.detach()

    mean_nll = loss_sum.item() / STEPS  # SYNCSPY-CLEAN: final read
    ok = math.isfinite(mean_nll)
    print("t71_kalman_linalg_solve_gain: steps=%d batch=%d horizon=%d state=%d result=OK" % (STEPS, BATCH, HORIZON, STATE))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
