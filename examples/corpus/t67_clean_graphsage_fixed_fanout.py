#!/usr/bin/env python3
"""examples/corpus/t67_clean_graphsage_fixed_fanout.py: corpus workload (PyTorch), CLEAN.
Mini-batch GraphSAGE (mean aggregator, two layers) on a synthetic homophilous graph, with a
neighbour sampler that keeps every shape fixed: the graph is stored as CSR on the GPU (built
once in setup, where `torch.bincount` reads the largest node id back to size its output: one
host wait before the loop), and each layer samples exactly FANOUT neighbours per node by
drawing uniform offsets into the node's CSR row (`rowptr[n] + floor(rand * degree)`, with a
self-loop so no degree is zero). No `unique`, no relabelling, no data-dependent size: the
two-hop frontier is (B, FANOUT, FANOUT) and the mean is a `mean(dim=...)`. Seeds come from a
device `randperm` per epoch, the metrics stay on the GPU, one read per epoch outside the step
loop, one final read.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

EPOCHS, STEPS_PER_EPOCH, BATCH, FANOUT = 3, 20, 512, 10
NODES, EDGES, FEATS, HIDDEN, CLASSES = 30000, 300000, 64, 128, 8


class CSRGraph:
    def __init__(self, src, dst, n_nodes):
        order = torch.argsort(src)  # SYNCSPY-CLEAN: setup allocation
        self.col = dst[order]  # SYNCSPY-CLEAN: setup allocation
        counts = torch.bincount(src, minlength=n_nodes)  # SYNCSPY-CLEAN: setup, bincount reads the largest id back once
        self.rowptr = torch.zeros(n_nodes + 1, dtype=torch.long, device=src.device)  # SYNCSPY-CLEAN: setup allocation
        self.rowptr[1:] = torch.cumsum(counts, 0)  # SYNCSPY-CLEAN: setup, a device copy

    def sample(self, nodes, fanout, gen):
        start = self.rowptr[nodes]
        degree = self.rowptr[nodes + 1] - start
        u = torch.rand(nodes.shape + (fanout,), device=nodes.device, generator=gen)  # SYNCSPY-CLEAN: allocator growth in the first steps
        return self.col[start.unsqueeze(-1) + (u * degree.unsqueeze(-1)).long()]


class SAGELayer(torch.nn.Module):
    def __init__(self, din, dout):
        super().__init__()
        self.self_lin = torch.nn.Linear(din, dout)
        self.nbr_lin = torch.nn.Linear(din, dout, bias=False)

    def forward(self, h_self, h_nbrs):
        return self.self_lin(h_self) + self.nbr_lin(h_nbrs.mean(dim=-2))


class GraphSAGE(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer1 = SAGELayer(FEATS, HIDDEN)
        self.layer2 = SAGELayer(HIDDEN, HIDDEN)
        self.head = torch.nn.Linear(HIDDEN, CLASSES)

    def forward(self, feats, seeds, hop1, hop2):
        h_seed = F.relu(self.layer1(feats[seeds], feats[hop1]))
        h_hop1 = F.relu(self.layer1(feats[hop1], feats[hop2]))
        return self.head(self.layer2(h_seed, h_hop1))


def make_graph(dev, gen):
    labels = torch.arange(NODES, device=dev) % CLASSES  # SYNCSPY-CLEAN: setup allocation
    src = torch.randint(0, NODES, (EDGES,), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    # homophily without data-dependent shapes: most partners are shifted to a node of the same class
    same = torch.randint(0, NODES // CLASSES, (EDGES,), device=dev, generator=gen) * CLASSES + labels[src]  # SYNCSPY-CLEAN: setup allocation
    other = torch.randint(0, NODES, (EDGES,), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    dst = torch.where(torch.rand(EDGES, device=dev, generator=gen) < 0.8, same, other)  # SYNCSPY-CLEAN: setup allocation
    loops = torch.arange(NODES, device=dev)  # SYNCSPY-CLEAN: setup allocation
    src_all = torch.cat([src, dst, loops])  # SYNCSPY-CLEAN: setup allocation
    dst_all = torch.cat([dst, src, loops])  # SYNCSPY-CLEAN: setup allocation
    protos = torch.randn(CLASSES, FEATS, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    feats = protos[labels] + 1.5 * torch.randn(NODES, FEATS, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    return CSRGraph(src_all, dst_all, NODES), feats, labels


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(17)
    graph, feats, labels = make_graph(dev, gen)
    model = GraphSAGE().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    correct = torch.zeros((), dtype=torch.long, device=dev)  # SYNCSPY-CLEAN: setup allocation
    epoch_acc = []

    model.train()
    for epoch in range(EPOCHS):
        perm = torch.randperm(NODES, device=dev, generator=gen)  # SYNCSPY-CLEAN: per epoch, on the device
        for step in range(STEPS_PER_EPOCH):
            seeds = perm[step * BATCH:(step + 1) * BATCH]
            hop1 = graph.sample(seeds, FANOUT, gen)
            hop2 = graph.sample(hop1, FANOUT, gen)
            logits = model(feats, seeds, hop1, hop2)  # SYNCSPY-CLEAN: allocator growth in the first steps
            loss = F.cross_entropy(logits, labels[seeds])
            opt.zero_grad(set_to_none=True)
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
            correct += (logits.detach().argmax(dim=1) == labels[seeds]).sum()
        epoch_acc.append(correct.item() / (STEPS_PER_EPOCH * BATCH))  # SYNCSPY-CLEAN: once per epoch, outside the step loop
        correct.zero_()

    ok = len(epoch_acc) == EPOCHS and epoch_acc[-1] > 0.5 and epoch_acc[-1] >= epoch_acc[0]
    print("t67_clean_graphsage_fixed_fanout: epochs=%d steps=%d batch=%d fanout=%d result=OK" % (EPOCHS, EPOCHS * STEPS_PER_EPOCH, BATCH, FANOUT))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
