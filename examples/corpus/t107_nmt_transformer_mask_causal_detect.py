#!/usr/bin/env python3
"""examples/corpus/t107_nmt_transformer_mask_causal_detect.py: corpus workload (PyTorch).
A sequence-to-sequence translation model written after the PyTorch "Language Translation with
nn.Transformer" tutorial: `nn.Transformer` (3 encoder and 3 decoder layers, d_model 256,
batch_first), source and target embeddings, a generator layer over a 6,000-word vocabulary,
sentences of 24-63 tokens padded to 64, teacher forcing. As in the tutorial, the model is given a
source mask of zeros (`torch.zeros((S, S)).type(torch.bool)`, "no mask") and a square causal
mask for the target (boolean, True above the diagonal, like the padding masks), and calls the
encoder and the decoder with those masks but without the `is_causal` hints. Since torch 2.1 `TransformerEncoder.forward`
and `TransformerDecoder.forward` then run `_detect_is_causal_mask(mask, None, seq_len)`
(torch/nn/modules/transformer.py: "Default: None; try to detect a causal mask"), which builds a
causal mask on the device and returns `bool((mask == causal_comparison).all())`: a blocking read
of a device bool on every call. The encoder's read waits for the previous step's backward pass
and Adam update, the decoder's for the encoder's forward pass; each time the GPU then idles while
the host queues the next layers.
Planted: the `self.transformer.encoder(...)` line (the zero source mask is compared with a causal
mask) and the `self.transformer.decoder(...)` line (the target mask is detected as causal) in
Seq2SeqTransformer.forward, every step.
Clean: setup (the corpus generated on the GPU, the masks built once), the epoch order shuffled on
the host and uploaded `non_blocking` from pinned memory once per epoch, the pinned buffer reused
only after an event wait on the previous epoch's upload, allocator growth in the first steps, the
accuracy counters read once per epoch outside the step loop, the final read.
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

    def forward(self, src, tgt_in, src_mask, tgt_mask, src_pad, tgt_pad):
        memory = self.transformer.encoder(self.embed(self.src_emb, src), mask=src_mask, src_key_padding_mask=src_pad)  # SYNCSPY-PROBLEM: is_causal left None: _detect_is_causal_mask compares the zero source mask with a causal mask, bool() of a device tensor, every step
        out = self.transformer.decoder(self.embed(self.tgt_emb, tgt_in), memory, tgt_mask=tgt_mask, tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=src_pad)  # SYNCSPY-PROBLEM: tgt_is_causal left None: the causal target mask is detected with bool((mask == causal).all()), every step
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
    gen = torch.Generator(device=dev).manual_seed(107)
    src_all, tgt_in_all, tgt_out_all = make_corpus(dev, gen)
    src_mask = torch.zeros((MAXLEN, MAXLEN), device=dev).type(torch.bool)  # SYNCSPY-CLEAN: setup, the tutorial's "no mask" for the source, built once
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
            logits = model(src, tgt_in, src_mask, tgt_mask, src == PAD, tgt_in == PAD)  # SYNCSPY-CLEAN: allocator growth in the first steps
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
    print("t107_nmt_transformer_mask_causal_detect: epochs=%d steps=%d batch=%d maxlen=%d vocab=%d layers=%d result=%s" % (EPOCHS, EPOCHS * STEPS_PER_EPOCH, BATCH, MAXLEN, VOCAB, LAYERS, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
