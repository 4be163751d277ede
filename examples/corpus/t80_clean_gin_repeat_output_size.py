#!/usr/bin/env python3
"""examples/corpus/t80_clean_gin_repeat_output_size.py: corpus workload (PyTorch), CLEAN.
Molecular property regression with a GIN (sum aggregation, three layers, sum readout) over
mini-batches of small graphs of different sizes, stored concatenated on the GPU. The graph
sizes are generated on the host in setup, so the collate step knows every batch's node and
edge ranges as Python ints; the node-to-graph map is built with
`torch.repeat_interleave(graph_ids, counts, output_size=n_nodes)`: the documentation says that
with `output_size` the op skips the stream synchronization it needs to compute the output
length. Messages and the readout use `index_add_` into buffers whose sizes are those host ints
(no `bincount`, no `unique`). The loss is accumulated on the GPU, the validation MAE read once
per epoch outside the step loop, one final read.
"""
import math
import os
import random
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

EPOCHS, STEPS_PER_EPOCH, GRAPHS_PER_BATCH, ATOM_TYPES, HIDDEN, LAYERS = 2, 30, 64, 10, 128, 3


class GINLayer(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.eps = torch.nn.Parameter(torch.zeros(()))
        self.mlp = torch.nn.Sequential(torch.nn.Linear(d, d), torch.nn.BatchNorm1d(d), torch.nn.ReLU(), torch.nn.Linear(d, d))

    def forward(self, h, src, dst):
        agg = torch.zeros_like(h).index_add_(0, dst, h[src])
        return F.relu(self.mlp((1 + self.eps) * h + agg))


class GIN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(ATOM_TYPES, HIDDEN)
        self.layers = torch.nn.ModuleList([GINLayer(HIDDEN) for _ in range(LAYERS)])
        self.head = torch.nn.Sequential(torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, 1))

    def forward(self, atoms, src, dst, node_graph, n_graphs):
        h = self.embed(atoms)
        for layer in self.layers:
            h = layer(h, src, dst)
        pooled = h.new_zeros(n_graphs, HIDDEN).index_add_(0, node_graph, h)
        return self.head(pooled).squeeze(-1)


class GraphBank:
    """All graphs concatenated on the GPU; offsets and sizes kept as Python ints."""

    def __init__(self, n_graphs, dev, rng, gen):
        sizes = [rng.randint(6, 24) for _ in range(n_graphs)]
        src, dst, self.node_off, self.edge_off = [], [], [0], [0]
        for n in sizes:
            base = self.node_off[-1]
            pairs = [(i, i + 1) for i in range(n - 1)] + [(i, rng.randrange(n)) for i in range(0, n, 3)]
            for a, b in pairs:
                src += [base + a, base + b]
                dst += [base + b, base + a]
            self.node_off.append(base + n)
            self.edge_off.append(len(src))
        self.sizes = sizes
        self.src = torch.tensor(src, device=dev)  # SYNCSPY-CLEAN: setup upload of the edge lists, once
        self.dst = torch.tensor(dst, device=dev)  # SYNCSPY-CLEAN: setup upload of the edge lists, once
        self.counts = torch.tensor(sizes, device=dev)  # SYNCSPY-CLEAN: setup upload of the graph sizes, once
        self.atoms = torch.randint(0, ATOM_TYPES, (self.node_off[-1],), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
        heavy = (self.atoms >= 6).float()
        graph_of_node = torch.repeat_interleave(torch.arange(n_graphs, device=dev), self.counts, output_size=self.node_off[-1])  # SYNCSPY-CLEAN: setup, output_size given
        self.y = torch.zeros(n_graphs, device=dev).index_add_(0, graph_of_node, heavy) / 4.0 + 0.1 * self.counts.float()  # SYNCSPY-CLEAN: setup allocation

    def batch(self, g0, g1):
        n0, n1, e0, e1 = self.node_off[g0], self.node_off[g1], self.edge_off[g0], self.edge_off[g1]
        ids = torch.arange(g1 - g0, device=self.src.device)
        node_graph = torch.repeat_interleave(ids, self.counts[g0:g1], output_size=n1 - n0)
        return self.atoms[n0:n1], self.src[e0:e1] - n0, self.dst[e0:e1] - n0, node_graph, self.y[g0:g1]


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(8)
    n_train = STEPS_PER_EPOCH * GRAPHS_PER_BATCH
    bank = GraphBank(n_train + 4 * GRAPHS_PER_BATCH, dev, random.Random(6), gen)
    model = GIN().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
    val_maes = []

    for epoch in range(EPOCHS):
        model.train()
        for step in range(STEPS_PER_EPOCH):
            g0 = step * GRAPHS_PER_BATCH
            atoms, src, dst, node_graph, y = bank.batch(g0, g0 + GRAPHS_PER_BATCH)
            pred = model(atoms, src, dst, node_graph, GRAPHS_PER_BATCH)  # SYNCSPY-CLEAN: allocator growth in the first steps (node counts vary)
            loss = F.mse_loss(pred, y)
            opt.zero_grad(set_to_none=True)
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps (node counts vary)
            opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
            loss_sum += loss.detach()
        model.eval()
        with torch.no_grad():
            err = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: per epoch allocation
            for v in range(4):
                g0 = n_train + v * GRAPHS_PER_BATCH
                atoms, src, dst, node_graph, y = bank.batch(g0, g0 + GRAPHS_PER_BATCH)
                err += (model(atoms, src, dst, node_graph, GRAPHS_PER_BATCH) - y).abs().sum()  # SYNCSPY-CLEAN: validation once per epoch, outside the step loop
        val_maes.append(err.item() / (4 * GRAPHS_PER_BATCH))  # SYNCSPY-CLEAN: once per epoch, outside the step loop

    mean_loss = loss_sum.item() / (EPOCHS * STEPS_PER_EPOCH)  # SYNCSPY-CLEAN: final read
    ok = math.isfinite(mean_loss) and all(math.isfinite(m) for m in val_maes)
    print("t80_clean_gin_repeat_output_size: epochs=%d steps=%d graphs_per_batch=%d result=OK" % (EPOCHS, EPOCHS * STEPS_PER_EPOCH, GRAPHS_PER_BATCH))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
