#!/usr/bin/env python3
"""examples/corpus/t52_clean_static_kv_cache_decode.py: corpus workload (PyTorch), CLEAN.
Sampling from a small decoder-only transformer the way static-cache generators (gpt-fast,
Hugging Face's StaticCache) do: the key/value cache and the output token buffer are allocated
once for the final length, each step writes its keys and values in place (slice assignment,
a device copy), attention always spans the whole cache with a mask built from a Python
position (so every decoding step has the same shapes and the caching allocator stops growing
after the first one), top-k filtering uses a slice of the top-k values and `torch.where`, and
the next token is drawn with the exponential-race trick, `argmax(probs / Exp(1) noise)`, which
samples from the same distribution as `torch.multinomial` without its host-side checks.
Finished rows are tracked with a device-side flag and `masked_fill`. One final read of the
tokens.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

VOCAB, D_MODEL, HEADS, HEAD_DIM, LAYERS, D_FF = 2048, 512, 8, 64, 4, 2048
BATCH, PROMPT, NEW_TOKENS, TOP_K, TEMPERATURE, EOS, PAD = 32, 32, 96, 40, 0.8, 2, 0
MAX_LEN = PROMPT + NEW_TOKENS


class StaticKVCache:
    def __init__(self, dev, dtype):
        shape = (LAYERS, BATCH, HEADS, MAX_LEN, HEAD_DIM)
        self.k = torch.zeros(shape, device=dev, dtype=dtype)  # SYNCSPY-CLEAN: setup allocation, once for the final length
        self.v = torch.zeros(shape, device=dev, dtype=dtype)  # SYNCSPY-CLEAN: setup allocation, once for the final length
        self.key_pos = torch.arange(MAX_LEN, device=dev)  # SYNCSPY-CLEAN: setup allocation

    def update(self, layer, start, k, v):
        t = k.shape[2]
        self.k[layer, :, :, start:start + t] = k
        self.v[layer, :, :, start:start + t] = v
        return self.k[layer], self.v[layer]

    def mask(self, start, t):
        query_pos = self.key_pos[start:start + t]
        return self.key_pos.view(1, -1) > query_pos.view(-1, 1)


class Attention(torch.nn.Module):
    def __init__(self, layer):
        super().__init__()
        self.layer = layer
        self.qkv = torch.nn.Linear(D_MODEL, 3 * D_MODEL, bias=False)
        self.out = torch.nn.Linear(D_MODEL, D_MODEL, bias=False)

    def forward(self, x, cache, start):
        B, T, _ = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, HEADS, HEAD_DIM).permute(2, 0, 3, 1, 4)
        keys, values = cache.update(self.layer, start, k, v)
        scores = (q @ keys.transpose(-1, -2)) * HEAD_DIM ** -0.5
        scores = scores.masked_fill(cache.mask(start, T), float("-inf"))
        attn = scores.float().softmax(dim=-1).to(q.dtype)
        return self.out((attn @ values).transpose(1, 2).reshape(B, T, D_MODEL))


class Block(torch.nn.Module):
    def __init__(self, layer):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(D_MODEL)
        self.attn = Attention(layer)
        self.ln2 = torch.nn.LayerNorm(D_MODEL)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(D_MODEL, D_FF), torch.nn.SiLU(), torch.nn.Linear(D_FF, D_MODEL))

    def forward(self, x, cache, start):
        x = x + self.attn(self.ln1(x), cache, start)
        return x + self.mlp(self.ln2(x))


class LanguageModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = torch.nn.Embedding(VOCAB, D_MODEL)
        self.pos = torch.nn.Parameter(torch.randn(MAX_LEN, D_MODEL) * 0.02)
        self.blocks = torch.nn.ModuleList([Block(i) for i in range(LAYERS)])
        self.ln_f = torch.nn.LayerNorm(D_MODEL)
        self.head = torch.nn.Linear(D_MODEL, VOCAB, bias=False)

    def forward(self, ids, cache, start):
        h = self.tok(ids) + self.pos[start:start + ids.shape[1]]
        for block in self.blocks:
            h = block(h, cache, start)
        return self.head(self.ln_f(h[:, -1])).float()


def sample_next(logits, generator):
    logits = logits / TEMPERATURE
    kth = torch.topk(logits, TOP_K, dim=-1).values[:, -1:]
    logits = torch.where(logits < kth, torch.full_like(logits, float("-inf")), logits)
    probs = F.softmax(logits, dim=-1)
    race = torch.empty_like(probs).exponential_(1.0, generator=generator)
    return torch.argmax(probs / race, dim=-1)


@torch.no_grad()
def generate(model, prompt, dev):
    cache = StaticKVCache(dev, torch.bfloat16)
    tokens = torch.full((BATCH, MAX_LEN), PAD, dtype=torch.long, device=dev)  # SYNCSPY-CLEAN: setup allocation
    finished = torch.zeros(BATCH, dtype=torch.bool, device=dev)  # SYNCSPY-CLEAN: setup allocation
    generator = torch.Generator(device=dev).manual_seed(42)
    tokens[:, :PROMPT] = prompt
    logits = model(prompt, cache, 0)  # SYNCSPY-CLEAN: the prefill's allocations, once
    for i in range(NEW_TOKENS):
        next_id = sample_next(logits, generator).masked_fill(finished, PAD)
        tokens[:, PROMPT + i] = next_id
        finished |= next_id == EOS
        if i + 1 < NEW_TOKENS:
            logits = model(next_id.unsqueeze(1), cache, PROMPT + i)  # SYNCSPY-CLEAN: allocator growth in the first decoding step (shapes fixed after it)
    return tokens, finished


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    model = LanguageModel().to(dev, dtype=torch.bfloat16).eval()  # SYNCSPY-CLEAN: setup upload
    prompt = torch.randint(3, VOCAB, (BATCH, PROMPT), device=dev)  # SYNCSPY-CLEAN: setup allocation

    tokens, finished = generate(model, prompt, dev)

    rows = tokens.tolist()  # SYNCSPY-CLEAN: final read
    ok = len(rows) == BATCH and all(len(r) == MAX_LEN and min(r) >= 0 and max(r) < VOCAB for r in rows) and rows[0][:PROMPT] != [PAD] * PROMPT
    print("t52_clean_static_kv_cache_decode: batch=%d new_tokens=%d max_len=%d result=OK" % (BATCH, NEW_TOKENS, MAX_LEN))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
