#!/usr/bin/env python3
"""examples/corpus/t51_kv_cache_cat_growth.py: corpus workload (PyTorch). Greedy decoding of a
decoder-only transformer (bf16, 4 layers, batch 64, a 32-token prompt, 160 new tokens) whose
attention keeps its key/value cache the simple way: every generated token,
`k = torch.cat([cache_k, k], dim=2)` and the same for v, in every layer. Each cat allocates a
new tensor one token longer than the last and copies the whole cache into it. The caches are
large (batch 64, 8 heads of 128, bf16: 128 KiB per token per tensor, 4 MiB after the prompt,
24 MiB at the end, 8 of them live plus the 8 they replace), and every request is larger than
any block freed before it (a freed block serves only requests no larger than itself; requests
of 10 MiB and more get segments of their own size rounded to 2 MiB). The live caches grow from
about 64 MiB to 384 MiB during the decode, far past what the prefill left cached, so the
caching allocator keeps asking the driver for new segments (cudaMalloc) all through the
decode, not only in its first steps. A cache preallocated for the final length and written in
place (t52) allocates once.
Planted: the two `torch.cat` lines of the cache update, every decoding step, every layer.
Clean: setup, the prefill's allocations, allocator growth of the first decoding steps on the
other lines, the final read.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

VOCAB, D_MODEL, HEADS, HEAD_DIM, LAYERS, D_FF = 4096, 1024, 8, 128, 4, 4096
BATCH, PROMPT, NEW_TOKENS = 64, 32, 160
MAX_POS = PROMPT + NEW_TOKENS


class CachedSelfAttention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(D_MODEL, 3 * D_MODEL, bias=False)
        self.out = torch.nn.Linear(D_MODEL, D_MODEL, bias=False)
        self.register_buffer("future", torch.triu(torch.ones(MAX_POS, MAX_POS, dtype=torch.bool), diagonal=1))

    def forward(self, x, cache):
        B, T, _ = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, HEADS, HEAD_DIM).permute(2, 0, 3, 1, 4)
        if cache is not None:
            k = torch.cat([cache[0], k], dim=2)  # SYNCSPY-PROBLEM: the key cache reallocated one token longer (the allocator grows all through the decode), every step
            v = torch.cat([cache[1], v], dim=2)  # SYNCSPY-PROBLEM: the value cache reallocated one token longer (the allocator grows all through the decode), every step
        scores = (q @ k.transpose(-1, -2)) * HEAD_DIM ** -0.5
        if T > 1:
            scores = scores.masked_fill(self.future[:T, :T], float("-inf"))
        attn = scores.float().softmax(dim=-1).to(q.dtype)
        y = (attn @ v).transpose(1, 2).reshape(B, T, D_MODEL)
        return self.out(y), (k, v)


class DecoderBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(D_MODEL)
        self.attn = CachedSelfAttention()
        self.ln2 = torch.nn.LayerNorm(D_MODEL)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(D_MODEL, D_FF), torch.nn.GELU(), torch.nn.Linear(D_FF, D_MODEL))

    def forward(self, x, cache):
        a, cache = self.attn(self.ln1(x), cache)
        x = x + a
        return x + self.mlp(self.ln2(x)), cache


class Decoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = torch.nn.Embedding(VOCAB, D_MODEL)
        self.pos = torch.nn.Parameter(torch.randn(MAX_POS, D_MODEL) * 0.02)
        self.blocks = torch.nn.ModuleList([DecoderBlock() for _ in range(LAYERS)])
        self.ln_f = torch.nn.LayerNorm(D_MODEL)
        self.head = torch.nn.Linear(D_MODEL, VOCAB, bias=False)

    def forward(self, ids, caches, start):
        h = self.tok(ids) + self.pos[start:start + ids.shape[1]]
        new_caches = []
        for block, cache in zip(self.blocks, caches):
            h, cache = block(h, cache)
            new_caches.append(cache)
        return self.head(self.ln_f(h[:, -1])), new_caches


@torch.no_grad()
def greedy_generate(model, prompt, new_tokens, dev):
    out = torch.empty(prompt.shape[0], new_tokens, dtype=torch.long, device=dev)  # SYNCSPY-CLEAN: setup allocation
    logits, caches = model(prompt, [None] * LAYERS, 0)  # SYNCSPY-CLEAN: the prefill's allocations, once
    next_id = logits.argmax(dim=-1)
    for i in range(new_tokens):
        out[:, i] = next_id
        logits, caches = model(next_id.unsqueeze(1), caches, PROMPT + i)  # SYNCSPY-CLEAN: allocator growth in the first decoding steps
        next_id = logits.argmax(dim=-1)
    return out, caches, logits


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    model = Decoder().to(dev, dtype=torch.bfloat16).eval()  # SYNCSPY-CLEAN: setup upload
    prompt = torch.randint(0, VOCAB, (BATCH, PROMPT), device=dev)  # SYNCSPY-CLEAN: setup allocation

    out, caches, logits = greedy_generate(model, prompt, NEW_TOKENS, dev)

    cache_len = caches[0][0].shape[2]
    valid = ((out >= 0) & (out < VOCAB)).all() & torch.isfinite(logits).all()
    ok = bool(valid.item()) and cache_len == MAX_POS  # SYNCSPY-CLEAN: final read
    print("t51_kv_cache_cat_growth: batch=%d new_tokens=%d cache_len=%d result=OK" % (BATCH, NEW_TOKENS, cache_len))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
