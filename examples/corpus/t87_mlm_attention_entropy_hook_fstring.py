#!/usr/bin/env python3
"""examples/corpus/t87_mlm_attention_entropy_hook_fstring.py: corpus workload (PyTorch).
Masked-language-model pretraining of a small pre-norm Transformer encoder (BERT-style 80/10/10
masking, tied output embedding) on synthetic token streams with padding. An attention-entropy
monitor, kept to catch attention collapse, registers a forward hook on every self-attention
module; the hook adds the layer's mean attention entropy to a GPU accumulator and then logs it
with `log.debug(f"{name}: attention entropy {ent:.3f} nats")`. The logger is at INFO, so the
record is dropped, but the f-string is built before `debug` is called: formatting a 0-dim
tensor with a format spec goes through `Tensor.__format__` (torch/_tensor.py), which returns
`self.item().__format__(spec)` (newer releases `self.detach().item()`): a blocking
device-to-host read in the middle of the forward pass, every attention layer of every step.
Lazy %-formatting (`log.debug("%s ...", name, ent)`) would never touch the tensor at INFO.
Planted: the `log.debug(f"...")` line in AttentionEntropyMonitor's hook, every attention layer
of every step.
Clean: setup (the token pool and masks generated on the GPU, the model upload, the monitor's
accumulators), allocator growth in the first steps, the final read.
"""
import logging
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

STEPS, BATCH, SEQ, POOL, VOCAB, DIM, HEADS, LAYERS = 40, 64, 128, 2048, 8192, 256, 4, 4
PAD, MASK, FIRST_WORD = 0, 1, 4
log = logging.getLogger("mlm")


class SelfAttention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(DIM, 3 * DIM)
        self.proj = torch.nn.Linear(DIM, DIM)

    def forward(self, x, pad_bias):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, HEADS, d // HEADS).permute(2, 0, 3, 1, 4)
        probs = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d // HEADS) + pad_bias, dim=-1)
        return self.proj((probs @ v).transpose(1, 2).reshape(b, t, d)), probs


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(DIM), torch.nn.LayerNorm(DIM)
        self.attn = SelfAttention()
        self.mlp = torch.nn.Sequential(torch.nn.Linear(DIM, 4 * DIM), torch.nn.GELU(), torch.nn.Linear(4 * DIM, DIM))

    def forward(self, x, pad_bias):
        x = x + self.attn(self.ln1(x), pad_bias)[0]
        return x + self.mlp(self.ln2(x))


class MaskedLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = torch.nn.Embedding(VOCAB, DIM)
        self.pos = torch.nn.Embedding(SEQ, DIM)
        self.blocks = torch.nn.ModuleList([Block() for _ in range(LAYERS)])
        self.ln = torch.nn.LayerNorm(DIM)

    def forward(self, ids):
        pad_bias = (ids == PAD).float().mul(-1e4).view(ids.shape[0], 1, 1, -1)
        h = self.tok(ids) + self.pos.weight[: ids.shape[1]]
        for blk in self.blocks:
            h = blk(h, pad_bias)
        return self.ln(h) @ self.tok.weight.t()


class AttentionEntropyMonitor:
    """Mean attention entropy per layer, summed on the GPU; a falling entropy flags collapse."""

    def __init__(self, model, dev):
        self.sums = {}
        for name, module in model.named_modules():
            if isinstance(module, SelfAttention):
                self.sums[name] = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
                module.register_forward_hook(self._make_hook(name))

    def _make_hook(self, name):
        def hook(module, inputs, output):
            probs = output[1].detach()
            ent = -(probs * probs.clamp_min(1e-9).log()).sum(dim=-1).mean()
            self.sums[name] += ent
            log.debug(f"{name}: attention entropy {ent:.3f} nats")  # SYNCSPY-PROBLEM: the f-string formats the CUDA tensor before the level check: Tensor.__format__ calls .item() (blocking), every attention layer of every step
        return hook


def make_pool(dev, gen):
    """Per-sequence arithmetic token patterns with 20% noise, right-padded to random lengths."""
    pos = torch.arange(SEQ, device=dev).view(1, -1)  # SYNCSPY-CLEAN: setup allocation
    base = torch.randint(FIRST_WORD, VOCAB // 2, (POOL, 1), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    stride = torch.randint(1, 17, (POOL, 1), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    ids = base + (pos * stride) % 509
    noise = torch.randint(FIRST_WORD, VOCAB, (POOL, SEQ), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    ids = torch.where(torch.rand(POOL, SEQ, device=dev, generator=gen) < 0.2, noise, ids)  # SYNCSPY-CLEAN: setup allocation
    lengths = torch.randint(SEQ // 2, SEQ + 1, (POOL, 1), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    return torch.where(pos < lengths, ids, torch.full_like(ids, PAD))


def mask_tokens(ids, dev, gen):
    r = torch.rand(ids.shape, device=dev, generator=gen)
    chosen = (r < 0.15) & (ids != PAD)
    labels = torch.where(chosen, ids, torch.full_like(ids, -100))
    rnd = torch.randint(FIRST_WORD, VOCAB, ids.shape, device=dev, generator=gen)
    inputs = torch.where(chosen & (r < 0.12), torch.full_like(ids, MASK), ids)
    inputs = torch.where(chosen & (r >= 0.12) & (r < 0.135), rnd, inputs)
    return inputs, labels


def main():
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(87)
    pool = make_pool(dev, gen)
    model = MaskedLM().to(dev)  # SYNCSPY-CLEAN: setup upload
    monitor = AttentionEntropyMonitor(model, dev)
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.01)
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation

    for step in range(STEPS):
        s = (step * BATCH) % POOL
        inputs, labels = mask_tokens(pool[s:s + BATCH], dev, gen)
        logits = model(inputs)  # SYNCSPY-CLEAN: allocator growth in the first steps
        loss = F.cross_entropy(logits.view(-1, VOCAB), labels.view(-1), ignore_index=-100)
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()  # SYNCSPY-CLEAN: AdamW state allocated on the first step
        loss_sum += loss.detach()

    values = torch.stack([loss_sum / STEPS] + [v / STEPS for v in monitor.sums.values()]).tolist()  # SYNCSPY-CLEAN: final read
    mean_loss, entropies = values[0], values[1:]
    ok = math.isfinite(mean_loss) and len(entropies) == LAYERS and all(0.0 <= e <= math.log(SEQ) + 1e-3 for e in entropies)
    print("t87_mlm_attention_entropy_hook_fstring: steps=%d batch=%d seq=%d layers=%d vocab=%d result=%s" % (STEPS, BATCH, SEQ, LAYERS, VOCAB, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
