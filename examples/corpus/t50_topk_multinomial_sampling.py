#!/usr/bin/env python3
"""examples/corpus/t50_topk_multinomial_sampling.py: corpus workload (PyTorch). A minGPT-style
character model trained for a few steps, then sampled with the classic `generate()` loop
(temperature, top-k filtering, `torch.multinomial`), as minGPT and nanoGPT write it. Two lines
of that loop wait for the GPU every generated token:
- `logits[logits < v[:, [-1]]] = -float("Inf")`: the index `[-1]` is a Python list, which
  torch turns into an index tensor on the CPU and copies to the device with a blocking copy
  from pageable memory (cudaMemcpyAsync + stream sync); it waits for the forward pass of the
  step (expensive). The masked assignment itself is dispatched to masked_fill_ (a CPU scalar
  value and a boolean mask), which does not sync.
- `torch.multinomial(probs, num_samples=1)`: for one sample (or no replacement) ATen checks the
  distribution on the host first, `((p.max() < inf) & (p.min() >= 0)).item()` and a
  `(p.sum(1) == 0).sum().item()`, two syncs inside the call (cheap after the first line's wait).
Slicing `v[:, -1:]` and sampling with the exponential trick (t52) avoid both.
Planted: the list-indexed top-k filter (expensive) and `torch.multinomial` (cheap), every
generated token.
Clean: setup, the training loop, allocator growth in the first steps, the token buffer's
small growth, the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

VOCAB, BLOCK, D_MODEL, HEADS, LAYERS, N_SEQ = 256, 64, 256, 4, 4, 512
TRAIN_STEPS, BATCH, SAMPLES, NEW_TOKENS, TEMPERATURE, TOP_K = 40, 32, 16, 48, 0.9, 20


class CausalSelfAttention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = torch.nn.Linear(D_MODEL, 3 * D_MODEL)
        self.c_proj = torch.nn.Linear(D_MODEL, D_MODEL)
        self.n_head = HEADS
        self.register_buffer("bias", torch.tril(torch.ones(BLOCK, BLOCK, dtype=torch.bool)).view(1, 1, BLOCK, BLOCK))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(~self.bias[:, :, :T, :T], float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = torch.nn.LayerNorm(D_MODEL)
        self.attn = CausalSelfAttention()
        self.ln_2 = torch.nn.LayerNorm(D_MODEL)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(D_MODEL, 4 * D_MODEL), torch.nn.GELU(), torch.nn.Linear(4 * D_MODEL, D_MODEL))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = torch.nn.Embedding(VOCAB, D_MODEL)
        self.wpe = torch.nn.Embedding(BLOCK, D_MODEL)
        self.blocks = torch.nn.ModuleList([Block() for _ in range(LAYERS)])
        self.ln_f = torch.nn.LayerNorm(D_MODEL)
        self.lm_head = torch.nn.Linear(D_MODEL, VOCAB, bias=False)

    def forward(self, idx, targets=None):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.reshape(-1))
        return logits, loss

    @torch.no_grad()
    def generate(self, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None):
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.size(1) <= BLOCK else idx[:, -BLOCK:]
            logits, _ = self(idx_cond)  # SYNCSPY-CLEAN: allocator growth in the first generation steps
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, top_k)
                logits[logits < v[:, [-1]]] = -float("Inf")  # SYNCSPY-PROBLEM: list index [-1] copied to the device from pageable memory (blocking), every token
            probs = F.softmax(logits, dim=-1)
            idx_next = torch.multinomial(probs, num_samples=1, generator=generator)  # SYNCSPY-PROBLEM: multinomial validates probs with .item() on the host, every token
            idx = torch.cat((idx, idx_next), dim=1)  # SYNCSPY-CLEAN: a small token buffer from the caching allocator
        return idx


def make_corpus(dev):
    """Arithmetic-progression 'sentences' modulo the vocabulary: learnable in a few steps."""
    gen = torch.Generator(device=dev).manual_seed(1)
    starts = torch.randint(0, VOCAB, (N_SEQ, 1), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    strides = 2 * torch.randint(0, 4, (N_SEQ, 1), device=dev, generator=gen) + 1  # SYNCSPY-CLEAN: setup allocation
    return (starts + strides * torch.arange(BLOCK + 1, device=dev)) % VOCAB  # SYNCSPY-CLEAN: setup allocation


def train(model, corpus, dev):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
    history = torch.zeros(TRAIN_STEPS, device=dev)  # SYNCSPY-CLEAN: setup allocation
    model.train()
    for step in range(TRAIN_STEPS):
        rows = corpus[(step * BATCH) % N_SEQ:(step * BATCH) % N_SEQ + BATCH]
        _, loss = model(rows[:, :-1], rows[:, 1:])  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()  # SYNCSPY-CLEAN: AdamW state allocated on the first step
        history[step] = loss.detach()
    return history


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    corpus = make_corpus(dev)
    model = GPT().to(dev)  # SYNCSPY-CLEAN: setup upload
    history = train(model, corpus, dev)

    model.eval()
    sampler = torch.Generator(device=dev).manual_seed(1234)
    prompts = corpus[:SAMPLES, :BLOCK]
    out = model.generate(prompts, NEW_TOKENS, temperature=TEMPERATURE, top_k=TOP_K, generator=sampler)
    in_range = ((out >= 0) & (out < VOCAB)).all()
    first, last, valid = torch.stack([history[:5].mean(), history[-5:].mean(), in_range.float()]).tolist()  # SYNCSPY-CLEAN: final read
    ok = last < first and valid == 1.0 and tuple(out.shape) == (SAMPLES, BLOCK + NEW_TOKENS)
    print("t50_topk_multinomial_sampling: train_steps=%d samples=%d new_tokens=%d result=OK" % (TRAIN_STEPS, SAMPLES, NEW_TOKENS))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
