#!/usr/bin/env python3
"""examples/corpus/t99_lipschitz_scorer_orthogonal_matrix_exp.py: corpus workload (PyTorch).
A fraud-scoring service with a 1-Lipschitz network (robust to small perturbations of the
transaction features): four 512x512 layers kept orthogonal with
`torch.nn.utils.parametrizations.orthogonal`, MaxMin activations, a normalized linear head.
Each request scores 8,192 transactions; the features arrive in host memory, are copied into
one of two pinned staging slots and uploaded `non_blocking`, and the scores come back into two
pinned result slots read one request behind. The model is served exactly as trained, with its
parametrizations still registered: every access to `self.lin.weight` recomputes the orthogonal
matrix, and for square matrices the default map is the matrix exponential of a skew-symmetric
matrix, `torch.matrix_exp(A)`. ATen's `mexp_impl` (aten/src/ATen/native/LinearAlgebra.cpp)
chooses the Pade degree on the CPU: "It requires moving data back and forth between devices
when `a` is on CUDA" (`norm.to(at::kCPU)`, a blocking read, then the selected indices copied
back from pageable memory). Four layers, several blocking transfers each, every request, for
weights that never change while serving; the next request's staging copy cannot overlap the
GPU work. `parametrize.remove_parametrizations(..., leave_parametrized=True)` once after loading
removes all of it (t104).
Planted: the `max_min(self.lin(x))` line in OrthoBlock.forward (the parametrized weight), every
layer of every request.
Clean: setup (pinned staging and result slots, the model upload), the asynchronous copies from
and to pinned memory, the staging double buffer's event wait two requests back, the one-behind
wait on the previous request's results, allocator growth in the first requests, one
`synchronize()` after the loop, the weights read once after the loop for the CPU reference.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.utils import parametrizations  # noqa: E402

REQUESTS, ROWS, FEATURES, WIDTH, DEPTH, THRESHOLD = 40, 8192, 64, 512, 4, 0.5


def max_min(x):
    """GroupSort with groups of two: 1-Lipschitz and gradient-norm preserving."""
    a, b = x.chunk(2, dim=-1)
    return torch.cat([torch.maximum(a, b), torch.minimum(a, b)], dim=-1)


class OrthoBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = parametrizations.orthogonal(torch.nn.Linear(WIDTH, WIDTH))

    def forward(self, x):
        return max_min(self.lin(x))  # SYNCSPY-PROBLEM: the parametrized weight is recomputed by matrix_exp at every access (norm copied to the host, blocking), every layer of every request


class LipschitzScorer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList([OrthoBlock() for _ in range(DEPTH)])
        self.head = torch.nn.Linear(WIDTH, 1)

    def forward(self, x):
        h = F.pad(x, (0, WIDTH - FEATURES))
        for blk in self.blocks:
            h = blk(h)
        w = self.head.weight / self.head.weight.norm()
        return torch.sigmoid(F.linear(h, w, self.head.bias)).squeeze(1)


def reference_scores(x, weights, head_w, head_b):
    """The same network in float64 on the CPU, from the downloaded weights."""
    h = F.pad(x, (0, WIDTH - FEATURES))
    for w, b in weights:
        h = max_min(F.linear(h, w, b))
    return torch.sigmoid(F.linear(h, head_w / head_w.norm(), head_b)).squeeze(1)


def make_capture():
    """Host-side feature batches: standardized transaction features, a few percent shifted outliers."""
    g = torch.Generator().manual_seed(99)
    x = torch.randn(REQUESTS, ROWS, FEATURES, generator=g)
    outlier = (torch.rand(REQUESTS, ROWS, 1, generator=g) < 0.03).float()
    return x + outlier * 3.0 * torch.randn(REQUESTS, 1, FEATURES, generator=g)


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    capture = make_capture()
    staging = [torch.empty(ROWS, FEATURES, pin_memory=True) for _ in range(2)]  # SYNCSPY-CLEAN: setup, two pinned staging slots allocated once
    results = [torch.empty(ROWS, pin_memory=True) for _ in range(2)]  # SYNCSPY-CLEAN: setup, two pinned result slots allocated once
    uploaded = [torch.cuda.Event() for _ in range(2)]
    ready = [torch.cuda.Event() for _ in range(2)]
    model = LipschitzScorer().to(dev).eval()  # SYNCSPY-CLEAN: setup upload (stand-in for the checkpoint)
    flagged = []

    def consume(slot):
        ready[slot].synchronize()  # SYNCSPY-CLEAN: double buffer: request i-1's scores, waited on after request i is queued
        flagged.append(int((results[slot] > THRESHOLD).sum()))

    with torch.inference_mode():
        for r in range(REQUESTS):
            slot = r % 2
            if r >= 2:
                uploaded[slot].synchronize()  # SYNCSPY-CLEAN: double buffer: the upload two requests back, long finished
            staging[slot].copy_(capture[r])
            x = staging[slot].to(dev, non_blocking=True)  # SYNCSPY-CLEAN: asynchronous copy from pinned memory
            uploaded[slot].record()
            scores = model(x)  # SYNCSPY-CLEAN: allocator growth in the first requests
            results[slot].copy_(scores, non_blocking=True)  # SYNCSPY-CLEAN: asynchronous copy into a pinned slot allocated once
            ready[slot].record()
            if r >= 1:
                consume(1 - slot)

    torch.cuda.synchronize()  # SYNCSPY-CLEAN: once after the loop, the last request
    consume((REQUESTS - 1) % 2)
    with torch.no_grad():
        weights = [(blk.lin.weight.double().cpu(), blk.lin.bias.double().cpu()) for blk in model.blocks]  # SYNCSPY-CLEAN: weights read once after the loop for the reference
        head_w, head_b = model.head.weight.double().cpu(), model.head.bias.double().cpu()  # SYNCSPY-CLEAN: weights read once after the loop for the reference
    ref = reference_scores(capture[-1].double(), weights, head_w, head_b)
    err = float((ref - results[(REQUESTS - 1) % 2].double()).abs().max())
    ortho = max(float((w @ w.t() - torch.eye(WIDTH, dtype=torch.float64)).abs().max()) for w, _ in weights)
    ok = len(flagged) == REQUESTS and err < 1e-3 and ortho < 1e-3 and all(0 <= f <= ROWS for f in flagged)
    print("t99_lipschitz_scorer_orthogonal_matrix_exp: requests=%d rows=%d features=%d width=%d depth=%d result=%s" % (REQUESTS, ROWS, FEATURES, WIDTH, DEPTH, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
