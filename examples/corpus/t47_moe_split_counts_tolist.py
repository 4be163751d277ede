#!/usr/bin/env python3
"""examples/corpus/t47_moe_split_counts_tolist.py: corpus workload (PyTorch). Batched
inference through a sparse mixture-of-experts encoder (top-2 routing, 8 experts, 3 MoE
layers), written the way many MoE layers are: each layer sorts its token slots by expert and
cuts them into one chunk per expert with `routed.split(splits)`, where
`splits = counts.tolist()`. The per-expert token counts are computed on the GPU (a one_hot sum,
no host read), and Tensor.tolist copies them to the host, a blocking device-to-host copy that
waits for everything queued on the stream: the router of this layer and all of the previous
layer's experts. Every MoE layer of every batch drains the pipeline there; the GPU idles while
the host then queues eight experts' launches one after the other. A fixed-capacity dispatch
(t49) or a grouped GEMM keeps the chunk sizes on the device.
Planted: `counts.tolist()` in SparseMoE.forward, every MoE layer of every batch.
Clean: setup, allocator growth in the first batches (the four input chunks repeat, so the
expert chunk sizes repeat), the final read.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

STEPS, CHUNKS, BATCH, SEQ, D_MODEL, D_FF, EXPERTS, TOP_K, LAYERS = 40, 4, 8, 256, 512, 1024, 8, 2, 3


class Expert(torch.nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.up = torch.nn.Linear(d_model, d_ff)
        self.down = torch.nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.down(F.gelu(self.up(x)))


class SparseMoE(torch.nn.Module):
    """Top-k routing: token slots sorted by expert, one contiguous chunk per expert."""

    def __init__(self, d_model, d_ff, n_experts, top_k):
        super().__init__()
        self.n_experts, self.top_k = n_experts, top_k
        self.router = torch.nn.Linear(d_model, n_experts, bias=False)
        self.experts = torch.nn.ModuleList([Expert(d_model, d_ff) for _ in range(n_experts)])
        self.tokens_seen = [0] * n_experts

    def forward(self, x):
        n_tokens = x.shape[0]
        probs = self.router(x).softmax(dim=-1)
        gate, expert_idx = torch.topk(probs, self.top_k, dim=-1)
        gate = gate / gate.sum(dim=-1, keepdim=True)
        flat_expert = expert_idx.reshape(-1)
        order = torch.argsort(flat_expert, stable=True)
        counts = F.one_hot(flat_expert, self.n_experts).sum(dim=0)
        splits = counts.tolist()  # SYNCSPY-PROBLEM: per-expert token counts copied to the host (blocking D2H), every MoE layer of every batch
        for e, n in enumerate(splits):
            self.tokens_seen[e] += n
        routed = x.index_select(0, order // self.top_k)  # SYNCSPY-CLEAN: allocator growth in the first batches
        outs = [expert(chunk) for expert, chunk in zip(self.experts, routed.split(splits))]  # SYNCSPY-CLEAN: allocator growth in the first batches
        y_sorted = torch.cat(outs)  # SYNCSPY-CLEAN: allocator growth in the first batches
        inverse = torch.empty_like(order).scatter_(0, order, torch.arange(order.numel(), device=x.device))
        y = y_sorted[inverse].view(n_tokens, self.top_k, -1)  # SYNCSPY-CLEAN: allocator growth in the first batches
        return (y * gate.unsqueeze(-1)).sum(dim=1)


class MoEBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(D_MODEL)
        self.moe = SparseMoE(D_MODEL, D_FF, EXPERTS, TOP_K)

    def forward(self, h):
        return h + self.moe(self.norm(h))


class MoEEncoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList([MoEBlock() for _ in range(LAYERS)])
        self.final_norm = torch.nn.LayerNorm(D_MODEL)

    def forward(self, h):
        for block in self.blocks:
            h = block(h)
        return self.final_norm(h)


class Evaluator:
    def __init__(self, model, dev):
        self.model = model
        self.norm_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
        self.batches = 0

    def run(self, data):
        self.model.eval()
        with torch.no_grad():
            for step in range(STEPS):
                tokens = data[step % CHUNKS].view(-1, D_MODEL)
                hidden = self.model(tokens)  # SYNCSPY-CLEAN: allocator growth in the first batches
                self.norm_sum += hidden.norm(dim=-1).mean()
                self.batches += 1
        return self.norm_sum.item() / self.batches  # SYNCSPY-CLEAN: final read


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    data = torch.randn(CHUNKS, BATCH, SEQ, D_MODEL, device=dev)  # SYNCSPY-CLEAN: setup allocation
    model = MoEEncoder().to(dev)  # SYNCSPY-CLEAN: setup upload
    evaluator = Evaluator(model, dev)
    mean_norm = evaluator.run(data)

    slots = sum(sum(block.moe.tokens_seen) for block in model.blocks)
    ok = slots == STEPS * LAYERS * BATCH * SEQ * TOP_K and mean_norm > 1.0
    print("t47_moe_split_counts_tolist: batches=%d layers=%d routed_slots=%d result=OK" % (STEPS, LAYERS, slots))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
