#!/usr/bin/env python3
"""examples/corpus/t21_segment_repeat_interleave.py: corpus workload (PyTorch). A graph
property regressor (a DeepSets-style readout) over batches of small graphs of different sizes,
all nodes concatenated as graph libraries do. The node-to-graph index is rebuilt every step
from the per-graph node counts with `torch.repeat_interleave(graph_ids, counts)`; without
`output_size` torch must know the output length before it can allocate it, so it reads the sum
of the counts back to the host (and checks them for negatives) and waits for the GPU, every
step, although the loader knew the node total on the host.
Planted: `torch.repeat_interleave` with a tensor of repeats and no output_size every step.
Clean: setup, allocator growth (the node count varies from batch to batch), the final read.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

STEPS, GRAPHS, FEATS, HIDDEN = 60, 64, 64, 256


def make_data(gen):
    counts = torch.randint(8, 41, (STEPS, GRAPHS), generator=gen)
    offsets = [0]
    for total in counts.sum(dim=1).tolist():
        offsets.append(offsets[-1] + total)
    nodes = torch.randn(offsets[-1], FEATS, generator=gen)
    # per-graph target: the mean of a node function over the graph's nodes (a prefix sum: exact
    # order on the CPU, so the targets are the same every run)
    prefix = torch.cat([torch.zeros(1, dtype=torch.float64), torch.tanh(nodes[:, :8].sum(dim=1)).double().cumsum(0)])
    ends = counts.view(-1).cumsum(0)
    sums = prefix[ends] - prefix[ends - counts.view(-1)]
    targets = (sums / counts.view(-1)).float().view(STEPS, GRAPHS, 1)
    return counts, offsets, nodes, targets


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    counts_cpu, offsets, nodes_cpu, targets_cpu = make_data(torch.Generator().manual_seed(2))
    nodes = nodes_cpu.to(dev)  # SYNCSPY-CLEAN: setup upload
    counts_all = counts_cpu.to(dev)  # SYNCSPY-CLEAN: setup upload
    targets = targets_cpu.to(dev)  # SYNCSPY-CLEAN: setup upload
    graph_ids = torch.arange(GRAPHS, device=dev)  # SYNCSPY-CLEAN: setup allocation
    encoder = torch.nn.Sequential(torch.nn.Linear(FEATS, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.ReLU()).to(dev)  # SYNCSPY-CLEAN: setup upload
    head = torch.nn.Sequential(torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, 1)).to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(list(encoder.parameters()) + list(head.parameters()), lr=1e-3)
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation

    for step in range(STEPS):
        x = nodes[offsets[step]:offsets[step + 1]]
        counts = counts_all[step]
        batch = torch.repeat_interleave(graph_ids, counts)  # SYNCSPY-PROBLEM: repeat_interleave without output_size reads the total back every step
        h = encoder(x)  # SYNCSPY-CLEAN: allocator growth (the node count varies)
        assign = (batch.unsqueeze(0) == graph_ids.unsqueeze(1)).float()  # SYNCSPY-CLEAN: allocator growth (the node count varies)
        pooled = (assign @ h) / counts.unsqueeze(1).float()
        loss = torch.nn.functional.mse_loss(head(pooled), targets[step])  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth (the node count varies)
        opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
        loss_sum += loss.detach()

    print("t21_segment_repeat_interleave: steps=%d nodes=%d mean_loss=%.4f last=%.4f result=OK" % (STEPS, offsets[-1], loss_sum.item() / STEPS, loss.item()))  # SYNCSPY-CLEAN: final read
    return 0


if __name__ == "__main__":
    sys.exit(main())
