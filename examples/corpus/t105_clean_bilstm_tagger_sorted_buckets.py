#!/usr/bin/env python3
"""examples/corpus/t105_clean_bilstm_tagger_sorted_buckets.py: corpus workload (PyTorch),
CLEAN. The part-of-speech tagger of t101 (two-layer bidirectional LSTM, 17 tags, sentences of
5-60 tokens, lengths on the host) with the fix of its packing: a bucketing sampler on the host
orders each epoch's sentences into batches sorted by decreasing length, the epoch's order is
applied to the GPU corpus once with `index_select` (the permutation uploaded from pinned memory,
once per epoch, outside the step loop; the pinned buffer is rewritten only after the previous
epoch's validation read has waited for the stream), and the model packs with `enforce_sorted=True`, so
`pack_padded_sequence` uploads no permutation and `pad_packed_sequence` reads none back (its
lengths come from the CPU `batch_sizes`). Two epochs of 25 steps; the tagging accuracy on a
validation set sorted once in setup is computed on the GPU and read once per epoch, outside the
step loop.
Clean: all of it; the marked lines are setup, the per-epoch permutation upload and validation
read, allocator growth in the first steps and the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence  # noqa: E402

EPOCHS, STEPS_PER_EPOCH, BATCH, TRAIN, VALID, MINLEN, MAXLEN = 2, 25, 128, 3200, 512, 5, 60
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
        packed = pack_padded_sequence(emb, lengths, batch_first=True, enforce_sorted=True)
        out, _ = self.lstm(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=ids.shape[1])
        return self.proj(self.drop(out))


def make_corpus(n, dev, gen, seed):
    """Word ids log-uniform over the vocabulary; a word's tag is its lexical class, shifted after class-0 words."""
    lengths = torch.randint(MINLEN, MAXLEN + 1, (n,), generator=torch.Generator().manual_seed(seed))
    u = torch.rand(n, MAXLEN, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    words = (torch.exp(u * math.log(VOCAB - 1)) - 1.0).long().clamp(0, VOCAB - 2) + 1
    g = torch.Generator(device=dev).manual_seed(105)
    lexical = torch.randint(0, TAGS, (VOCAB,), device=dev, generator=g)  # SYNCSPY-CLEAN: setup allocation
    cls = lexical[words]
    prev = torch.cat([torch.full_like(cls[:, :1], 1), cls[:, :-1]], dim=1)
    tags = torch.where(prev == 0, (cls + 1) % TAGS, cls)
    valid = torch.arange(MAXLEN, device=dev).unsqueeze(0) < lengths.to(dev).unsqueeze(1)  # SYNCSPY-CLEAN: setup upload of the lengths, once
    ids = torch.where(valid, words, torch.full_like(words, PAD))
    tags = torch.where(valid, tags, torch.full_like(tags, -100))
    return ids, tags, lengths


def bucketed_order(lengths, batch, g):
    """Host sampler: shuffle, cut into batches, sort each batch by decreasing length."""
    perm = torch.randperm(lengths.numel(), generator=g)
    chunks = []
    for k in range(0, perm.numel(), batch):
        idx = perm[k:k + batch]
        chunks.append(idx[torch.argsort(lengths[idx], descending=True)])
    return torch.cat(chunks)


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(105)
    ids, tags, lengths = make_corpus(TRAIN, dev, gen, 1051)
    vids, vtags, vlengths = make_corpus(VALID, dev, gen, 1052)
    vorder = torch.argsort(vlengths, descending=True)
    vids, vtags, vlengths = vids[vorder.to(dev)], vtags[vorder.to(dev)], vlengths[vorder]  # SYNCSPY-CLEAN: setup, the validation order uploaded once
    model = BiLSTMTagger().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    perm_pinned = torch.empty(TRAIN, dtype=torch.long, pin_memory=True)  # SYNCSPY-CLEAN: setup, pinned buffer for the epoch's order
    losses = torch.zeros(EPOCHS * STEPS_PER_EPOCH, device=dev)  # SYNCSPY-CLEAN: setup allocation
    sampler_gen = torch.Generator().manual_seed(1053)
    val_accs = []

    for epoch in range(EPOCHS):
        order = bucketed_order(lengths, BATCH, sampler_gen)
        perm_pinned.copy_(order)
        perm = perm_pinned.to(dev, non_blocking=True)  # SYNCSPY-CLEAN: once per epoch, asynchronous upload of the epoch's order from pinned memory
        ep_ids, ep_tags, ep_lengths = ids.index_select(0, perm), tags.index_select(0, perm), lengths[order]  # SYNCSPY-CLEAN: once per epoch, the corpus reordered on the device
        model.train()
        for i in range(STEPS_PER_EPOCH):
            step = epoch * STEPS_PER_EPOCH + i
            s = i * BATCH
            y = ep_tags[s:s + BATCH]
            logits = model(ep_ids[s:s + BATCH], ep_lengths[s:s + BATCH])  # SYNCSPY-CLEAN: allocator growth in the first steps
            loss = F.cross_entropy(logits.reshape(-1, TAGS), y.reshape(-1), ignore_index=-100)
            opt.zero_grad(set_to_none=True)
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
            losses[step] = loss.detach()  # SYNCSPY-CLEAN: the step's loss copied into the loss history on the device (asynchronous device-to-device copy)
        model.eval()
        with torch.no_grad():
            pred = model(vids, vlengths).argmax(dim=-1)  # SYNCSPY-CLEAN: validation once per epoch, outside the step loop
            hit = vtags.ne(-100)
            val_accs.append(((pred == vtags) & hit).sum().item() / int(vlengths.sum()))  # SYNCSPY-CLEAN: validation read once per epoch, outside the step loop

    first, last = torch.stack([losses[:5].mean(), losses[-5:].mean()]).tolist()  # SYNCSPY-CLEAN: final read
    ok = math.isfinite(first) and math.isfinite(last) and last < first and len(val_accs) == EPOCHS and all(0.0 <= a <= 1.0 for a in val_accs)
    print("t105_clean_bilstm_tagger_sorted_buckets: epochs=%d steps=%d batch=%d sentences=%d maxlen=%d tags=%d result=%s" % (EPOCHS, EPOCHS * STEPS_PER_EPOCH, BATCH, TRAIN, MAXLEN, TAGS, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
