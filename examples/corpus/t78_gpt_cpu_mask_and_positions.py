#!/usr/bin/env python3
"""examples/corpus/t78_gpt_cpu_mask_and_positions.py: corpus workload (PyTorch). Pre-training a
small GPT-style decoder (4 layers, pre-LayerNorm, learned positions, weight-tied head) on a
synthetic token stream kept on the GPU, with AdamW and a warm-up/cosine learning rate computed
in Python. Two helpers build constant tensors on the CPU and move them inside `forward`, every
call: `GPT.forward` makes the position ids with `torch.arange(t).to(idx.device)`, and every
attention layer builds its causal mask with `torch.triu(torch.ones(t, t, dtype=torch.bool),
1).to(x.device)`. Each `.to(device)` of a CPU tensor is a copy from pageable host memory with
`non_blocking=False`; ATen's CUDA copy issues `cudaMemcpyAsync` and then
`cudaStreamSynchronize` (`memcpy_and_sync`), so the host waits for everything queued. The
position ids wait for the previous step's backward and optimizer (expensive); each layer's mask
then waits for the few kernels queued since (cheap), every step. `torch.arange(t,
device=idx.device)` and a mask registered once as a buffer, or `is_causal=True`, avoid both.
Planted: the `torch.arange(t).to(idx.device)` line in GPT.forward and the `torch.triu(...).to(
x.device)` line in CausalSelfAttention.forward, every step.
Clean: setup (the token stream, the offsets table), allocator growth in the first steps, the
windowed loss kept on the GPU, the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

STEPS, BATCH, CTX, VOCAB, D_MODEL, HEADS, LAYERS, STREAM = 40, 32, 128, 2048, 256, 8, 4, 1 << 18
WARMUP, LR = 8, 6e-4


class CausalSelfAttention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(D_MODEL, 3 * D_MODEL)
        self.proj = torch.nn.Linear(D_MODEL, D_MODEL)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, HEADS, c // HEADS).permute(2, 0, 3, 1, 4)
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1).to(x.device)  # SYNCSPY-PROBLEM: blocking H2D copy of a CPU-built mask from pageable memory (memcpy_and_sync), every layer of every step
        att = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(c // HEADS))
        att = att.masked_fill(mask, float("-inf")).softmax(dim=-1)
        return self.proj((att @ v).transpose(1, 2).reshape(b, t, c))


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(D_MODEL), torch.nn.LayerNorm(D_MODEL)
        self.attn = CausalSelfAttention()
        self.mlp = torch.nn.Sequential(torch.nn.Linear(D_MODEL, 4 * D_MODEL), torch.nn.GELU(), torch.nn.Linear(4 * D_MODEL, D_MODEL))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = torch.nn.Embedding(VOCAB, D_MODEL)
        self.pos = torch.nn.Embedding(CTX, D_MODEL)
        self.blocks = torch.nn.ModuleList([Block() for _ in range(LAYERS)])
        self.ln_f = torch.nn.LayerNorm(D_MODEL)
        self.head = torch.nn.Linear(D_MODEL, VOCAB, bias=False)
        self.head.weight = self.tok.weight

    def forward(self, idx):
        t = idx.shape[1]
        pos = torch.arange(t).to(idx.device)  # SYNCSPY-PROBLEM: blocking H2D copy of CPU position ids from pageable memory (memcpy_and_sync), every step
        x = self.tok(idx) + self.pos(pos)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def lr_at(step):
    if step < WARMUP:
        return LR * (step + 1) / WARMUP
    return 0.1 * LR + 0.45 * LR * (1 + math.cos(math.pi * (step - WARMUP) / (STEPS - WARMUP)))


def make_stream(dev, gen):
    """A stream with local structure: runs of an arithmetic pattern of random stride."""
    starts = torch.randint(0, VOCAB, (STREAM // 16, 1), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    strides = torch.randint(1, 7, (STREAM // 16, 1), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    steps = torch.arange(16, device=dev).view(1, 16)  # SYNCSPY-CLEAN: setup allocation
    return ((starts + strides * steps) % VOCAB).reshape(-1)


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(1)
    stream = make_stream(dev, gen)
    window = torch.arange(CTX + 1, device=dev).view(1, -1)  # SYNCSPY-CLEAN: setup allocation
    model = GPT().to(dev)  # SYNCSPY-CLEAN: setup upload
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}], lr=LR, betas=(0.9, 0.95))
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation

    model.train()
    for step in range(STEPS):
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        offsets = torch.randint(0, STREAM - CTX - 1, (BATCH, 1), device=dev, generator=gen)
        chunk = stream[offsets + window]
        logits = model(chunk[:, :-1])  # SYNCSPY-CLEAN: allocator growth in the first steps
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), chunk[:, 1:].reshape(-1))  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()  # SYNCSPY-CLEAN: AdamW state allocated on the first step
        loss_sum += loss.detach()

    mean_loss = loss_sum.item() / STEPS  # SYNCSPY-CLEAN: final read
    ok = math.isfinite(mean_loss)  # 40 steps do not bring the loss under log(VOCAB) + 1 on every GPU
    print("t78_gpt_cpu_mask_and_positions: steps=%d batch=%d ctx=%d layers=%d result=%s" % (STEPS, BATCH, CTX, LAYERS, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
