#!/usr/bin/env python3
"""examples/corpus/t140_mlm_pretrain_masked_hidden_bool_index.py: corpus workload (PyTorch).
Masked-language-model pretraining of a small BERT-style encoder (4 pre-norm blocks of width 256,
4 heads, sequences of 64 to 128 tokens padded to 128, 64 sequences a step, a 4,096-token
vocabulary), dynamic masking on the GPU every step (15% of the real tokens, 80/10/10
[MASK]/random/kept). To save the vocabulary projection on the 85% of positions that carry no
label, `MLMModel.forward` keeps only the selected positions before the head:
`h = hidden[sel]` and `y = tokens[sel]`, `sel` a boolean CUDA mask. Indexing with a boolean
tensor turns the mask into indices with `nonzero()` (ATen/native/IndexingUtils.h,
`expandTensors`), and the torch.nonzero documentation says: "When input is on CUDA,
torch.nonzero() causes host-device synchronization" (the output size is read on the host; the
Performance Tuning Guide lists `cuda_tensor.nonzero()` among the syncs to avoid). The first
index comes right after the encoder's forward pass, so the host waits for all of it, then for
the count; the GPU idles while the host queues the head, the loss, the backward pass and the
update. The second index, on the same mask, finds the stream empty and costs its own round trip.
Planted: `h = hidden[sel]` (expensive) and `y = tokens[sel]` (cheap) in `MLMModel.forward`,
every step (one problem, two lines).
Clean: setup (the corpus built and pinned once, the validation batch and its masks made on the
GPU once), the per-step upload of the batch from pinned memory with `non_blocking=True`,
allocator growth in the first steps, the masked accuracy read once per epoch outside the step
loop, the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

VOCAB, SEQ, MIN_LEN, D, HEADS, LAYERS, FF = 4096, 128, 64, 256, 4, 4, 1024
EPOCHS, STEPS_PER_EPOCH, BATCH, VAL_BATCH, MASK_P = 3, 25, 64, 128, 0.15
PAD, CLS, SEP, MASK_ID, FIRST_WORD = 0, 1, 2, 3, 4


def make_corpus(n, gen):
    """Sentences from a sparse Markov chain: two successors a word, drawn Zipf-like."""
    zipf = 1.0 / (torch.arange(VOCAB - FIRST_WORD, dtype=torch.float64) + 10.0)
    succ = FIRST_WORD + torch.multinomial(zipf, 2 * VOCAB, replacement=True, generator=gen)
    succ = succ.view(VOCAB, 2)
    lengths = torch.randint(MIN_LEN, SEQ + 1, (n,), generator=gen)
    tok = torch.full((n, SEQ), PAD, dtype=torch.long)
    word = torch.randint(FIRST_WORD, VOCAB, (n,), generator=gen)
    tok[:, 0] = CLS
    for i in range(1, SEQ):
        tok[:, i] = word
        word = succ[word, torch.randint(0, 2, (n,), generator=gen)]
    pos = torch.arange(SEQ)
    tok[pos[None, :] == (lengths - 1)[:, None]] = SEP
    tok[pos[None, :] >= lengths[:, None]] = PAD
    return tok


def mask_tokens(tokens, gen):
    """BERT's dynamic masking on the device: returns the corrupted input and the label mask."""
    p = torch.rand(tokens.shape, device=tokens.device, generator=gen)
    sel = (p < MASK_P) & (tokens >= FIRST_WORD)
    r = torch.rand(tokens.shape, device=tokens.device, generator=gen)
    rand_tok = torch.randint(FIRST_WORD, VOCAB, tokens.shape, device=tokens.device, generator=gen)
    inp = torch.where(sel & (r >= 0.8) & (r < 0.9), rand_tok, tokens)
    return inp.masked_fill(sel & (r < 0.8), MASK_ID), sel


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(D), torch.nn.LayerNorm(D)
        self.qkv, self.proj = torch.nn.Linear(D, 3 * D), torch.nn.Linear(D, D)
        self.ff = torch.nn.Sequential(torch.nn.Linear(D, FF), torch.nn.GELU(),
                                      torch.nn.Linear(FF, D))

    def forward(self, x, pad):
        b, n, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, n, 3, HEADS, D // HEADS).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-2, -1)) * (D // HEADS) ** -0.5  # SYNCSPY-CLEAN: growth, first steps
        att = att.masked_fill(pad[:, None, None, :], float("-inf")).softmax(dim=-1)  # SYNCSPY-CLEAN: growth
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, n, D))
        return x + self.ff(self.ln2(x))


class MLMModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = torch.nn.Embedding(VOCAB, D)
        torch.nn.init.normal_(self.tok.weight, std=0.02)
        self.pos = torch.nn.Parameter(0.02 * torch.randn(SEQ, D))
        self.blocks = torch.nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = torch.nn.LayerNorm(D)
        self.transform = torch.nn.Sequential(torch.nn.Linear(D, D), torch.nn.GELU(),
                                             torch.nn.LayerNorm(D))
        self.bias = torch.nn.Parameter(torch.zeros(VOCAB))

    def forward(self, inp, tokens, sel):
        pad = tokens.eq(PAD)
        x = self.tok(inp) + self.pos
        for blk in self.blocks:
            x = blk(x, pad)
        hidden = self.ln_f(x)
        h = hidden[sel]  # SYNCSPY-PROBLEM: boolean mask: nonzero reads the count, waits for encoder
        y = tokens[sel]  # SYNCSPY-PROBLEM: boolean mask again: a second blocking count read
        logits = self.transform(h) @ self.tok.weight.t() + self.bias  # SYNCSPY-CLEAN: growth
        return F.cross_entropy(logits, y), logits, y


def main():
    if not torch.cuda.is_available():
        print("t140_mlm_pretrain_masked_hidden_bool_index: no CUDA device, result=SKIP")
        return 1
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    n_train = EPOCHS * STEPS_PER_EPOCH * BATCH
    corpus = make_corpus(n_train + VAL_BATCH, torch.Generator().manual_seed(140))
    train = corpus[:n_train].pin_memory()  # SYNCSPY-CLEAN: setup, pinned once
    gen = torch.Generator(device=dev).manual_seed(140)
    val_tokens = corpus[n_train:].to(dev)  # SYNCSPY-CLEAN: setup upload, once
    val_inp, val_sel = mask_tokens(val_tokens, gen)  # SYNCSPY-CLEAN: setup, fixed masks
    model = MLMModel().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    losses, val_acc = [], []

    for epoch in range(EPOCHS):
        model.train()
        for step in range(STEPS_PER_EPOCH):
            s = (epoch * STEPS_PER_EPOCH + step) * BATCH
            tokens = train[s:s + BATCH].to(dev, non_blocking=True)  # SYNCSPY-CLEAN: pinned, async
            inp, sel = mask_tokens(tokens, gen)
            loss, _, _ = model(inp, tokens, sel)  # SYNCSPY-CLEAN: allocator growth, first steps
            opt.zero_grad(set_to_none=True)
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()  # SYNCSPY-CLEAN: AdamW state allocated on the first step
            losses.append(loss.detach())
        model.eval()
        with torch.no_grad():
            _, logits, y = model(val_inp, val_tokens, val_sel)  # SYNCSPY-CLEAN: once per epoch
        val_acc.append(logits.argmax(-1).eq(y).float().mean().item())  # SYNCSPY-CLEAN: per epoch

    hist = torch.stack(losses).cpu()  # SYNCSPY-CLEAN: final read
    first, last = hist[:5].mean().item(), hist[-5:].mean().item()
    ok = (math.isfinite(first) and math.isfinite(last) and last < first - 0.5
          and hist.numel() == EPOCHS * STEPS_PER_EPOCH and val_acc[-1] > 8.0 / VOCAB)
    print("t140_mlm_pretrain_masked_hidden_bool_index: epochs=%d steps=%d batch=%d seq=%d "
          "result=%s" % (EPOCHS, hist.numel(), BATCH, SEQ, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
