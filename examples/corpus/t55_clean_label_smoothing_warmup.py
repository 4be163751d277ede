#!/usr/bin/env python3
"""examples/corpus/t55_clean_label_smoothing_warmup.py: corpus workload (PyTorch), CLEAN. A
small transformer text classifier trained on padded batches, with the usual training-recipe
features, none of which waits for the GPU: `F.cross_entropy(..., label_smoothing=0.1,
ignore_index=-100)` without class weights (the smoothed mean divides by the count of
non-ignored targets on the device), a key-padding mask applied with `masked_fill`, gradient
accumulation over two micro-batches, `clip_grad_norm_` whose returned norm is summed on the
GPU rather than compared in Python, AdamW with `foreach=True`, and a linear warm-up then
cosine decay through LambdaLR fed Python floats. The summed loss and gradient norm are read
once per epoch, after a validation pass that keeps its counts on the GPU.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

EPOCHS, STEPS_PER_EPOCH, ACCUM, MICRO_BATCH, SEQ, VOCAB, D_MODEL, HEADS, LAYERS, CLASSES = 3, 20, 2, 64, 40, 64, 128, 4, 2, 4
WARMUP, N_VAL, PAD, IGNORE = 10, 512, 0, -100


class EncoderLayer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(D_MODEL, 3 * D_MODEL)
        self.proj = torch.nn.Linear(D_MODEL, D_MODEL)
        self.ln1 = torch.nn.LayerNorm(D_MODEL)
        self.ln2 = torch.nn.LayerNorm(D_MODEL)
        self.ffn = torch.nn.Sequential(torch.nn.Linear(D_MODEL, 4 * D_MODEL), torch.nn.GELU(), torch.nn.Linear(4 * D_MODEL, D_MODEL))

    def forward(self, x, pad_mask):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, HEADS, C // HEADS).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(C // HEADS)
        scores = scores.masked_fill(pad_mask[:, None, None, :], float("-inf"))
        y = (scores.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, T, C)
        x = x + self.proj(y)
        return x + self.ffn(self.ln2(x))


class TextClassifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = torch.nn.Embedding(VOCAB, D_MODEL, padding_idx=PAD)
        self.pos = torch.nn.Parameter(torch.randn(SEQ, D_MODEL) * 0.02)
        self.layers = torch.nn.ModuleList([EncoderLayer() for _ in range(LAYERS)])
        self.norm = torch.nn.LayerNorm(D_MODEL)
        self.head = torch.nn.Linear(D_MODEL, CLASSES)

    def forward(self, tokens):
        pad_mask = tokens == PAD
        x = self.tok(tokens) + self.pos
        for layer in self.layers:
            x = layer(x, pad_mask)
        return self.head(self.norm(x[:, 0]))


def make_split(n, gen, dev):
    lengths = torch.randint(SEQ // 2, SEQ + 1, (n, 1), device=dev, generator=gen)
    tokens = torch.randint(1, VOCAB, (n, SEQ), device=dev, generator=gen)
    tokens = tokens.masked_fill(torch.arange(SEQ, device=dev) >= lengths, PAD)
    labels = (tokens[:, 0] * CLASSES) // VOCAB
    return tokens, labels


def lr_lambda(step):
    total = EPOCHS * STEPS_PER_EPOCH
    if step < WARMUP:
        return (step + 1) / WARMUP
    return 0.5 * (1.0 + math.cos(math.pi * (step - WARMUP) / (total - WARMUP)))


class Trainer:
    def __init__(self, model, dev):
        self.model, self.dev = model, dev
        self.opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05, foreach=True)
        self.sched = torch.optim.lr_scheduler.LambdaLR(self.opt, lr_lambda)

    def train_one_epoch(self, tokens, labels, epoch):
        self.model.train()
        loss_sum = torch.zeros((), device=self.dev)  # SYNCSPY-CLEAN: once per epoch
        norm_sum = torch.zeros((), device=self.dev)  # SYNCSPY-CLEAN: once per epoch
        for step in range(STEPS_PER_EPOCH):
            self.opt.zero_grad(set_to_none=True)
            for micro in range(ACCUM):
                start = ((step * ACCUM + micro) * MICRO_BATCH) % tokens.shape[0]
                logits = self.model(tokens[start:start + MICRO_BATCH])  # SYNCSPY-CLEAN: allocator growth in the first steps
                loss = F.cross_entropy(logits, labels[start:start + MICRO_BATCH], label_smoothing=0.1, ignore_index=IGNORE) / ACCUM
                loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
                loss_sum += loss.detach()
            norm_sum += torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0, foreach=True)
            self.opt.step()  # SYNCSPY-CLEAN: AdamW state allocated on the first step
            self.sched.step()
        return torch.stack([loss_sum, norm_sum]) / STEPS_PER_EPOCH

    @torch.no_grad()
    def evaluate(self, tokens, labels):
        self.model.eval()
        correct = torch.zeros((), dtype=torch.long, device=self.dev)  # SYNCSPY-CLEAN: once per epoch
        for start in range(0, tokens.shape[0], 128):
            pred = self.model(tokens[start:start + 128]).argmax(dim=-1)  # SYNCSPY-CLEAN: allocator growth in the first batches
            correct += (pred == labels[start:start + 128]).sum()
        return correct


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(9)
    train_tokens, train_labels = make_split(STEPS_PER_EPOCH * ACCUM * MICRO_BATCH, gen, dev)  # SYNCSPY-CLEAN: setup allocation
    unlabeled = torch.rand(train_labels.shape, device=dev, generator=gen) < 0.125  # SYNCSPY-CLEAN: setup allocation
    train_labels = train_labels.masked_fill(unlabeled, IGNORE)  # SYNCSPY-CLEAN: setup allocation
    val_tokens, val_labels = make_split(N_VAL, gen, dev)  # SYNCSPY-CLEAN: setup allocation
    model = TextClassifier().to(dev)  # SYNCSPY-CLEAN: setup upload
    trainer = Trainer(model, dev)

    epoch_losses, accuracy = [], 0.0
    for epoch in range(EPOCHS):
        stats = trainer.train_one_epoch(train_tokens, train_labels, epoch)
        correct = trainer.evaluate(val_tokens, val_labels)
        loss, grad_norm, n_correct = torch.cat([stats, correct.float().view(1)]).tolist()  # SYNCSPY-CLEAN: once per epoch, outside the step loop
        epoch_losses.append(loss)
        accuracy = n_correct / N_VAL
        if not math.isfinite(grad_norm):
            return 1

    ok = epoch_losses[-1] < epoch_losses[0] and accuracy > 1.0 / CLASSES
    print("t55_clean_label_smoothing_warmup: epochs=%d steps=%d learned=%d result=OK" % (EPOCHS, EPOCHS * STEPS_PER_EPOCH, int(ok)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
