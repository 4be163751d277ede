#!/usr/bin/env python3
"""examples/corpus/t48_gp_cholesky_error_check.py: corpus workload (PyTorch). Exact Gaussian
process regression whose kernel hyperparameters (ARD lengthscales, output scale, noise) are
fitted by minimizing the negative marginal log-likelihood with Adam, in float64 on the GPU.
Every step factors the kernel matrix with `torch.linalg.cholesky(K)`. On a CUDA input that
function checks the factorization's `info` on the host (at::_linalg_check_errors:
`infos.any().item()`), so it synchronizes the device with the CPU every call; the PyTorch
documentation says so and points to `torch.linalg.cholesky_ex`, which returns `info` as a
device tensor instead. The wait covers the kernel-matrix build and the previous step's backward
and Adam update. The triangular solves (`solve_triangular`, no error check) and the backward
pass are asynchronous.
Planted: `torch.linalg.cholesky(K)` in the marginal-likelihood method, every step.
Clean: setup, allocator growth in the first steps (the n x n kernel matrices), the Cholesky
factorization of the prediction once after training, the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

N_TRAIN, N_TEST, DIM, STEPS, LR = 1024, 256, 4, 60, 0.05


def target_fn(x):
    return torch.sin(2.0 * x[:, 0]) + 0.5 * torch.cos(3.0 * x[:, 1]) + 0.25 * x[:, 2]


class RBFKernel(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.raw_lengthscale = torch.nn.Parameter(torch.zeros(dim, dtype=torch.float64))
        self.raw_outputscale = torch.nn.Parameter(torch.zeros((), dtype=torch.float64))

    def forward(self, a, b):
        lengthscale = F.softplus(self.raw_lengthscale) + 1e-3
        a, b = a / lengthscale, b / lengthscale
        sq_dist = (a * a).sum(-1, keepdim=True) - 2.0 * (a @ b.T) + (b * b).sum(-1)  # SYNCSPY-CLEAN: allocator growth in the first steps (n x n)
        return F.softplus(self.raw_outputscale) * torch.exp(-0.5 * sq_dist.clamp_min(0.0))  # SYNCSPY-CLEAN: allocator growth in the first steps (n x n)


class ExactGP(torch.nn.Module):
    def __init__(self, x, y):
        super().__init__()
        self.register_buffer("x", x)
        self.register_buffer("y", y)
        self.register_buffer("eye", torch.eye(x.shape[0], dtype=x.dtype, device=x.device))  # SYNCSPY-CLEAN: setup allocation
        self.kernel = RBFKernel(x.shape[1])
        self.raw_noise = torch.nn.Parameter(torch.full((), -2.0, dtype=torch.float64))

    def noise(self):
        return F.softplus(self.raw_noise) + 1e-4

    def neg_marginal_log_likelihood(self):
        n = self.x.shape[0]
        K = self.kernel(self.x, self.x) + self.noise() * self.eye  # SYNCSPY-CLEAN: allocator growth in the first steps (n x n)
        L = torch.linalg.cholesky(K)  # SYNCSPY-PROBLEM: linalg.cholesky checks info on the host (device sync), every step
        alpha = torch.linalg.solve_triangular(L, self.y.unsqueeze(-1), upper=False)
        data_fit = 0.5 * (alpha * alpha).sum()
        log_det = torch.log(torch.diagonal(L)).sum()
        return (data_fit + log_det) / n + 0.5 * math.log(2.0 * math.pi)

    @torch.no_grad()
    def predict(self, x_new):
        K = self.kernel(self.x, self.x) + self.noise() * self.eye
        L = torch.linalg.cholesky(K)  # SYNCSPY-CLEAN: once, after training
        v = torch.linalg.solve_triangular(L, self.y.unsqueeze(-1), upper=False)
        alpha = torch.linalg.solve_triangular(L.T, v, upper=True)
        return (self.kernel(x_new, self.x) @ alpha).squeeze(-1)


class GPTrainer:
    def __init__(self, model, dev):
        self.model = model
        self.opt = torch.optim.Adam(model.parameters(), lr=LR)
        self.history = torch.zeros(STEPS, dtype=torch.float64, device=dev)  # SYNCSPY-CLEAN: setup allocation

    def fit(self):
        self.model.train()
        for step in range(STEPS):
            self.opt.zero_grad(set_to_none=True)
            loss = self.model.neg_marginal_log_likelihood()  # SYNCSPY-CLEAN: allocator growth in the first steps
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            self.opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
            self.history[step] = loss.detach()
        return self.history


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(5)
    x_train = torch.rand(N_TRAIN, DIM, dtype=torch.float64, device=dev, generator=gen) * 4.0 - 2.0  # SYNCSPY-CLEAN: setup allocation
    y_train = target_fn(x_train) + 0.05 * torch.randn(N_TRAIN, dtype=torch.float64, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    x_test = torch.rand(N_TEST, DIM, dtype=torch.float64, device=dev, generator=gen) * 4.0 - 2.0  # SYNCSPY-CLEAN: setup allocation

    model = ExactGP(x_train, y_train).to(dev)  # SYNCSPY-CLEAN: setup upload of the hyperparameters
    history = GPTrainer(model, dev).fit()

    pred = model.predict(x_test)
    rmse = torch.sqrt(((pred - target_fn(x_test)) ** 2).mean())
    first, last, err = torch.stack([history[0], history[-1], rmse]).tolist()  # SYNCSPY-CLEAN: final read
    ok = last < first and err < 0.5
    print("t48_gp_cholesky_error_check: steps=%d n=%d fitted=%d result=OK" % (STEPS, N_TRAIN, int(ok)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
