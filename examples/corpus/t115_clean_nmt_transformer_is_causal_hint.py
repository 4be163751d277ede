#!/usr/bin/env python3
"""examples/corpus/t115_clean_nmt_transformer_is_causal_hint.py: corpus workload (PyTorch),
CLEAN. The translation model of t107 (`nn.Transformer`, 3 encoder and 3 decoder layers, d_model
256, batch_first, a 6,000-word vocabulary, sentences of 24-63 tokens padded to 64, teacher
forcing) with the masks passed the way that fixes it: the encoder gets no source mask (the
tutorial's mask of zeros masks nothing, and with `mask=None` `_detect_is_causal_mask` returns
without comparing anything), and the decoder gets the causal target mask together with
`tgt_is_causal=True`, the hint torch/nn/modules/transformer.py documents ("If specified, applies
a causal mask as tgt mask"), so `_detect_is_causal_mask` returns the hint as is and no device
bool is read. Nothing in the step loop waits for the GPU.
Clean: all of it; the marked lines are setup (the corpus generated on the GPU, the causal mask
built once), the epoch order shuffled on the host and uploaded `non_blocking` from pinned memory
once per epoch, the pinned buffer reused only after an event wait on the previous epoch's upload,
allocator growth in the first steps, the accuracy counters read once per epoch outside the step
loop, the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

EPOCHS, STEPS_PER_EPOCH, BATCH, PAIRS, MINLEN, MAXLEN = 2, 20, 128, 5120, 24, 64
VOCAB, D_MODEL, HEADS, LAYERS, FF = 6000, 256, 8, 3, 1024
PAD, BOS, EOS, FIRST_WORD = 0, 1, 2, 3


def sinusoid(n, d):
    pos = torch.arange(n, dtype=torch.float32).unsqueeze(1)
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))
    table = torch.zeros(n, d)
    table[:, 0::2] = torch.sin(pos * div)
    table[:, 1::2] = torch.cos(pos * div)
    return table


class Seq2SeqTransformer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.src_emb = torch.nn.Embedding(VOCAB, D_MODEL, padding_idx=PAD)
        self.tgt_emb = torch.nn.Embedding(VOCAB, D_MODEL, padding_idx=PAD)
        self.register_buffer("pos", sinusoid(MAXLEN, D_MODEL), persistent=False)
        self.transformer = torch.nn.Transformer(D_MODEL, HEADS, LAYERS, LAYERS, FF, dropout=0.1, batch_first=True)
        self.generator = torch.nn.Linear(D_MODEL, VOCAB)

    def embed(self, table, ids):
        return table(ids) * math.sqrt(D_MODEL) + self.pos[: ids.shape[1]]

    def forward(self, src, tgt_in, tgt_mask, src_pad, tgt_pad):
        memory = self.transformer.encoder(self.embed(self.src_emb, src), src_key_padding_mask=src_pad)
        out = self.transformer.decoder(self.embed(self.tgt_emb, tgt_in), memory, tgt_mask=tgt_mask, tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=src_pad, tgt_is_causal=True)
        return self.generator(out)


def make_corpus(dev, gen):
    """Word ids log-uniform over the vocabulary; the target sentence is the source mapped word by word, then EOS."""
    lengths = torch.randint(MINLEN, MAXLEN, (PAIRS,), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    u = torch.rand(PAIRS, MAXLEN, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    words = (torch.exp(u * math.log(VOCAB - FIRST_WORD)) - 1.0).long().clamp(0, VOCAB - FIRST_WORD - 1) + FIRST_WORD  # SYNCSPY-CLEAN: setup allocation
    mapping = torch.randperm(VOCAB - FIRST_WORD, device=dev, generator=gen) + FIRST_WORD  # SYNCSPY-CLEAN: setup allocation
    pos = torch.arange(MAXLEN, device=dev).unsqueeze(0)  # SYNCSPY-CLEAN: setup allocation
    valid = pos < lengths.unsqueeze(1)  # SYNCSPY-CLEAN: setup allocation
    src = words.masked_fill(~valid, PAD)  # SYNCSPY-CLEAN: setup allocation
    tgt_out = mapping[words - FIRST_WORD].masked_fill(~valid, PAD).masked_fill(pos == lengths.unsqueeze(1), EOS)  # SYNCSPY-CLEAN: setup allocation
    tgt_in = torch.cat([torch.full_like(tgt_out[:, :1], BOS), tgt_out[:, :-1]], dim=1)  # SYNCSPY-CLEAN: setup allocation
    return src, tgt_in, tgt_out


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(115)
    src_all, tgt_in_all, tgt_out_all = make_corpus(dev, gen)
    tgt_mask = torch.triu(torch.ones((MAXLEN, MAXLEN), dtype=torch.bool, device=dev), diagonal=1)  # SYNCSPY-CLEAN: setup, the boolean causal mask (True above the diagonal), built once
    model = Seq2SeqTransformer().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(model.parameters(), lr=5e-4, betas=(0.9, 0.98), eps=1e-9)
    order_host = torch.empty(PAIRS, dtype=torch.long, pin_memory=True)  # SYNCSPY-CLEAN: setup, pinned buffer for the epoch order, allocated once
    order_uploaded = torch.cuda.Event()
    losses = torch.zeros(EPOCHS * STEPS_PER_EPOCH, device=dev)  # SYNCSPY-CLEAN: setup allocation
    correct = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
    total = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
    host_gen = torch.Generator().manual_seed(7)
    epoch_acc = []

    model.train()
    for epoch in range(EPOCHS):
        if epoch > 0:
            order_uploaded.synchronize()  # SYNCSPY-CLEAN: the previous epoch's upload finished long ago; waited on before the pinned buffer is rewritten
        order_host.copy_(torch.randperm(PAIRS, generator=host_gen))
        order = order_host.to(dev, non_blocking=True)  # SYNCSPY-CLEAN: asynchronous copy from pinned memory, once per epoch
        order_uploaded.record()
        for i in range(STEPS_PER_EPOCH):
            step = epoch * STEPS_PER_EPOCH + i
            idx = order[i * BATCH:(i + 1) * BATCH]
            src, tgt_in, tgt_out = src_all[idx], tgt_in_all[idx], tgt_out_all[idx]
            logits = model(src, tgt_in, tgt_mask, src == PAD, tgt_in == PAD)  # SYNCSPY-CLEAN: allocator growth in the first steps
            loss = F.cross_entropy(logits.reshape(-1, VOCAB), tgt_out.reshape(-1), ignore_index=PAD)  # SYNCSPY-CLEAN: large temporary (log-softmax over 8,192 x 6,000 logits), allocator growth in the first steps
            opt.zero_grad(set_to_none=True)
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
            losses[step] = loss.detach()  # SYNCSPY-CLEAN: the step's loss copied into the history on the device (asynchronous device-to-device copy)
            hit = tgt_out.ne(PAD)
            correct += (logits.detach().argmax(dim=-1).eq(tgt_out) & hit).sum()
            total += hit.sum()
        epoch_acc.append((correct / total).item())  # SYNCSPY-CLEAN: once per epoch, outside the step loop

    first, last, n_tok = torch.stack([losses[:5].mean(), losses[-5:].mean(), total]).tolist()  # SYNCSPY-CLEAN: final read
    ok = math.isfinite(first) and math.isfinite(last) and last < first and all(0.0 <= a <= 1.0 for a in epoch_acc) and n_tok > 0
    print("t115_clean_nmt_transformer_is_causal_hint: epochs=%d steps=%d batch=%d maxlen=%d vocab=%d layers=%d result=%s" % (EPOCHS, EPOCHS * STEPS_PER_EPOCH, BATCH, MAXLEN, VOCAB, LAYERS, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
