#!/usr/bin/env python3
"""examples/corpus/t97_mlm_pad_in_ids_contains.py: corpus workload (PyTorch).
Masked-language-model pretraining of a small BERT-style encoder (4 pre-norm layers, width 256,
sequence 128) on a GPU-resident corpus of documents of 48-128 tokens padded with [PAD]. The
masking helper (15% of the real tokens; 80% [MASK], 10% random, 10% kept) runs on the GPU. The
encoder builds a key-padding mask only "when the batch has padding", so that packed batches
take the unmasked attention path: `if self.pad_id in ids:`. `Tensor.__contains__`
(torch/_tensor.py) is `bool((element == self).any().item())`: a blocking device-to-host read at
the start of every forward pass, behind the masking kernels and the previous step's optimizer
update; the GPU then idles while the host queues the whole forward and backward pass. Building
the mask unconditionally costs one comparison kernel and no read.
Planted: the `if self.pad_id in ids:` line in Encoder.forward, every step.
Clean: setup (the corpus generated on the GPU, the model upload), allocator growth in the first
steps, the accuracy counters kept on the GPU, the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

STEPS, BATCH, SEQ, DOCS = 40, 64, 128, 4096
VOCAB, WIDTH, HEADS, LAYERS = 8000, 256, 4, 4
PAD, CLS, SEP, MASK, FIRST_WORD = 0, 1, 2, 3, 8


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.n1, self.n2 = torch.nn.LayerNorm(WIDTH), torch.nn.LayerNorm(WIDTH)
        self.qkv = torch.nn.Linear(WIDTH, 3 * WIDTH)
        self.proj = torch.nn.Linear(WIDTH, WIDTH)
        self.ff = torch.nn.Sequential(torch.nn.Linear(WIDTH, 4 * WIDTH), torch.nn.GELU(), torch.nn.Linear(4 * WIDTH, WIDTH))

    def forward(self, x, key_pad):
        b, t, _ = x.shape
        q, k, v = self.qkv(self.n1(x)).view(b, t, 3, HEADS, WIDTH // HEADS).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(WIDTH // HEADS)
        if key_pad is not None:
            att = att.masked_fill(key_pad[:, None, None, :], float("-inf"))
        h = (att.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, t, WIDTH)
        x = x + self.proj(h)
        return x + self.ff(self.n2(x))


class Encoder(torch.nn.Module):
    def __init__(self, pad_id):
        super().__init__()
        self.pad_id = pad_id
        self.tok = torch.nn.Embedding(VOCAB, WIDTH)
        self.pos = torch.nn.Parameter(torch.randn(SEQ, WIDTH) * 0.02)
        self.blocks = torch.nn.ModuleList([Block() for _ in range(LAYERS)])
        self.norm = torch.nn.LayerNorm(WIDTH)
        self.bias = torch.nn.Parameter(torch.zeros(VOCAB))

    def forward(self, ids):
        key_pad = None
        if self.pad_id in ids:  # SYNCSPY-PROBLEM: Tensor.__contains__ is (element == self).any().item(): a blocking read, every step
            key_pad = ids.eq(self.pad_id)
        x = self.tok(ids) + self.pos[: ids.shape[1]]
        for blk in self.blocks:
            x = blk(x, key_pad)
        return F.linear(self.norm(x), self.tok.weight, self.bias)


def make_corpus(dev, gen):
    """Documents from a first-order chain over word ids: next = (a * prev + noise) mod V."""
    lengths = torch.randint(48, SEQ + 1, (DOCS,), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    noise = torch.randint(0, 16, (DOCS, SEQ), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    words = torch.empty(DOCS, SEQ, dtype=torch.long, device=dev)  # SYNCSPY-CLEAN: setup allocation
    words[:, 0] = torch.randint(0, VOCAB - FIRST_WORD, (DOCS,), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation and copy on the device
    for t in range(1, SEQ):
        words[:, t] = (words[:, t - 1] * 37 + noise[:, t]) % (VOCAB - FIRST_WORD)  # SYNCSPY-CLEAN: setup copy on the device
    ids = words + FIRST_WORD
    pos = torch.arange(SEQ, device=dev).unsqueeze(0)  # SYNCSPY-CLEAN: setup allocation
    ids = torch.where(pos == 0, torch.full_like(ids, CLS), ids)
    ids = torch.where(pos == lengths.unsqueeze(1) - 1, torch.full_like(ids, SEP), ids)
    return torch.where(pos >= lengths.unsqueeze(1), torch.full_like(ids, PAD), ids)


def mask_tokens(ids, gen):
    """BERT masking on the device: labels -100 everywhere but at the chosen positions."""
    real = ids >= FIRST_WORD
    chosen = (torch.rand(ids.shape, device=ids.device, generator=gen) < 0.15) & real
    labels = torch.where(chosen, ids, torch.full_like(ids, -100))
    r = torch.rand(ids.shape, device=ids.device, generator=gen)
    random_ids = torch.randint(FIRST_WORD, VOCAB, ids.shape, device=ids.device, generator=gen)
    inputs = torch.where(chosen & (r < 0.8), torch.full_like(ids, MASK), ids)
    inputs = torch.where(chosen & (r >= 0.8) & (r < 0.9), random_ids, inputs)
    return inputs, labels


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(97)
    corpus = make_corpus(dev, gen)
    model = Encoder(PAD).to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.01)
    losses = torch.zeros(STEPS, device=dev)  # SYNCSPY-CLEAN: setup allocation
    correct = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
    total = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation

    model.train()
    for step in range(STEPS):
        s = (step * BATCH) % DOCS
        inputs, labels = mask_tokens(corpus[s:s + BATCH], gen)
        logits = model(inputs)  # SYNCSPY-CLEAN: allocator growth in the first steps
        loss = F.cross_entropy(logits.view(-1, VOCAB), labels.view(-1), ignore_index=-100)
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: AdamW state allocated on the first step
        losses[step] = loss.detach()  # SYNCSPY-CLEAN: the step's loss copied into the loss history on the device (asynchronous device-to-device copy)
        hit = labels.ne(-100)
        correct += (logits.detach().argmax(dim=-1).eq(labels) & hit).sum()
        total += hit.sum()

    first, last, acc = torch.stack([losses[:5].mean(), losses[-5:].mean(), correct / total]).tolist()  # SYNCSPY-CLEAN: final read
    ok = math.isfinite(first) and math.isfinite(last) and last < first and 0.0 <= acc <= 1.0
    print("t97_mlm_pad_in_ids_contains: steps=%d batch=%d seq=%d vocab=%d layers=%d result=%s" % (STEPS, BATCH, SEQ, VOCAB, LAYERS, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
