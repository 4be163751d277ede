#!/usr/bin/env python3
"""examples/corpus/t57_embedding_export_pinned_per_batch.py: corpus workload (PyTorch). An
embedding export job: an encoder maps a corpus of 48 batches of items to L2-normalized
embeddings, and each batch's embeddings are offloaded with `emb.to("cpu", non_blocking=True)`
and kept in a list; one stream synchronize after the loop, then the host concatenates them and
computes a retrieval metric. The copies are asynchronous, but `.to("cpu", non_blocking=True)`
allocates its destination: ATen's _to_copy asks for pinned memory when a non-blocking copy goes
from CUDA to the CPU, from the CUDA caching host allocator, and since every earlier chunk is
still held in the list no cached pinned block is ever free, so each batch's chunk is a fresh
page-locked allocation (cudaHostAlloc), every batch. Copying into slices of one pinned buffer
allocated before the loop (t58) allocates once.
Planted: the `.to("cpu", non_blocking=True)` of each batch's embeddings (a pinned host
allocation), every batch.
Clean: setup, allocator growth in the first batches, the one stream synchronize after the
loop, the host-side metric.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

BATCHES, BATCH, D_IN, HIDDEN, D_EMB, QUERIES, NOISE = 48, 512, 256, 1024, 256, 512, 0.1


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(D_IN, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, D_EMB))

    def forward(self, x):
        return F.normalize(self.net(x), dim=-1)


class EmbeddingExporter:
    def __init__(self, model):
        self.model = model
        self.host_chunks = []

    def export(self, corpus):
        self.model.eval()
        with torch.no_grad():
            for b in range(corpus.shape[0]):
                emb = self.model(corpus[b])  # SYNCSPY-CLEAN: allocator growth in the first batches
                self.host_chunks.append(emb.to("cpu", non_blocking=True))  # SYNCSPY-PROBLEM: a new pinned host block (cudaHostAlloc) for the non-blocking copy, every batch
        torch.cuda.current_stream().synchronize()  # SYNCSPY-CLEAN: once, before the host reads the chunks
        return torch.cat(self.host_chunks)


def recall_at_1(embeddings):
    """Items i and i + N/2 are noisy copies of one another: query the first QUERIES items."""
    half = embeddings.shape[0] // 2
    queries = embeddings[:QUERIES]
    sims = queries @ embeddings.T
    sims[torch.arange(QUERIES), torch.arange(QUERIES)] = -2.0
    hits = (sims.argmax(dim=1) == torch.arange(QUERIES) + half).float().mean()
    return float(hits)


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    half = BATCHES * BATCH // 2
    base = torch.randn(half, D_IN, device=dev)  # SYNCSPY-CLEAN: setup allocation
    corpus = torch.cat([base, base + NOISE * torch.randn(half, D_IN, device=dev)]).view(BATCHES, BATCH, D_IN)  # SYNCSPY-CLEAN: setup allocation
    model = Encoder().to(dev)  # SYNCSPY-CLEAN: setup upload

    embeddings = EmbeddingExporter(model).export(corpus)
    recall = recall_at_1(embeddings)

    ok = tuple(embeddings.shape) == (BATCHES * BATCH, D_EMB) and recall > 0.5
    print("t57_embedding_export_pinned_per_batch: batches=%d items=%d dim=%d retrieval_ok=%d result=OK" % (BATCHES, BATCHES * BATCH, D_EMB, int(ok)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
