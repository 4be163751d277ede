#!/usr/bin/env python3
"""examples/corpus/t161_clean_neural_ode_fixed_grid_rk4.py: corpus workload (PyTorch),
CLEAN. The neural ODE of t156 (the spiral of torchdiffeq's `ode_demo.py`, dy/dt = (y ** 3) A,
1,001 samples over t in [0, 25] computed once in setup; an MLP `ODEFunc`, 2 -> 128 -> 2 with
tanh on y ** 3, learned from batches of 256 ten-sample windows by backpropagating through the
solver, RMSprop) integrated with a fixed-step classic Runge-Kutta 4 on a grid of Python floats
aligned with the samples, one step per sample interval (the fix of t156, torchdiffeq's
`method="rk4"` with `step_size` equal to the spacing, its time grid kept on the host): no
error estimate, no step-size control, no tolerances turned into device tensors, so nothing in
the step loop branches on or reads a CUDA value (t156's adaptive Bogacki-Shampine solver asked
the GPU five times per solver step whether to accept it and how to size the next one, and
uploaded its tolerances with every call). The autonomous `ODEFunc` ignores t; the RK4 stages
are the same launches every step.
Clean: all of it; the marked lines are setup (the spiral computed on the CPU in float64 and
uploaded once, the model uploaded), allocator growth in the first steps (the `odeint_rk4`
forward, backward, RMSprop), the losses read once after the loop, and the solver check after
the loop (the true dynamics integrated from the first sample and compared with the spiral).
Per step on an H100 (estimated from the sizes, fp32 without TF32): 36 evaluations of a
2 -> 128 -> 2 MLP on 256 states and their backward pass, launch-bound, about 2-3 ms.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

DATA_SIZE, T_END, BATCH_TIME, BATCH, HIDDEN, STEPS = 1001, 25.0, 10, 256, 128, 60
SUBSTEPS, LR = 1, 1e-3
TRUE_A = ((-0.1, 2.0), (-2.0, -0.1))


class ODEFunc(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(2, HIDDEN), torch.nn.Tanh(), torch.nn.Linear(HIDDEN, 2))
        for m in self.net.modules():
            if isinstance(m, torch.nn.Linear):
                torch.nn.init.normal_(m.weight, mean=0, std=0.1)
                torch.nn.init.constant_(m.bias, val=0)

    def forward(self, t, y):
        return self.net(y ** 3)


class Lambda(torch.nn.Module):
    def __init__(self, a):
        super().__init__()
        self.register_buffer("a", a)

    def forward(self, t, y):
        return torch.matmul(y ** 3, self.a)


def odeint_rk4(func, y0, n_points, spacing, substeps):
    """Classic RK4 on a fixed grid of Python floats, `substeps` steps per output interval."""
    h = spacing / substeps
    solution, y, t = [y0], y0, 0.0
    for _ in range(n_points - 1):
        for _ in range(substeps):
            k1 = func(t, y)
            k2 = func(t + h / 2, y + (h / 2) * k1)
            k3 = func(t + h / 2, y + (h / 2) * k2)
            k4 = func(t + h, y + h * k3)
            y = y + (h / 6) * (k1 + 2 * k2 + 2 * k3 + k4)
            t += h
        solution.append(y)
    return torch.stack(solution)


def true_spiral():
    """The demo's ground truth, RK4 in float64 on the CPU, 20 steps per sample interval."""
    a = torch.tensor(TRUE_A, dtype=torch.float64)
    f = Lambda(a)
    y, h = torch.tensor([[2.0, 0.0]], dtype=torch.float64), T_END / (DATA_SIZE - 1) / 20
    out = [y]
    for _ in range(DATA_SIZE - 1):
        for _ in range(20):
            k1 = f(None, y)
            k2 = f(None, y + 0.5 * h * k1)
            k3 = f(None, y + 0.5 * h * k2)
            k4 = f(None, y + h * k3)
            y = y + h / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
        out.append(y)
    return torch.stack(out)


def main():
    if not torch.cuda.is_available():
        print("t161_clean_neural_ode_fixed_grid_rk4: no CUDA device, result=SKIP")
        return 1
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(156)
    true_y = true_spiral().float().to(dev)  # SYNCSPY-CLEAN: setup upload, once
    spacing = T_END / (DATA_SIZE - 1)
    true_func = Lambda(torch.tensor(TRUE_A)).to(dev)  # SYNCSPY-CLEAN: setup upload, once
    func = ODEFunc().to(dev)  # SYNCSPY-CLEAN: setup upload
    optimizer = torch.optim.RMSprop(func.parameters(), lr=LR)
    losses = []

    for itr in range(STEPS):
        optimizer.zero_grad()
        s = torch.randint(0, DATA_SIZE - BATCH_TIME, (BATCH,), device=dev, generator=gen)
        batch_y0 = true_y[s]
        batch_y = torch.stack([true_y[s + i] for i in range(BATCH_TIME)], dim=0)
        pred_y = odeint_rk4(func, batch_y0, BATCH_TIME, spacing, SUBSTEPS)  # SYNCSPY-CLEAN: growth, first steps
        loss = torch.mean(torch.abs(pred_y - batch_y))
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        optimizer.step()  # SYNCSPY-CLEAN: RMSprop state allocated on the first step
        losses.append(loss.detach())

    hist = torch.stack(losses).cpu()  # SYNCSPY-CLEAN: final read
    with torch.no_grad():
        check = odeint_rk4(true_func, true_y[0], 41, spacing, SUBSTEPS)
        solver_err = (check - true_y[:41]).abs().max().item()  # SYNCSPY-CLEAN: final read, check
    first, last = hist[:10].mean().item(), hist[-10:].mean().item()
    ok = (math.isfinite(first) and math.isfinite(last) and last < 0.8 * first
          and solver_err < 1e-3 and hist.numel() == STEPS)
    print("t161_clean_neural_ode_fixed_grid_rk4: steps=%d batch=%d window=%d hidden=%d "
          "result=%s" % (STEPS, BATCH, BATCH_TIME, HIDDEN, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
