#!/usr/bin/env python3
"""examples/corpus/t63_gcn_sparse_coalesce.py: corpus workload (PyTorch). Node
classification on a citation-like graph with a simplified graph convolution (SGC: K rounds of
normalized-adjacency propagation of the features, then an MLP), trained with DropEdge: every
step keeps a random 80% of the edges, so the normalized adjacency is rebuilt every step as a
`torch.sparse_coo_tensor(...).coalesce()`. On CUDA, `coalesce` sorts the COO indices and merges
duplicates with Thrust's `unique_by_key`, whose result (the number of distinct entries, the
new nnz) is returned to the host: a device-to-host copy and a stream sync, every step, deep in
GraphAugment.normalized_adjacency. Keeping the edge list fixed and dropping edges by zeroing
their weights, with message passing by `index_add_` (t67), needs no host read.
Planted: the `.coalesce()` line in GraphAugment.normalized_adjacency, every step.
Clean: setup (graph construction, uploads), allocator growth in the first steps, the sparse
products on the coalesced matrix, the final read.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

STEPS, NODES, EDGES, FEATS, CLASSES, HOPS, KEEP, TRAIN = 60, 20000, 200000, 64, 8, 2, 0.8, 4000


class GraphAugment:
    """DropEdge plus the symmetric normalization D^-1/2 (A + I) D^-1/2."""

    def __init__(self, edge_index, n_nodes, gen):
        self.edge_index = edge_index
        self.n = n_nodes
        self.gen = gen
        self.loops = torch.arange(n_nodes, device=edge_index.device).repeat(2, 1)  # SYNCSPY-CLEAN: setup allocation

    def drop_edges(self):
        keep = torch.rand(self.edge_index.shape[1], device=self.edge_index.device, generator=self.gen) < KEEP  # SYNCSPY-CLEAN: allocator growth in the first steps
        return keep.float()

    def normalized_adjacency(self):
        weight = torch.cat([self.drop_edges(), torch.ones(self.n, device=self.edge_index.device)])  # SYNCSPY-CLEAN: allocator growth in the first steps
        index = torch.cat([self.edge_index, self.loops], dim=1)  # SYNCSPY-CLEAN: allocator growth in the first steps
        deg = torch.zeros(self.n, device=index.device).index_add_(0, index[0], weight)
        norm = weight * deg[index[0]].rsqrt() * deg[index[1]].rsqrt()
        return torch.sparse_coo_tensor(index, norm, (self.n, self.n)).coalesce()  # SYNCSPY-PROBLEM: CUDA coalesce returns the new nnz to the host (Thrust unique_by_key: D2H copy and stream sync), every step


class SGC(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.classifier = torch.nn.Sequential(torch.nn.Linear(FEATS, 128), torch.nn.ReLU(), torch.nn.Dropout(0.2), torch.nn.Linear(128, CLASSES))

    @staticmethod
    @torch.no_grad()
    def propagate(adj, x):
        for _ in range(HOPS):
            x = torch.sparse.mm(adj, x)  # SYNCSPY-CLEAN: allocator growth in the first steps
        return x

    def forward(self, adj, x, nodes):
        h = self.propagate(adj, x)
        return self.classifier(h[nodes])


def make_graph(dev, gen):
    labels = torch.randint(0, CLASSES, (NODES,), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    by_class = torch.argsort(labels)
    src = torch.randint(0, NODES, (EDGES,), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    rand_dst = torch.randint(0, NODES, (EDGES,), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    # homophily: most edges go to a node of the same class (found through the class-sorted order)
    counts = F.one_hot(labels, CLASSES).sum(0)
    starts = torch.cumsum(counts, 0) - counts
    offset = (torch.rand(EDGES, device=dev, generator=gen) * counts[labels[src]]).long()  # SYNCSPY-CLEAN: setup allocation
    same_dst = by_class[starts[labels[src]] + offset]
    homophilous = torch.rand(EDGES, device=dev, generator=gen) < 0.7  # SYNCSPY-CLEAN: setup allocation
    dst = torch.where(homophilous, same_dst, rand_dst)
    edge_index = torch.cat([torch.stack([src, dst]), torch.stack([dst, src])], dim=1)  # SYNCSPY-CLEAN: setup allocation
    protos = torch.randn(CLASSES, FEATS, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    feats = protos[labels] + 2.0 * torch.randn(NODES, FEATS, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    return edge_index, feats, labels


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(13)
    edge_index, feats, labels = make_graph(dev, gen)
    perm = torch.randperm(NODES, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    train_nodes, test_nodes = perm[:TRAIN], perm[TRAIN:2 * TRAIN]
    augment = GraphAugment(edge_index, NODES, gen)
    model = SGC().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(model.parameters(), lr=5e-3, weight_decay=5e-4)
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation

    model.train()
    for step in range(STEPS):
        adj = augment.normalized_adjacency()
        logits = model(adj, feats, train_nodes)  # SYNCSPY-CLEAN: allocator growth in the first steps
        loss = F.cross_entropy(logits, labels[train_nodes])
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
        loss_sum += loss.detach()

    model.eval()
    with torch.no_grad():
        pred = model(adj, feats, test_nodes).argmax(dim=1)  # SYNCSPY-CLEAN: evaluation after the loop
        accuracy = (pred == labels[test_nodes]).float().mean().item()  # SYNCSPY-CLEAN: final read
    mean_loss = loss_sum.item() / STEPS  # SYNCSPY-CLEAN: final read
    ok = accuracy > 0.5 and mean_loss == mean_loss
    print("t63_gcn_sparse_coalesce: steps=%d nodes=%d edges=%d hops=%d result=OK" % (STEPS, NODES, 2 * EDGES, HOPS))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
