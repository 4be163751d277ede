#!/usr/bin/env python3
"""examples/corpus/t119_lm_pretrain_adafactor_step.py: corpus workload (PyTorch).
Pretraining of a small GPT-style language model (8,192-token vocabulary, six pre-norm blocks of
width 384, tied embeddings, causal `scaled_dot_product_attention`) on sequences of 256 tokens drawn
from a Zipf-weighted random Markov chain generated on the GPU, with the optimizer of the T5 and PaLM
recipes, `torch.optim.Adafactor` (factored second moments, relative step size, update clipping). In
torch/optim/_adafactor.py both implementations compute, for every parameter, the relative step size
`alpha = max(eps2, param.norm(2).item() / sqrt(numel)) * rho_t` and the clipping denominator
`max(1.0, update.norm(2).item() / (sqrt(numel) * d))` on the host (`_single_tensor_adafactor`; the
foreach path does the same in list comprehensions). The model has 76 parameter tensors: 152 blocking
reads per step, the first behind the whole backward pass, each of the others behind the few small
kernels of one parameter's update, so the optimizer runs in lockstep with the host while the GPU
idles between parameters. (The step counter `step_t.item()` is a CPU tensor: no device read.)
Planted: the `opt.step()` line in train_step, every step.
Clean: setup (the corpus generated on the GPU), a device `randperm` per epoch and the batch gathered
on the device, allocator growth in the first steps, the validation loss read once per epoch outside
the step loop, the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

EPOCHS, STEPS_PER_EPOCH, BATCH, SEQS, VAL_SEQS, SEQ = 2, 20, 16, 1024, 64, 256
VOCAB, D_MODEL, HEADS, LAYERS, FF, BRANCH = 8192, 384, 6, 6, 1536, 4


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(D_MODEL)
        self.qkv = torch.nn.Linear(D_MODEL, 3 * D_MODEL)
        self.proj = torch.nn.Linear(D_MODEL, D_MODEL)
        self.ln2 = torch.nn.LayerNorm(D_MODEL)
        self.fc1 = torch.nn.Linear(D_MODEL, FF)
        self.fc2 = torch.nn.Linear(FF, D_MODEL)

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, HEADS, D_MODEL // HEADS).permute(2, 0, 3, 1, 4)
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(att.transpose(1, 2).reshape(b, t, D_MODEL))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class TinyLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = torch.nn.Embedding(VOCAB, D_MODEL)
        self.pos = torch.nn.Parameter(torch.zeros(SEQ, D_MODEL))
        self.blocks = torch.nn.ModuleList([Block() for _ in range(LAYERS)])
        self.ln_f = torch.nn.LayerNorm(D_MODEL)
        torch.nn.init.normal_(self.tok.weight, std=0.02)
        torch.nn.init.normal_(self.pos, std=0.01)

    def forward(self, ids):
        x = self.tok(ids) + self.pos[: ids.shape[1]]
        for blk in self.blocks:
            x = blk(x)
        return self.ln_f(x) @ self.tok.weight.t()


def make_corpus(n, dev, gen):
    """A Markov chain over the vocabulary: each token has BRANCH possible successors, drawn from a
    Zipf law (inverse CDF with searchsorted, on the device) and chosen uniformly at each position."""
    zipf = torch.arange(1, VOCAB + 1, device=dev, dtype=torch.float64).pow(-1.1)  # SYNCSPY-CLEAN: setup allocation
    cdf = (zipf.cumsum(0) / zipf.sum()).float()  # SYNCSPY-CLEAN: setup allocation
    u = torch.rand(VOCAB * BRANCH + n, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    draws = torch.searchsorted(cdf, u).clamp_(max=VOCAB - 1)  # SYNCSPY-CLEAN: setup allocation
    succ = draws[: VOCAB * BRANCH].view(VOCAB, BRANCH)
    toks = torch.empty(n, SEQ + 1, dtype=torch.long, device=dev)  # SYNCSPY-CLEAN: setup allocation
    toks[:, 0] = draws[VOCAB * BRANCH:]  # SYNCSPY-CLEAN: setup, a device-to-device copy
    for t in range(SEQ):
        pick = torch.randint(0, BRANCH, (n,), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
        toks[:, t + 1] = succ[toks[:, t], pick]  # SYNCSPY-CLEAN: setup, the corpus written on the device
    return toks


def train_step(model, opt, batch):
    logits = model(batch[:, :-1])  # SYNCSPY-CLEAN: allocator growth in the first steps
    loss = F.cross_entropy(logits.reshape(-1, VOCAB), batch[:, 1:].reshape(-1))  # SYNCSPY-CLEAN: large temporary (log-softmax over 4,096 x 8,192 logits), allocator growth in the first steps
    opt.zero_grad(set_to_none=True)
    loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
    opt.step()  # SYNCSPY-PROBLEM: Adafactor reads param.norm(2).item() and update.norm(2).item() on the host for each of the 76 parameters, every step
    return loss.detach()


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(119)
    corpus = make_corpus(SEQS + VAL_SEQS, dev, gen)
    train, val = corpus[:SEQS], corpus[SEQS:]
    model = TinyLM().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adafactor(model.parameters(), lr=5e-2)
    losses = torch.zeros(EPOCHS * STEPS_PER_EPOCH, device=dev)  # SYNCSPY-CLEAN: setup allocation
    val_loss = []

    for epoch in range(EPOCHS):
        model.train()
        order = torch.randperm(SEQS, device=dev, generator=gen)  # SYNCSPY-CLEAN: device permutation once per epoch
        for i in range(STEPS_PER_EPOCH):
            step = epoch * STEPS_PER_EPOCH + i
            batch = train[order[i * BATCH:(i + 1) * BATCH]]  # SYNCSPY-CLEAN: the batch gathered on the device (a device index, no host read)
            loss = train_step(model, opt, batch)
            losses[step] = loss  # SYNCSPY-CLEAN: the step's loss copied into the history on the device (asynchronous device-to-device copy)
        model.eval()
        with torch.no_grad():
            vl = F.cross_entropy(model(val[:, :-1]).reshape(-1, VOCAB), val[:, 1:].reshape(-1))  # SYNCSPY-CLEAN: validation once per epoch, outside the step loop
        val_loss.append(vl.item())  # SYNCSPY-CLEAN: once per epoch, outside the step loop

    first, last = losses[:5].mean().item(), losses[-5:].mean().item()  # SYNCSPY-CLEAN: final read
    ok = all(math.isfinite(v) for v in [first, last] + val_loss) and last < first - 0.2 and val_loss[-1] < math.log(VOCAB)
    print("t119_lm_pretrain_adafactor_step: epochs=%d steps=%d batch=%d seq=%d layers=%d vocab=%d result=%s" % (EPOCHS, EPOCHS * STEPS_PER_EPOCH, BATCH, SEQ, LAYERS, VOCAB, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
