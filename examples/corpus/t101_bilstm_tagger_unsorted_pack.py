#!/usr/bin/env python3
"""examples/corpus/t101_bilstm_tagger_unsorted_pack.py: corpus workload (PyTorch).
Part-of-speech tagging with a two-layer bidirectional LSTM (17 universal tags, a 20,000-word
vocabulary, sentences of 5-60 tokens). The padded token ids live on the GPU; the sentence
lengths come from the host-side tokenizer as a CPU tensor, which is what
`pack_padded_sequence` asks for (t42's GPU lengths are not the problem here). The batches are
in corpus order, so the model packs with `enforce_sorted=False`, and torch/nn/utils/rnn.py then
does two transfers per forward pass: `pack_padded_sequence` sorts the lengths on the CPU and
uploads the permutation with `sorted_indices.to(input.device)` (a blocking copy from pageable
memory, behind the previous step's update and this step's embedding lookup), and
`pad_packed_sequence` returns `lengths[unsorted_indices.cpu()]` (a blocking read of the inverse
permutation, behind the whole LSTM forward pass), although the caller discards those lengths.
Between the two reads the GPU idles while the host queues the LSTM, and after the second while it
queues the rest of the step. Batches ordered by length on the host and `enforce_sorted=True`
need neither transfer (t105).
Planted: the `pack_padded_sequence(...)` line and the `pad_packed_sequence(...)` line in
BiLSTMTagger.forward, every step.
Clean: setup (the corpus generated on the GPU from host lengths uploaded once, the model upload),
allocator growth in the first steps, the accuracy counters kept on the GPU, the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence  # noqa: E402

STEPS, BATCH, SENTS, MINLEN, MAXLEN = 50, 128, 6400, 5, 60
VOCAB, TAGS, EMB, HID, PAD = 20000, 17, 128, 256, 0


class BiLSTMTagger(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(VOCAB, EMB, padding_idx=PAD)
        self.lstm = torch.nn.LSTM(EMB, HID, num_layers=2, bidirectional=True, batch_first=True, dropout=0.2)
        self.drop = torch.nn.Dropout(0.3)
        self.proj = torch.nn.Linear(2 * HID, TAGS)

    def forward(self, ids, lengths):
        emb = self.drop(self.emb(ids))
        packed = pack_padded_sequence(emb, lengths, batch_first=True, enforce_sorted=False)  # SYNCSPY-PROBLEM: enforce_sorted=False: the sort permutation uploaded with .to(device) from pageable memory (blocking), every step
        out, _ = self.lstm(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=ids.shape[1])  # SYNCSPY-PROBLEM: lengths[unsorted_indices.cpu()]: a blocking read of the inverse permutation, every step
        return self.proj(self.drop(out))


def make_corpus(dev, gen):
    """Word ids log-uniform over the vocabulary; a word's tag is its lexical class, shifted after class-0 words."""
    lengths = torch.randint(MINLEN, MAXLEN + 1, (SENTS,), generator=torch.Generator().manual_seed(101))
    u = torch.rand(SENTS, MAXLEN, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    words = (torch.exp(u * math.log(VOCAB - 1)) - 1.0).long().clamp(0, VOCAB - 2) + 1
    lexical = torch.randint(0, TAGS, (VOCAB,), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    cls = lexical[words]
    prev = torch.cat([torch.full_like(cls[:, :1], 1), cls[:, :-1]], dim=1)
    tags = torch.where(prev == 0, (cls + 1) % TAGS, cls)
    valid = torch.arange(MAXLEN, device=dev).unsqueeze(0) < lengths.to(dev).unsqueeze(1)  # SYNCSPY-CLEAN: setup upload of the lengths, once
    ids = torch.where(valid, words, torch.full_like(words, PAD))
    tags = torch.where(valid, tags, torch.full_like(tags, -100))
    return ids, tags, lengths


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(101)
    ids, tags, lengths = make_corpus(dev, gen)
    model = BiLSTMTagger().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    losses = torch.zeros(STEPS, device=dev)  # SYNCSPY-CLEAN: setup allocation
    correct = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
    total = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation

    model.train()
    for step in range(STEPS):
        s = (step * BATCH) % SENTS
        y = tags[s:s + BATCH]
        logits = model(ids[s:s + BATCH], lengths[s:s + BATCH])  # SYNCSPY-CLEAN: allocator growth in the first steps
        loss = F.cross_entropy(logits.reshape(-1, TAGS), y.reshape(-1), ignore_index=-100)
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
        losses[step] = loss.detach()  # SYNCSPY-CLEAN: the step's loss copied into the loss history on the device (asynchronous device-to-device copy)
        hit = y.ne(-100)
        correct += (logits.detach().argmax(dim=-1).eq(y) & hit).sum()
        total += hit.sum()

    first, last, acc, n_tok = torch.stack([losses[:5].mean(), losses[-5:].mean(), correct / total, total]).tolist()  # SYNCSPY-CLEAN: final read
    expected = int(sum(int(lengths[(k * BATCH) % SENTS:(k * BATCH) % SENTS + BATCH].sum()) for k in range(STEPS)))
    ok = math.isfinite(first) and math.isfinite(last) and last < first and 0.0 <= acc <= 1.0 and int(n_tok) == expected
    print("t101_bilstm_tagger_unsorted_pack: steps=%d batch=%d sentences=%d maxlen=%d tags=%d result=%s" % (STEPS, BATCH, SENTS, MAXLEN, TAGS, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
