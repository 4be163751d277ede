#!/usr/bin/env python3
"""examples/corpus/t64_prefix_cache_torch_equal.py: corpus workload (PyTorch). A small
LLM-serving engine with prefix caching: requests share one of three system prompts, the
engine keeps each system prompt's keys and values on the GPU and, for every request, looks
the prompt up in its PrefixCache by comparing the uploaded token ids with each cached prefix
through `torch.equal`. `torch.equal` returns a Python bool: on CUDA it computes
`eq(a, b).all()` and reads it with `.item()`, a blocking device-to-host copy that waits for
everything queued before it (the previous request's decode), once per cached entry tried, on
every request. The token ids are on the host before they are uploaded: hashing them there
(a dict keyed by the prefix tuple) finds the entry without a host wait.
Planted: the `torch.equal` line in PrefixCache.lookup, every request.
Clean: setup, the pinned arrival buffer and its non_blocking uploads, the prefill of each
system prompt once, allocator growth in the first requests, the final read.
"""
import os
import random
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

VOCAB, D_MODEL, HEADS, LAYERS, D_FF, MAX_LEN = 1024, 256, 4, 2, 1024, 96
HEAD_DIM = D_MODEL // HEADS
REQUESTS, NEW_TOKENS, SYSTEM_LENS = 40, 8, (48, 40, 56)


class Attention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(D_MODEL, 3 * D_MODEL, bias=False)
        self.out = torch.nn.Linear(D_MODEL, D_MODEL, bias=False)

    def forward(self, x, k_cache, v_cache, start, key_pos):
        t = x.shape[0]
        q, k, v = self.qkv(x).view(t, 3, HEADS, HEAD_DIM).permute(1, 2, 0, 3)
        k_cache[:, start:start + t] = k
        v_cache[:, start:start + t] = v
        scores = (q @ k_cache.transpose(-1, -2)) * HEAD_DIM ** -0.5
        future = key_pos.view(1, -1) > key_pos[start:start + t].view(-1, 1)
        attn = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
        return self.out((attn @ v_cache).transpose(0, 1).reshape(t, D_MODEL))


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(D_MODEL), torch.nn.LayerNorm(D_MODEL)
        self.attn = Attention()
        self.mlp = torch.nn.Sequential(torch.nn.Linear(D_MODEL, D_FF), torch.nn.GELU(), torch.nn.Linear(D_FF, D_MODEL))

    def forward(self, x, k_cache, v_cache, start, key_pos):
        x = x + self.attn(self.ln1(x), k_cache, v_cache, start, key_pos)
        return x + self.mlp(self.ln2(x))


class TinyLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = torch.nn.Embedding(VOCAB, D_MODEL)
        self.pos = torch.nn.Embedding(MAX_LEN, D_MODEL)
        self.blocks = torch.nn.ModuleList([Block() for _ in range(LAYERS)])
        self.ln_f = torch.nn.LayerNorm(D_MODEL)
        self.head = torch.nn.Linear(D_MODEL, VOCAB, bias=False)

    def forward(self, ids, kv, start, key_pos):
        h = self.tok(ids) + self.pos(key_pos[start:start + ids.shape[0]])
        for layer, block in enumerate(self.blocks):
            h = block(h, kv[0, layer], kv[1, layer], start, key_pos)
        return self.head(self.ln_f(h[-1]))


class CacheEntry:
    def __init__(self, tokens, kv):
        self.tokens, self.kv, self.length = tokens, kv, tokens.shape[0]


class PrefixCache:
    def __init__(self):
        self.entries = []

    def lookup(self, tokens):
        for entry in self.entries:
            if entry.length <= tokens.shape[0] and torch.equal(tokens[:entry.length], entry.tokens):  # SYNCSPY-PROBLEM: torch.equal reads eq(...).all() on the host (.item(): blocking D2H), per cached entry tried, every request
                return entry
        return None

    def insert(self, tokens, kv):
        entry = CacheEntry(tokens.clone(), kv[:, :, :, :tokens.shape[0]].clone())  # SYNCSPY-CLEAN: a new system prompt's keys and values, three times in all
        self.entries.append(entry)
        return entry


class Engine:
    def __init__(self, model, arrivals, dev):
        self.model = model
        self.arrivals = arrivals
        self.cache = PrefixCache()
        self.tokens = torch.zeros(MAX_LEN, dtype=torch.long, device=dev)  # SYNCSPY-CLEAN: setup allocation
        self.kv = torch.zeros(2, LAYERS, HEADS, MAX_LEN, HEAD_DIM, device=dev)  # SYNCSPY-CLEAN: setup allocation
        self.key_pos = torch.arange(MAX_LEN, device=dev)  # SYNCSPY-CLEAN: setup allocation
        self.hits = 0

    @torch.no_grad()
    def serve(self, offset, length, system_len, out_row):
        self.tokens[:length].copy_(self.arrivals[offset:offset + length], non_blocking=True)  # SYNCSPY-CLEAN: asynchronous upload from the pinned arrival buffer
        prompt = self.tokens[:length]
        entry = self.cache.lookup(prompt)
        if entry is None:
            self.model(prompt[:system_len], self.kv, 0, self.key_pos)  # SYNCSPY-CLEAN: a system prompt's prefill, three times in all
            entry = self.cache.insert(prompt[:system_len], self.kv)
        else:
            self.hits += 1
            self.kv[:, :, :, :entry.length].copy_(entry.kv)  # SYNCSPY-CLEAN: device-to-device copy of the cached prefix's keys and values
        logits = self.model(prompt[entry.length:], self.kv, entry.length, self.key_pos)  # SYNCSPY-CLEAN: allocator growth in the first requests (suffix lengths 4-12)
        for i in range(NEW_TOKENS):
            nxt = logits.argmax(dim=-1, keepdim=True)
            out_row[i] = nxt[0]  # SYNCSPY-CLEAN: device-to-device copy of the token
            if i + 1 < NEW_TOKENS:
                logits = self.model(nxt, self.kv, length + i, self.key_pos)  # SYNCSPY-CLEAN: allocator growth in the first decoding steps


def make_requests(rng):
    systems = [[rng.randrange(3, VOCAB) for _ in range(n)] for n in SYSTEM_LENS]
    reqs = []
    for r in range(REQUESTS):
        s = r % len(systems)
        user = [rng.randrange(3, VOCAB) for _ in range(rng.randint(4, 12))]
        reqs.append((s, systems[s] + user))
    return systems, reqs


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    systems, reqs = make_requests(random.Random(0))
    flat = [t for _, ids in reqs for t in ids]
    arrivals = torch.tensor(flat, dtype=torch.long).pin_memory()  # SYNCSPY-CLEAN: setup, the arrival buffer pinned once
    model = TinyLM().to(dev).eval()  # SYNCSPY-CLEAN: setup upload
    engine = Engine(model, arrivals, dev)
    out = torch.zeros(REQUESTS, NEW_TOKENS, dtype=torch.long, device=dev)  # SYNCSPY-CLEAN: setup allocation

    offset = 0
    for r, (s, ids) in enumerate(reqs):
        engine.serve(offset, len(ids), len(systems[s]), out[r])
        offset += len(ids)

    rows = out.tolist()  # SYNCSPY-CLEAN: final read
    ok = engine.hits == REQUESTS - len(systems) and all(0 <= t < VOCAB for row in rows for t in row)
    print("t64_prefix_cache_torch_equal: requests=%d cache_hits=%d new_tokens=%d result=OK" % (REQUESTS, engine.hits, NEW_TOKENS))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
