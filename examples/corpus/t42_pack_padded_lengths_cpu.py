#!/usr/bin/env python3
"""examples/corpus/t42_pack_padded_lengths_cpu.py: corpus workload (PyTorch). A bidirectional
LSTM sentiment classifier trained on padded batches of variable-length reviews that already
live on the GPU. Each step the script computes the lengths on the device,
`lengths = (tokens != PAD).sum(dim=1)`, and packs the embedded batch with
`pack_padded_sequence(emb, lengths.cpu(), batch_first=True, enforce_sorted=False)`: the
lengths must be a CPU int64 tensor (torch docs for pack_padded_sequence: "must be on the CPU
if provided as a tensor"; the C++ op rejects a CUDA tensor), so the `.cpu()` copies them back
and waits for the GPU, every step. The lengths are known on the host when the batch is made
(the collate function pads them): keeping that CPU tensor and passing it removes the sync.
(The same line also uploads the sort permutation: with `enforce_sorted=False`,
pack_padded_sequence sorts the CPU lengths and moves `sorted_indices` to the input's device,
a small blocking copy from pageable memory; batches sorted by length on the host and
`enforce_sorted=True` avoid that one too.)
Planted: `lengths.cpu()` in the pack_padded_sequence call, every step.
Clean: setup (the corpus built once, its CPU length table included), allocator growth in the
first steps, the final read.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
from torch.nn.utils.rnn import pack_padded_sequence  # noqa: E402

STEPS, BATCH, MAX_LEN, VOCAB, EMBED, HIDDEN, CHUNKS, PAD = 50, 64, 96, 5000, 128, 128, 5, 0


class Classifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, EMBED, padding_idx=PAD)
        self.lstm = torch.nn.LSTM(EMBED, HIDDEN, batch_first=True, bidirectional=True)
        self.head = torch.nn.Linear(2 * HIDDEN, 2)


def make_corpus(dev):
    gen = torch.Generator().manual_seed(3)
    lens = torch.randint(8, MAX_LEN + 1, (CHUNKS, BATCH), generator=gen)
    toks = torch.randint(1, VOCAB, (CHUNKS, BATCH, MAX_LEN), generator=gen)
    pos = torch.arange(MAX_LEN).view(1, 1, MAX_LEN)
    toks = torch.where(pos < lens.unsqueeze(-1), toks, torch.full_like(toks, PAD))
    labels = (toks[:, :, 0] % 2).long()
    return toks.to(dev), labels.to(dev)  # SYNCSPY-CLEAN: setup upload (once)


def main():
    torch.manual_seed(0)
    dev = torch.device("cuda")
    tokens, labels = make_corpus(dev)
    model = Classifier().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation

    for step in range(STEPS):
        tb, yb = tokens[step % CHUNKS], labels[step % CHUNKS]
        lengths = (tb != PAD).sum(dim=1)
        emb = model.embed(tb)  # SYNCSPY-CLEAN: allocator growth in the first steps
        packed = pack_padded_sequence(emb, lengths.cpu(), batch_first=True, enforce_sorted=False)  # SYNCSPY-PROBLEM: the GPU lengths copied to the host every step
        _, (h, _) = model.lstm(packed)  # SYNCSPY-CLEAN: allocator growth in the first steps (cuDNN workspace)
        logits = model.head(torch.cat([h[0], h[1]], dim=1))
        loss = torch.nn.functional.cross_entropy(logits, yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
        loss_sum += loss.detach()

    mean = loss_sum.item() / STEPS  # SYNCSPY-CLEAN: final read
    ok = 0.0 < mean < 5.0
    print("t42_pack_padded_lengths_cpu: steps=%d finite=%d result=OK" % (STEPS, int(ok)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
