#!/usr/bin/env python3
"""examples/corpus/t127_clean_thermal_mesh_csr_known_size.py: corpus workload (PyTorch, sparse CSR), CLEAN.
The thermally cycled plate of t122 (a jittered 384 x 384 triangle mesh, 16 heater scenarios,
implicit Euler with a matrix whose edge conductances change every step, 30 Jacobi-preconditioned CG
iterations per step with their scalars on the device) with the fix of t122: `Assembler.matrix()`
passes the size it knows, `torch.sparse_csr_tensor(crow, col, values, size=(n, n),
check_invariants=False)`, so ATen does not infer the column count from the column indices (t122's
`plain_indices.max().item()`), and the constructor only wraps the three device tensors. The host
queues the next steps' assembly and CG while the GPU works.
Clean: all of it; the marked lines are setup (mesh, CSR structure from a device sort, the heater
schedule table), the per-step matrix values and wrapper, the sparse products (cuSPARSE buffers from
the caching allocator) and the solver's temporaries, the temperatures written into a device history,
the peak temperatures copied every step into a pinned double buffer and read by a monitor one step
behind after an event wait, the final reads (heat balance, residual, last peak) after the loop.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

STEPS, NX, CASES, CG_ITERS, DT, OMEGA = 40, 384, 16, 30, 0.2, 0.7


def build_mesh(dev, gen):
    """Jittered grid, each cell split by one diagonal: undirected edges (E, 2), base conductances and phases."""
    idx = torch.arange(NX * NX, device=dev).view(NX, NX)  # SYNCSPY-CLEAN: setup allocation
    right = torch.stack([idx[:, :-1].reshape(-1), idx[:, 1:].reshape(-1)], 1)  # SYNCSPY-CLEAN: setup allocation
    down = torch.stack([idx[:-1, :].reshape(-1), idx[1:, :].reshape(-1)], 1)  # SYNCSPY-CLEAN: setup allocation
    diag = torch.stack([idx[:-1, :-1].reshape(-1), idx[1:, 1:].reshape(-1)], 1)  # SYNCSPY-CLEAN: setup allocation
    edges = torch.cat([right, down, diag])  # SYNCSPY-CLEAN: setup allocation
    g = torch.arange(NX, device=dev, dtype=torch.float32)  # SYNCSPY-CLEAN: setup allocation
    pos = torch.stack(torch.meshgrid(g, g, indexing="ij"), -1).view(-1, 2) + 0.3 * (torch.rand(NX * NX, 2, device=dev, generator=gen) - 0.5)  # SYNCSPY-CLEAN: setup allocation
    length = (pos[edges[:, 0]] - pos[edges[:, 1]]).norm(dim=1)  # SYNCSPY-CLEAN: setup allocation
    k0 = (0.5 + torch.rand(edges.shape[0], device=dev, generator=gen)) / length  # SYNCSPY-CLEAN: setup allocation
    phase = 2 * math.pi * torch.rand(edges.shape[0], device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    return edges, k0, phase, pos


class Assembler:
    """A = M + dt K(t) in CSR form; the structure is sorted once, the values are recomputed every step."""

    def __init__(self, edges, n):
        self.n, self.edges = n, edges
        diag = torch.arange(n, device=edges.device)  # SYNCSPY-CLEAN: setup allocation
        rows = torch.cat([edges[:, 0], edges[:, 1], diag])  # SYNCSPY-CLEAN: setup allocation
        cols = torch.cat([edges[:, 1], edges[:, 0], diag])  # SYNCSPY-CLEAN: setup allocation
        self.perm = torch.argsort(rows * n + cols)  # SYNCSPY-CLEAN: setup, a device sort
        sorted_rows = rows[self.perm]  # SYNCSPY-CLEAN: setup allocation
        self.col = cols[self.perm].to(torch.int32)  # SYNCSPY-CLEAN: setup allocation
        self.crow = torch.searchsorted(sorted_rows, torch.arange(n + 1, device=edges.device)).to(torch.int32)  # SYNCSPY-CLEAN: setup allocation
        self.mass = torch.ones(n, device=edges.device)  # SYNCSPY-CLEAN: setup allocation

    def matrix(self, k):
        """Edge conductances k (E,) -> CSR matrix and its diagonal (for the Jacobi preconditioner)."""
        off = -DT * k
        diag = self.mass.index_add(0, self.edges[:, 0], DT * k).index_add_(0, self.edges[:, 1], DT * k)  # SYNCSPY-CLEAN: the diagonal (a temporary, allocator growth in the first step)
        values = torch.cat([off, off, diag])[self.perm]  # SYNCSPY-CLEAN: the step's matrix values (a large temporary, allocator growth in the first steps)
        a = torch.sparse_csr_tensor(self.crow, self.col, values, size=(self.n, self.n), check_invariants=False)  # SYNCSPY-CLEAN: the size is known: the constructor wraps the device tensors, no read
        return a, diag


def conjugate_gradient(a, b, x, inv_diag):
    """Jacobi-preconditioned CG on the CASES columns at once; step sizes kept on the device, fixed iteration count."""
    r = b - a @ x  # SYNCSPY-CLEAN: sparse product (cuSPARSE SpMM, its buffer from the caching allocator), allocator growth in the first steps
    z = r * inv_diag  # SYNCSPY-CLEAN: a large temporary (n x 16), allocator growth in the first step
    p = z.clone()  # SYNCSPY-CLEAN: a large temporary (n x 16), allocator growth in the first step
    rz = (r * z).sum(0)
    for _ in range(CG_ITERS):
        ap = a @ p  # SYNCSPY-CLEAN: sparse product, allocator growth in the first steps
        alpha = rz / (p * ap).sum(0).clamp_min(1e-30)
        x = x + alpha * p  # SYNCSPY-CLEAN: a large temporary (n x 16), allocator growth in the first step
        r = r - alpha * ap  # SYNCSPY-CLEAN: a large temporary (n x 16), allocator growth in the first step
        z = r * inv_diag  # SYNCSPY-CLEAN: a large temporary (n x 16), allocator growth in the first step
        rz_new = (r * z).sum(0)
        p = z + (rz_new / rz.clamp_min(1e-30)) * p  # SYNCSPY-CLEAN: a large temporary (n x 16), allocator growth in the first step
        rz = rz_new
    return x


def main():
    torch.manual_seed(0)
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(127)
    edges, k0, phase, pos = build_mesh(dev, gen)
    n = NX * NX
    asm = Assembler(edges, n)
    centres = 20.0 + (NX - 40.0) * torch.rand(CASES, 2, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    spots = torch.exp(-((pos[:, None, :] - centres[None]) ** 2).sum(-1) / 200.0)  # SYNCSPY-CLEAN: setup, each scenario's heater footprint (n, CASES)
    duty = (torch.arange(STEPS, device=dev)[:, None] // 5 + torch.arange(CASES, device=dev)[None]) % 3 == 0  # SYNCSPY-CLEAN: setup, the heater on/off schedule
    temp = torch.zeros(n, CASES, device=dev)  # SYNCSPY-CLEAN: setup allocation
    injected = torch.zeros(CASES, device=dev)  # SYNCSPY-CLEAN: setup allocation
    history = torch.zeros(STEPS, CASES, device=dev)  # SYNCSPY-CLEAN: setup allocation
    peaks_host = torch.zeros(2, CASES, pin_memory=True)  # SYNCSPY-CLEAN: setup, the monitor's pinned double buffer
    copied = [torch.cuda.Event(), torch.cuda.Event()]
    peaks = []

    for step in range(STEPS):
        t = step * DT
        k = k0 * (1.0 + 0.5 * torch.sin(OMEGA * t + phase))  # SYNCSPY-CLEAN: the step's edge conductances (a temporary, allocator growth in the first step)
        a, diag = asm.matrix(k)
        q = spots * duty[step].float()  # SYNCSPY-CLEAN: a large temporary (n x 16), allocator growth in the first step
        b = asm.mass[:, None] * temp + DT * q  # SYNCSPY-CLEAN: a large temporary (n x 16), allocator growth in the first step
        injected += DT * q.sum(0)
        temp = conjugate_gradient(a, b, temp, 1.0 / diag[:, None])  # the solve: its temporaries are marked inside conjugate_gradient
        history[step] = temp.mean(0)  # SYNCSPY-CLEAN: the step's mean temperatures written into the history on the device
        slot = step % 2
        peaks_host[slot].copy_(temp.amax(0), non_blocking=True)  # SYNCSPY-CLEAN: the step's peak temperatures copied asynchronously into pinned memory
        copied[slot].record()
        if step >= 1:
            copied[1 - slot].synchronize()  # SYNCSPY-CLEAN: the monitor reads the previous step's peaks, one step behind (the slot is rewritten next step)
            peaks.append(max(peaks_host[1 - slot].tolist()))

    copied[(STEPS - 1) % 2].synchronize()  # SYNCSPY-CLEAN: the last step's peaks, after the loop
    peaks.append(max(peaks_host[(STEPS - 1) % 2].tolist()))
    peak_err = abs(peaks[-1] - temp.max().item())  # SYNCSPY-CLEAN: final read
    shape_ok = tuple(a.shape) == (n, n)
    rel_res = ((b - a @ temp).norm() / b.norm()).item()  # SYNCSPY-CLEAN: final read (the last step's system)
    balance = ((temp.sum(0) - injected).abs().max() / injected.max()).item()  # SYNCSPY-CLEAN: final read; the heat in the plate must equal what the heaters injected
    trend = history[-1].sum().item() > history[0].sum().item()  # SYNCSPY-CLEAN: final read
    ok = len(peaks) == STEPS and peak_err <= 1e-6 * max(1.0, peaks[-1]) and shape_ok and math.isfinite(rel_res) and rel_res < 1e-3 and balance < 1e-3 and trend
    print("t127_clean_thermal_mesh_csr_known_size: steps=%d nodes=%d cases=%d cg_iters=%d result=%s" % (STEPS, n, CASES, CG_ITERS, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
