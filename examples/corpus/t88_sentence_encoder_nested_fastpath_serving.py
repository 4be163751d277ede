#!/usr/bin/env python3
"""examples/corpus/t88_sentence_encoder_nested_fastpath_serving.py: corpus workload (PyTorch).
A semantic-search service: a BERT-style (post-norm) `nn.TransformerEncoder` embeds batches of
right-padded queries in eval mode under `torch.inference_mode()`; the embeddings are
mean-pooled over the real tokens, L2-normalized and scored against a document index on the GPU,
and the top 5 documents of each query are kept on the device. The encoder is built with its
defaults (`enable_nested_tensor=True`, `mask_check=True`) and called with
`src_key_padding_mask`. Under those conditions `TransformerEncoder.forward`
(torch/nn/modules/transformer.py) takes its "sparsity fast path": it first checks that the
mask is left-aligned with `torch._nested_tensor_from_mask_left_aligned(src, mask)`, whose C++
implementation returns `sizes.equal(nums)` (torch.equal, a Python bool: a blocking read of the
device), then converts the batch with `torch._nested_tensor_from_mask`, which copies the
per-row lengths to the host (`.to(kCPU)`, blocking) to build the nested tensor's sizes, and
converts the result back with `to_padded_tensor`. So every batch waits twice at the entry of
the encoder, behind the previous batch's queued work, and the GPU idles while the host builds
the nested metadata and queues the layers. With lengths of 48-64 tokens out of 64 the nested
path saves little compute; `enable_nested_tensor=False` (or padding handled by the attention
mask alone) keeps the encoder asynchronous.
Planted: the `self.encoder(h, src_key_padding_mask=pad)` line in QueryEncoder.forward, every
batch.
Clean: setup (the model upload, the document index, the result buffers), the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

BATCHES, BATCH, SEQ, MIN_LEN, VOCAB, DIM, HEADS, LAYERS, DOCS, TOPK = 60, 256, 64, 48, 16000, 256, 8, 4, 20000, 5


class QueryEncoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = torch.nn.Embedding(VOCAB, DIM, padding_idx=0)
        self.pos = torch.nn.Embedding(SEQ, DIM)
        self.ln = torch.nn.LayerNorm(DIM)
        layer = torch.nn.TransformerEncoderLayer(DIM, HEADS, 4 * DIM, dropout=0.1, activation="gelu", batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, LAYERS)
        self.proj = torch.nn.Linear(DIM, DIM)

    def forward(self, ids, pad):
        h = self.ln(self.tok(ids) + self.pos.weight[: ids.shape[1]])
        h = self.encoder(h, src_key_padding_mask=pad)  # SYNCSPY-PROBLEM: nested-tensor fast path: torch.equal of the mask check and the lengths copied to the host (two blocking reads), every batch
        keep = (~pad).unsqueeze(2).float()
        pooled = (h * keep).sum(dim=1) / keep.sum(dim=1)
        return F.normalize(self.proj(pooled), dim=1)


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(88)
    model = QueryEncoder().to(dev).eval()  # SYNCSPY-CLEAN: setup upload
    index = F.normalize(torch.randn(DOCS, DIM, device=dev, generator=gen), dim=1)  # SYNCSPY-CLEAN: setup allocation (the document index, built offline)
    top_scores = torch.zeros(BATCHES, BATCH, TOPK, device=dev)  # SYNCSPY-CLEAN: setup allocation
    top_ids = torch.zeros(BATCHES, BATCH, TOPK, dtype=torch.long, device=dev)  # SYNCSPY-CLEAN: setup allocation
    positions = torch.arange(SEQ, device=dev).view(1, -1)  # SYNCSPY-CLEAN: setup allocation

    with torch.inference_mode():
        for i in range(BATCHES):
            ids = torch.randint(1, VOCAB, (BATCH, SEQ), device=dev, generator=gen)
            lengths = torch.randint(MIN_LEN, SEQ + 1, (BATCH, 1), device=dev, generator=gen)
            pad = positions >= lengths
            emb = model(ids.masked_fill(pad, 0), pad)
            scores, idx = (emb @ index.t()).topk(TOPK, dim=1)
            top_scores[i], top_ids[i] = scores, idx

    scores_host, ids_host = top_scores.cpu(), top_ids.cpu()  # SYNCSPY-CLEAN: final read
    ok = bool(torch.isfinite(scores_host).all()) and float(scores_host.abs().max()) <= 1.0 + 1e-4 and int(ids_host.min()) >= 0 and int(ids_host.max()) < DOCS
    ok = ok and bool((scores_host[..., :-1] >= scores_host[..., 1:]).all()) and math.isclose(float(index.norm(dim=1).mean()), 1.0, rel_tol=1e-4)  # SYNCSPY-CLEAN: final read (the index norm, after the loop)
    print("t88_sentence_encoder_nested_fastpath_serving: batches=%d batch=%d seq=%d layers=%d docs=%d topk=%d result=%s" % (BATCHES, BATCH, SEQ, LAYERS, DOCS, TOPK, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
