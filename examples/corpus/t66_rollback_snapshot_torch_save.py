#!/usr/bin/env python3
"""examples/corpus/t66_rollback_snapshot_torch_save.py: corpus workload (PyTorch). Training
a physics surrogate (an MLP that predicts the next state of a damped spring-mass chain) with
a divergence guard: the last good state is kept so that a step whose loss blows up can be
rolled back. The guard snapshots the model and the optimizer every step with
`torch.save(state_dict, io.BytesIO())`. Serializing a CUDA tensor copies its storage to the
host (`storage.cpu()`: a blocking device-to-host copy into pageable memory), once per
parameter and per Adam moment buffer, each waiting for the step's kernels: dozens of host
waits per step, on two lines. The health check itself is windowed (every 10 steps, clean). A
device-side snapshot (`torch._foreach_copy_` into preallocated tensors), or a snapshot only at
the window boundary, fixes both lines at once.
Planted: the two `torch.save` lines in DivergenceGuard.snapshot, every step.
Clean: setup, allocator growth in the first steps, the windowed health check, the final read.
"""
import io
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

STEPS, CHECK_EVERY, BATCH, MASSES, HIDDEN, DT = 60, 10, 1024, 16, 512, 0.05


class Surrogate(torch.nn.Module):
    def __init__(self):
        super().__init__()
        d = 2 * MASSES
        self.net = torch.nn.Sequential(torch.nn.Linear(d, HIDDEN), torch.nn.SiLU(), torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.SiLU(), torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.SiLU(), torch.nn.Linear(HIDDEN, d))

    def forward(self, state):
        return state + DT * self.net(state)


class SpringChain:
    """Ground truth: a chain of unit masses, springs between neighbours, light damping."""

    def __init__(self, dev):
        lap = -2 * torch.eye(MASSES) + torch.diag(torch.ones(MASSES - 1), 1) + torch.diag(torch.ones(MASSES - 1), -1)
        self.lap = lap.to(dev)  # SYNCSPY-CLEAN: setup upload

    def step(self, state):
        x, v = state[:, :MASSES], state[:, MASSES:]
        a = x @ self.lap - 0.1 * v
        v = v + DT * a
        return torch.cat([x + DT * v, v], dim=1)


class DivergenceGuard:
    def __init__(self, model, opt, dev):
        self.model, self.opt = model, opt
        self.model_blob = self.opt_blob = None
        self.window = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
        self.rollbacks = 0

    def snapshot(self):
        self.model_blob = io.BytesIO()
        torch.save(self.model.state_dict(), self.model_blob)  # SYNCSPY-PROBLEM: torch.save copies every CUDA parameter to the host (storage.cpu(): blocking D2H), every step
        self.opt_blob = io.BytesIO()
        torch.save(self.opt.state_dict(), self.opt_blob)  # SYNCSPY-PROBLEM: torch.save copies every Adam moment to the host (blocking D2H), every step

    def observe(self, loss, step):
        self.window = torch.maximum(self.window, loss.detach())
        if (step + 1) % CHECK_EVERY:
            return
        worst = self.window.item()  # SYNCSPY-CLEAN: windowed health check, once every 10 steps
        self.window.zero_()
        if not worst < 1e3:
            self.rollback()

    def rollback(self):
        self.model_blob.seek(0)
        self.opt_blob.seek(0)
        self.model.load_state_dict(torch.load(self.model_blob))
        self.opt.load_state_dict(torch.load(self.opt_blob))
        self.rollbacks += 1


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(9)
    physics = SpringChain(dev)
    model = Surrogate().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=STEPS)
    guard = DivergenceGuard(model, opt, dev)
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
    first = None

    model.train()
    for step in range(STEPS):
        state = torch.randn(BATCH, 2 * MASSES, device=dev, generator=gen)  # SYNCSPY-CLEAN: allocator growth in the first steps
        with torch.no_grad():
            target = physics.step(state)
        loss = F.mse_loss(model(state), target)  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
        sched.step()
        guard.observe(loss, step)
        guard.snapshot()
        loss_sum += loss.detach()
        if first is None:
            first = loss.detach().clone()  # SYNCSPY-CLEAN: first step only, a device copy

    last = loss.item()  # SYNCSPY-CLEAN: final read
    ok = guard.rollbacks == 0 and last < first.item() and guard.model_blob.getbuffer().nbytes > 0  # SYNCSPY-CLEAN: final read
    print("t66_rollback_snapshot_torch_save: steps=%d batch=%d rollbacks=%d result=OK" % (STEPS, BATCH, guard.rollbacks))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
