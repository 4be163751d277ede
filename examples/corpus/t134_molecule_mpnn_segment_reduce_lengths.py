#!/usr/bin/env python3
"""examples/corpus/t134_molecule_mpnn_segment_reduce_lengths.py: corpus workload (PyTorch).
Molecular property regression with a message-passing network: batches of 128 small molecules
(12 to 39 atoms, 10 atom types, a chain with a ring closure and a few cross-links), four rounds
of sum aggregation (`index_select` of the senders, `index_add_` into the receivers), and a
per-molecule readout of the mean and the maximum node state. The readout uses the ragged
reduction that PyTorch ships, `torch.segment_reduce(h, "mean", lengths=counts, axis=0)`, with
the atom counts of the batch, a CUDA tensor. With `lengths` and the default `unsafe=False`,
`segment_reduce_kernel` (aten/src/ATen/native/SegmentReduce.cpp) validates them on the host:
`lengths.min().item<int64_t>()` and `all(lengths.sum({-1}) == data.size(axis)).item<bool>()`,
two blocking reads per call, every step. The first of the "mean" call waits for the four
message-passing rounds, which are queued behind the previous step's backward pass and Adam
update; the "max" call right after finds the stream nearly empty. The `offsets` form skips the
validation ("TODO: add checks when !unsafe" in the same function; PyTorch Geometric calls it
with offsets), as does `unsafe=True`; t137 passes offsets.
Planted: the two `torch.segment_reduce(..., lengths=counts, ...)` lines in MPNN.forward, every
step (the mean's expensive, the max's cheap).
Clean: setup (the molecules generated on the CPU and uploaded once per batch), allocator growth
in the first steps, validation error read once per epoch outside the step loop (its forward
pass goes through the planted lines), the final read.
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
    return {"x": x, "src": torch.cat(src), "dst": torch.cat(dst), "counts": counts,
            "y": torch.stack(y)}


class MPNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Linear(ATOM_TYPES, HIDDEN)
        self.msg = torch.nn.ModuleList(torch.nn.Linear(HIDDEN, HIDDEN) for _ in range(LAYERS))
        self.upd = torch.nn.ModuleList(torch.nn.Linear(2 * HIDDEN, HIDDEN)
                                       for _ in range(LAYERS))
        self.head = torch.nn.Sequential(torch.nn.Linear(2 * HIDDEN, HIDDEN), torch.nn.ReLU(),
                                        torch.nn.Linear(HIDDEN, 1))

    def forward(self, x, src, dst, counts):
        h = self.embed(x)
        for msg, upd in zip(self.msg, self.upd):
            sent = msg(h).index_select(0, src)  # SYNCSPY-CLEAN: growth, first steps
            m = torch.zeros_like(h).index_add_(0, dst, sent)  # SYNCSPY-CLEAN: growth, first steps
            h = h + F.relu(upd(torch.cat([h, m], dim=-1)))  # SYNCSPY-CLEAN: growth, first steps
        g_mean = torch.segment_reduce(h, "mean", lengths=counts, axis=0)  # SYNCSPY-PROBLEM: 2 reads
        g_max = torch.segment_reduce(h, "max", lengths=counts, axis=0)  # SYNCSPY-PROBLEM: cheap
        return self.head(torch.cat([g_mean, g_max], dim=-1)).squeeze(-1)


def main():
    if not torch.cuda.is_available():
        print("t134_molecule_mpnn_segment_reduce_lengths: no CUDA device, result=SKIP")
        return 1
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator().manual_seed(134)
    pair_w = torch.randn(ATOM_TYPES, ATOM_TYPES, generator=gen)
    pair_w = pair_w + pair_w.T
    type_w = torch.randn(ATOM_TYPES, generator=gen)
    cpu_batches = [make_batch(gen, pair_w, type_w) for _ in range(BATCHES + 1)]
    ys = torch.cat([b["y"] for b in cpu_batches[:BATCHES]])
    mu, sd = ys.mean().item(), ys.std().item()
    for b in cpu_batches:
        b["y"] = (b["y"] - mu) / sd
    batches = [{k: v.to(dev) for k, v in b.items()} for b in cpu_batches]  # SYNCSPY-CLEAN: setup
    val = batches.pop()
    model = MPNN().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses, val_mae = [], []

    for epoch in range(EPOCHS):
        model.train()
        for b in batches:
            pred = model(b["x"], b["src"], b["dst"], b["counts"])  # SYNCSPY-CLEAN: first steps
            loss = F.mse_loss(pred, b["y"])
            opt.zero_grad(set_to_none=True)
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
            losses.append(loss.detach())
        model.eval()
        with torch.no_grad():
            pred = model(val["x"], val["src"], val["dst"], val["counts"])
        val_mae.append((pred - val["y"]).abs().mean().item())  # SYNCSPY-CLEAN: once per epoch

    hist = torch.stack(losses).cpu()  # SYNCSPY-CLEAN: final read
    first, last = hist[:BATCHES].mean().item(), hist[-BATCHES:].mean().item()
    ok = (math.isfinite(first) and math.isfinite(last) and last < first
          and all(math.isfinite(v) for v in val_mae))
    print("t134_molecule_mpnn_segment_reduce_lengths: epochs=%d steps=%d graphs=%d layers=%d "
          "result=%s" % (EPOCHS, hist.numel(), GRAPHS, LAYERS, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
