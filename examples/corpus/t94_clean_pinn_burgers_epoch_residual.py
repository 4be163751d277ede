#!/usr/bin/env python3
"""examples/corpus/t94_clean_pinn_burgers_epoch_residual.py: corpus workload (PyTorch),
CLEAN. A physics-informed neural network for the viscous Burgers equation
u_t + u u_x = (0.01/pi) u_xx on x in [-1, 1], t in [0, 1], with u(0, x) = -sin(pi x) and
u(t, -1) = u(t, 1) = 0. A tanh MLP is trained with Adam; every step draws fresh collocation,
initial and boundary points on the GPU, adds the points of a fixed-size refinement buffer, and
takes u_t, u_x and u_xx with `torch.autograd.grad(..., create_graph=True)`. Once per epoch,
outside the step loop, residual-based adaptive refinement evaluates the PDE residual on a fixed
candidate grid, takes its top 256 points (`topk` with a fixed k: no boolean mask, no
`nonzero`) and writes them into the next slot of the refinement buffer with `index_copy_` at
offsets known on the host; the epoch's mean and maximum residual and mean loss are read then.
Clean: all of it; the marked lines are setup, allocator growth in the first steps, the
per-epoch read and the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

EPOCHS, STEPS_PER_EPOCH, N_F, N_0, N_B, WIDTH, DEPTH = 3, 30, 4096, 512, 256, 64, 4
NU, REFINE_K, REFINE_SLOTS, GRID_X, GRID_T = 0.01 / math.pi, 256, 4, 128, 64


class PINN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        dims = [2] + [WIDTH] * DEPTH + [1]
        self.layers = torch.nn.ModuleList([torch.nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:])])
        for layer in self.layers:
            torch.nn.init.xavier_normal_(layer.weight)
            torch.nn.init.zeros_(layer.bias)

    def forward(self, x, t):
        h = torch.cat([x, t], dim=1)
        for layer in self.layers[:-1]:
            h = torch.tanh(layer(h))
        return self.layers[-1](h)


def pde_residual(model, x, t):
    x = x.detach().requires_grad_(True)
    t = t.detach().requires_grad_(True)
    u = model(x, t)
    u_x, u_t = torch.autograd.grad(u.sum(), (x, t), create_graph=True)
    u_xx = torch.autograd.grad(u_x.sum(), x, create_graph=True)[0]
    return u_t + u * u_x - NU * u_xx


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(94)
    model = PINN().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    gx = torch.linspace(-1.0, 1.0, GRID_X, device=dev)  # SYNCSPY-CLEAN: setup allocation
    gt = torch.linspace(0.0, 1.0, GRID_T, device=dev)  # SYNCSPY-CLEAN: setup allocation
    cand_x = gx.view(1, -1).expand(GRID_T, GRID_X).reshape(-1, 1)
    cand_t = gt.view(-1, 1).expand(GRID_T, GRID_X).reshape(-1, 1)
    refine = torch.rand(REFINE_K * REFINE_SLOTS, 2, device=dev, generator=gen) * torch.tensor([2.0, 1.0], device=dev) - torch.tensor([1.0, 0.0], device=dev)  # SYNCSPY-CLEAN: setup allocation and two tiny uploads, once
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
    history = []

    for epoch in range(EPOCHS):
        loss_sum.zero_()
        for step in range(STEPS_PER_EPOCH):
            xf = torch.rand(N_F, 1, device=dev, generator=gen) * 2 - 1
            tf = torch.rand(N_F, 1, device=dev, generator=gen)
            xf, tf = torch.cat([xf, refine[:, :1]]), torch.cat([tf, refine[:, 1:]])
            x0 = torch.rand(N_0, 1, device=dev, generator=gen) * 2 - 1
            tb = torch.rand(N_B, 1, device=dev, generator=gen)
            xb = torch.where(torch.rand(N_B, 1, device=dev, generator=gen) < 0.5, -1.0, 1.0)
            res = pde_residual(model, xf, tf)  # SYNCSPY-CLEAN: allocator growth in the first steps (double-backward graph)
            loss_ic = (model(x0, torch.zeros_like(x0)) + torch.sin(math.pi * x0)).pow(2).mean()
            loss_bc = model(xb, tb).pow(2).mean()
            loss = res.pow(2).mean() + 10.0 * (loss_ic + loss_bc)
            opt.zero_grad(set_to_none=True)
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
            loss_sum += loss.detach()
        r = pde_residual(model, cand_x, cand_t).detach().abs().squeeze(1)  # SYNCSPY-CLEAN: refinement once per epoch, outside the step loop
        top = r.topk(REFINE_K).indices
        slot = epoch % REFINE_SLOTS
        rows = torch.arange(slot * REFINE_K, (slot + 1) * REFINE_K, device=dev)
        refine.index_copy_(0, rows, torch.cat([cand_x[top], cand_t[top]], dim=1))
        history.append(torch.stack([r.mean(), r.max(), loss_sum / STEPS_PER_EPOCH]).tolist())  # SYNCSPY-CLEAN: once per epoch, outside the step loop

    with torch.no_grad():
        u = model(cand_x, cand_t)
    u_max = u.abs().max().item()  # SYNCSPY-CLEAN: final read
    ok = len(history) == EPOCHS and all(math.isfinite(v) and v >= 0.0 for row in history for v in row) and math.isfinite(u_max) and u_max < 5.0
    print("t94_clean_pinn_burgers_epoch_residual: epochs=%d steps=%d collocation=%d width=%d depth=%d refine=%d result=%s" % (EPOCHS, EPOCHS * STEPS_PER_EPOCH, N_F + REFINE_K * REFINE_SLOTS, WIDTH, DEPTH, REFINE_K * REFINE_SLOTS, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
