#!/usr/bin/env python3
"""examples/corpus/t137_clean_molecule_mpnn_segment_reduce_offsets.py: corpus workload
(PyTorch), CLEAN.
The message-passing network of t134 (batches of 128 small molecules, four rounds of sum
aggregation by `index_select` and `index_add_`, a per-molecule mean and max readout) with the
readout's `torch.segment_reduce` given `offsets` instead of `lengths` (the fix of t134): the
offsets of each batch (a zero and the cumulative atom counts) are built on the CPU with the
batch and uploaded once in setup. `segment_reduce_kernel` validates `lengths` on the host when
`unsafe=False` (`lengths.min().item()`, `all(lengths.sum(-1) == data.size(axis)).item()`), but
not `offsets` ("TODO: add checks when !unsafe"), the form PyTorch Geometric uses; the CUDA
kernels take the segment bounds from device memory. The readout is checked after the loop
against the `lengths` form on the CPU (whose checks read host memory).
Clean: all of it; the marked lines are setup (the molecules generated on the CPU and uploaded
once per batch), allocator growth in the first steps, validation error read once per epoch
outside the step loop, the readout check and the final read after the loop.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

GRAPHS, BATCHES, EPOCHS, ATOM_TYPES, HIDDEN, LAYERS = 128, 8, 6, 10, 128, 4
MIN_ATOMS, MAX_ATOMS = 12, 40


def make_batch(gen, pair_w, type_w):
    """A batch of random molecules as flat tensors; the target sums bond and atom terms."""
    counts = torch.randint(MIN_ATOMS, MAX_ATOMS, (GRAPHS,), generator=gen)
    types, src, dst, y, base = [], [], [], [], 0
    for n in counts.tolist():
        t = torch.randint(0, ATOM_TYPES, (n,), generator=gen)
        a = torch.arange(n)
        extra = torch.randint(0, n, (2, n // 4), generator=gen)
        u = torch.cat([a[:-1], a[-1:], extra[0]])
        v = torch.cat([a[1:], a[:1], extra[1]])
        y.append(pair_w[t[u], t[v]].sum() / n + type_w[t].mean())
        types.append(t)
        src += [u + base, v + base]
        dst += [v + base, u + base]
        base += n
    x = F.one_hot(torch.cat(types), ATOM_TYPES).float()
    offsets = torch.cat([torch.zeros(1, dtype=torch.long), counts.cumsum(0)])
    return {"x": x, "src": torch.cat(src), "dst": torch.cat(dst), "offsets": offsets,
            "y": torch.stack(y), "counts": counts}


class MPNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Linear(ATOM_TYPES, HIDDEN)
        self.msg = torch.nn.ModuleList(torch.nn.Linear(HIDDEN, HIDDEN) for _ in range(LAYERS))
        self.upd = torch.nn.ModuleList(torch.nn.Linear(2 * HIDDEN, HIDDEN)
                                       for _ in range(LAYERS))
        self.head = torch.nn.Sequential(torch.nn.Linear(2 * HIDDEN, HIDDEN), torch.nn.ReLU(),
                                        torch.nn.Linear(HIDDEN, 1))

    def forward(self, x, src, dst, offsets):
        h = self.embed(x)
        for msg, upd in zip(self.msg, self.upd):
            sent = msg(h).index_select(0, src)  # SYNCSPY-CLEAN: growth, first steps
            m = torch.zeros_like(h).index_add_(0, dst, sent)  # SYNCSPY-CLEAN: growth, first steps
            h = h + F.relu(upd(torch.cat([h, m], dim=-1)))  # SYNCSPY-CLEAN: growth, first steps
        g_mean = torch.segment_reduce(h, "mean", offsets=offsets, axis=0)
        g_max = torch.segment_reduce(h, "max", offsets=offsets, axis=0)
        return self.head(torch.cat([g_mean, g_max], dim=-1)).squeeze(-1)


def main():
    if not torch.cuda.is_available():
        print("t137_clean_molecule_mpnn_segment_reduce_offsets: no CUDA device, result=SKIP")
        return 1
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator().manual_seed(137)
    pair_w = torch.randn(ATOM_TYPES, ATOM_TYPES, generator=gen)
    pair_w = pair_w + pair_w.T
    type_w = torch.randn(ATOM_TYPES, generator=gen)
    cpu_batches = [make_batch(gen, pair_w, type_w) for _ in range(BATCHES + 1)]
    ys = torch.cat([b["y"] for b in cpu_batches[:BATCHES]])
    mu, sd = ys.mean().item(), ys.std().item()
    for b in cpu_batches:
        b["y"] = (b["y"] - mu) / sd
    batches = [{k: v.to(dev) for k, v in b.items()} for b in cpu_batches]  # SYNCSPY-CLEAN: setup
    val_cpu = cpu_batches[-1]
    val = batches.pop()
    model = MPNN().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses, val_mae = [], []

    for epoch in range(EPOCHS):
        model.train()
        for b in batches:
            pred = model(b["x"], b["src"], b["dst"], b["offsets"])  # SYNCSPY-CLEAN: first steps
            loss = F.mse_loss(pred, b["y"])
            opt.zero_grad(set_to_none=True)
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
            losses.append(loss.detach())
        model.eval()
        with torch.no_grad():
            pred = model(val["x"], val["src"], val["dst"], val["offsets"])
        val_mae.append((pred - val["y"]).abs().mean().item())  # SYNCSPY-CLEAN: once per epoch

    with torch.no_grad():
        h = model.embed(val["x"])
        pooled = torch.segment_reduce(h, "max", offsets=val["offsets"], axis=0)
    h_cpu, pooled_cpu = h.cpu(), pooled.cpu()  # SYNCSPY-CLEAN: teardown, the readout check
    ref = torch.segment_reduce(h_cpu, "max", lengths=val_cpu["counts"], axis=0)
    hist = torch.stack(losses).cpu()  # SYNCSPY-CLEAN: final read
    first, last = hist[:BATCHES].mean().item(), hist[-BATCHES:].mean().item()
    ok = (math.isfinite(first) and math.isfinite(last) and last < first
          and all(math.isfinite(v) for v in val_mae) and torch.equal(pooled_cpu, ref))
    print("t137_clean_molecule_mpnn_segment_reduce_offsets: epochs=%d steps=%d graphs=%d "
          "layers=%d result=%s" % (EPOCHS, hist.numel(), GRAPHS, LAYERS, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
