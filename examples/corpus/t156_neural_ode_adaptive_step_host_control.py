#!/usr/bin/env python3
"""examples/corpus/t156_neural_ode_adaptive_step_host_control.py: corpus workload (PyTorch).
Neural ODE: the spiral of torchdiffeq's `ode_demo.py` (dy/dt = (y ** 3) A, 1,001 samples over
t in [0, 25], computed once in setup), learned by an MLP `ODEFunc` (2 -> 128 -> 2, tanh, on
y ** 3) from batches of 256 ten-sample windows, with `odeint` backpropagated directly (no
adjoint) and RMSprop, as in the demo. The solver is an adaptive Bogacki-Shampine 3(2)
integrator written in torchdiffeq's shape (`RKAdaptiveStepsizeODESolver`): time-like values
(t, dt, the tolerances and step factors) are float64 0-dim tensors on the state's device, the
solver object is built by every `odeint` call, and the step control runs in Python on them:
`_check_inputs` asserts that t increases, `__init__` turns the tolerances and factors into
device tensors with `torch.as_tensor(..., device=...)`, `_advance` loops
`while next_t > self.rk_state.t1:`, `_adaptive_step` asserts `torch.isfinite(y0).all()` and
branches `if accept_step:` on `error_ratio <= 1`, and `_optimal_step_size` branches
`if error_ratio == 0:` and `if error_ratio < 1:` and builds the exponent with
`torch.tensor(order, device=...)`. Every `if`, `while` and `assert` on a CUDA tensor is
`Tensor.__bool__`, an `.item()` (the Performance Tuning Guide lists "python control flow which
depends on results of operations performed on CUDA tensors" among the CPU-GPU synchronizations
to avoid; `torch.cuda.set_sync_debug_mode("warn")` reports them), and `torch.as_tensor` /
`torch.tensor` of a Python number with a CUDA device build it in pageable memory and copy it
with a blocking upload (`memcpy_and_sync`). Each training step's first check waits for the
previous step's backward pass and update; then each solver step (three evaluations of the
MLP) ends in five more round trips, so the GPU idles while the host decides every step.
Fix (t161): a fixed-step RK4 on a grid of Python floats aligned with the samples (two steps
per sample interval): no step control, nothing read back.
Planted: the eight marked lines of the solver (one problem): `_check_inputs`'s assert (the
first sync of each step, expensive: behind the previous backward pass and RMSprop update), the
`torch.as_tensor` line in `__init__` (six uploads), and per solver step the `while`, the
finiteness assert, `if accept_step:` (behind the stage evaluations), the two branches and the
`torch.tensor(order, ...)` upload of `_optimal_step_size`.
Clean: setup (the spiral computed on the CPU in float64 and uploaded once with its time grid,
the model uploaded), allocator growth in the first steps (the `odeint` forward, backward,
RMSprop), the losses read once after the loop, the solver check after the loop.
Per step on an H100 (estimated from the sizes, fp32 without TF32): a few dozen evaluations of
a 2 -> 128 -> 2 MLP on 256 states and their backward pass, launch-bound, about 3-4 ms.
"""
import math
import os
import sys
from typing import NamedTuple, Optional

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

DATA_SIZE, T_END, BATCH_TIME, BATCH, HIDDEN, STEPS = 1001, 25.0, 10, 256, 128, 60
RTOL, ATOL, FIRST_STEP, LR = 1e-4, 1e-5, 0.01, 1e-3
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


class _RungeKuttaState(NamedTuple):
    y1: torch.Tensor
    f1: torch.Tensor
    t0: torch.Tensor
    t1: torch.Tensor
    dt: torch.Tensor
    interp_coeff: Optional[tuple]


def _rms_norm(tensor):
    return tensor.abs().pow(2).mean().sqrt()


def _hermite_evaluate(coeff, t0, t1, t):
    y0, f0, y1, f1 = coeff
    h = t1 - t0
    s = (t - t0) / h
    return ((2 * s ** 3 - 3 * s ** 2 + 1) * y0 + (s ** 3 - 2 * s ** 2 + s) * h * f0
            + (-2 * s ** 3 + 3 * s ** 2) * y1 + (s ** 3 - s ** 2) * h * f1)


def _optimal_step_size(last_step, error_ratio, safety, ifactor, dfactor, order):
    """Calculate the optimal size for the next step."""
    if error_ratio == 0:  # SYNCSPY-PROBLEM: host branch on a CUDA tensor, every solver step
        return last_step * ifactor
    if error_ratio < 1:  # SYNCSPY-PROBLEM: host branch on a CUDA tensor, every solver step
        dfactor = torch.ones((), dtype=last_step.dtype, device=last_step.device)
    error_ratio = error_ratio.type_as(last_step)
    exponent = torch.tensor(order, dtype=last_step.dtype, device=last_step.device).reciprocal()  # SYNCSPY-PROBLEM: blocking upload
    factor = torch.min(ifactor, torch.max(safety / error_ratio ** exponent, dfactor))
    return last_step * factor


class Bosh3Solver:
    """Bogacki-Shampine 3(2) with adaptive steps, FSAL, cubic Hermite output."""
    order = 3

    def __init__(self, func, y0, rtol, atol, first_step, safety=0.9, ifactor=10.0, dfactor=0.2):
        dtype, device = torch.float64, y0.device
        self.func, self.y0 = func, y0
        self.rtol, self.atol, self.first_step, self.safety, self.ifactor, self.dfactor = (torch.as_tensor(v, dtype=dtype, device=device) for v in (rtol, atol, first_step, safety, ifactor, dfactor))  # SYNCSPY-PROBLEM: 6 blocking uploads
        self.n_steps = 0

    def integrate(self, t):
        solution = [self.y0]
        f0 = self.func(t[0], self.y0)
        self.rk_state = _RungeKuttaState(self.y0, f0, t[0], t[0], self.first_step, None)
        for i in range(1, len(t)):
            solution.append(self._advance(t[i]))
        return torch.stack(solution)

    def _advance(self, next_t):
        while next_t > self.rk_state.t1:  # SYNCSPY-PROBLEM: host loop condition on CUDA tensors
            self.rk_state = self._adaptive_step(self.rk_state)
            self.n_steps += 1
        return _hermite_evaluate(self.rk_state.interp_coeff, self.rk_state.t0, self.rk_state.t1, next_t)

    def _adaptive_step(self, rk_state):
        y0, f0, _, t0, dt, interp_coeff = rk_state
        assert torch.isfinite(y0).all(), "non-finite values in state `y`"  # SYNCSPY-PROBLEM: assert on a CUDA tensor
        t1 = t0 + dt
        k2 = self.func(t0 + 0.5 * dt, y0 + dt * (0.5 * f0))
        k3 = self.func(t0 + 0.75 * dt, y0 + dt * (0.75 * k2))
        y1 = y0 + dt * (2.0 / 9.0 * f0 + 1.0 / 3.0 * k2 + 4.0 / 9.0 * k3)
        f1 = self.func(t1, y1)
        y1_error = dt * (-5.0 / 72.0 * f0 + 1.0 / 12.0 * k2 + 1.0 / 9.0 * k3 - 1.0 / 8.0 * f1)
        error_tol = self.atol + self.rtol * torch.max(y0.abs(), y1.abs())
        error_ratio = _rms_norm(y1_error / error_tol)
        accept_step = error_ratio <= 1
        if accept_step:  # SYNCSPY-PROBLEM: host branch on a CUDA tensor, behind the stage evaluations
            t_next, y_next, f_next = t1, y1, f1
            interp_coeff = (y0, f0, y1, f1)
        else:
            t_next, y_next, f_next = t0, y0, f0
        dt_next = _optimal_step_size(dt, error_ratio, self.safety, self.ifactor, self.dfactor, self.order)
        return _RungeKuttaState(y_next, f_next, t0, t_next, dt_next, interp_coeff)


def _check_inputs(y0, t):
    assert t.is_floating_point() and y0.is_floating_point()
    assert (t[1:] > t[:-1]).all(), "t must be strictly increasing"  # SYNCSPY-PROBLEM: assert on a CUDA tensor


def odeint(func, y0, t, rtol, atol, first_step):
    _check_inputs(y0, t)
    solver = Bosh3Solver(func, y0, rtol, atol, first_step)
    return solver.integrate(t), solver.n_steps


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
        print("t156_neural_ode_adaptive_step_host_control: no CUDA device, result=SKIP")
        return 1
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(156)
    true_y = true_spiral().float().to(dev)  # SYNCSPY-CLEAN: setup upload, once
    t = torch.linspace(0.0, T_END, DATA_SIZE, dtype=torch.float64).to(dev)  # SYNCSPY-CLEAN: setup upload, once
    true_func = Lambda(torch.tensor(TRUE_A)).to(dev)  # SYNCSPY-CLEAN: setup upload, once
    func = ODEFunc().to(dev)  # SYNCSPY-CLEAN: setup upload
    optimizer = torch.optim.RMSprop(func.parameters(), lr=LR)
    losses, solver_steps = [], 0

    for itr in range(STEPS):
        optimizer.zero_grad()
        s = torch.randint(0, DATA_SIZE - BATCH_TIME, (BATCH,), device=dev, generator=gen)
        batch_y0, batch_t = true_y[s], t[:BATCH_TIME]
        batch_y = torch.stack([true_y[s + i] for i in range(BATCH_TIME)], dim=0)
        pred_y, n = odeint(func, batch_y0, batch_t, RTOL, ATOL, FIRST_STEP)  # SYNCSPY-CLEAN: growth, first steps
        loss = torch.mean(torch.abs(pred_y - batch_y))
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        optimizer.step()  # SYNCSPY-CLEAN: RMSprop state allocated on the first step
        losses.append(loss.detach())
        solver_steps += n

    hist = torch.stack(losses).cpu()  # SYNCSPY-CLEAN: final read
    with torch.no_grad():
        check, _ = odeint(true_func, true_y[0], t[:41], RTOL * 0.01, ATOL * 0.01, FIRST_STEP)
        solver_err = (check - true_y[:41]).abs().max().item()  # SYNCSPY-CLEAN: final read, check
    first, last = hist[:10].mean().item(), hist[-10:].mean().item()
    ok = (math.isfinite(first) and math.isfinite(last) and last < 0.8 * first
          and solver_err < 2e-4 and solver_steps >= STEPS and hist.numel() == STEPS)
    print("t156_neural_ode_adaptive_step_host_control: steps=%d batch=%d window=%d hidden=%d "
          "result=%s" % (STEPS, BATCH, BATCH_TIME, HIDDEN, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
