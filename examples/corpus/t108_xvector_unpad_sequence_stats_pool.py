#!/usr/bin/env python3
"""examples/corpus/t108_xvector_unpad_sequence_stats_pool.py: corpus workload (PyTorch).
Speaker-embedding training in the x-vector recipe: a time-delay network of dilated 1-D
convolutions (40 filterbank features in, 512 channels, 1,500 at the last frame layer) over
batches of 64 utterances of 120-300 frames, padded to 300, then statistics pooling (mean and
standard deviation of each utterance over its own frames), a 256-dimensional segment layer and a
softmax over 256 training speakers. The pooling helper recovers each utterance's valid frames
with `torch.nn.utils.rnn.unpad_sequence(h, lengths, batch_first=True)`, the lengths kept on the
GPU beside the features. unpad_sequence is a Python loop over the batch (torch/nn/utils/rnn.py):
`mask = idx < length` and `seq[mask]` for each utterance, a boolean-mask index whose output size
depends on the data, so each one is a `nonzero` that copies its count to the host and waits: 64
blocking reads per step, the first behind the whole frame-level forward pass (the GPU then idles
while the host queues the next utterance's mask), and the same again in the backward pass, where
`index`'s backward scatters with the saved masks (a consequence, on the backward line).
Masked sums over the padded tensor need no read (t116).
Planted: the `unpad_sequence(...)` line in XVector.stats_pool, every step.
Clean: setup (features and lengths generated on the GPU once), a device `randperm` per epoch,
allocator growth in the first steps, the accuracy counters read once per epoch outside the step
loop, the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.utils.rnn import unpad_sequence  # noqa: E402

EPOCHS, STEPS_PER_EPOCH, BATCH, UTTS, MINLEN, MAXLEN = 2, 25, 64, 3200, 120, 300
FEATS, CHANNELS, POOLED, EMBED, SPEAKERS = 40, 512, 1500, 256, 256


def tdnn(cin, cout, kernel, dilation):
    return torch.nn.Sequential(torch.nn.Conv1d(cin, cout, kernel, dilation=dilation, padding=dilation * (kernel - 1) // 2), torch.nn.ReLU(), torch.nn.BatchNorm1d(cout))


class XVector(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.frames = torch.nn.Sequential(tdnn(FEATS, CHANNELS, 5, 1), tdnn(CHANNELS, CHANNELS, 3, 2), tdnn(CHANNELS, CHANNELS, 3, 3), tdnn(CHANNELS, CHANNELS, 1, 1), tdnn(CHANNELS, POOLED, 1, 1))
        self.segment = torch.nn.Sequential(torch.nn.Linear(2 * POOLED, EMBED), torch.nn.ReLU(), torch.nn.BatchNorm1d(EMBED))
        self.classifier = torch.nn.Linear(EMBED, SPEAKERS)

    @staticmethod
    def stats_pool(h, lengths):
        """Mean and standard deviation of each utterance over its valid frames (h: batch x channels x frames)."""
        utts = unpad_sequence(h.transpose(1, 2), lengths, batch_first=True)  # SYNCSPY-PROBLEM: a boolean-mask index per utterance (nonzero, a blocking count read), 64 per step
        return torch.stack([torch.cat([u.mean(dim=0), u.std(dim=0)]) for u in utts])

    def forward(self, feats, lengths):
        h = self.frames(feats.transpose(1, 2))
        return self.classifier(self.segment(self.stats_pool(h, lengths)))


def make_corpus(dev, gen):
    """Each speaker has a mean spectrum; frames are that mean plus smoothed noise, zero past the utterance's end."""
    lengths = torch.randint(MINLEN, MAXLEN + 1, (UTTS,), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    speaker = torch.randint(0, SPEAKERS, (UTTS,), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    means = torch.randn(SPEAKERS, FEATS, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    noise = torch.randn(UTTS, MAXLEN + 4, FEATS, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    smooth = noise.unfold(1, 5, 1).mean(dim=-1)  # SYNCSPY-CLEAN: setup, a large temporary
    valid = torch.arange(MAXLEN, device=dev).unsqueeze(0) < lengths.unsqueeze(1)  # SYNCSPY-CLEAN: setup allocation
    feats = (means[speaker].unsqueeze(1) + 1.5 * smooth) * valid.unsqueeze(2)  # SYNCSPY-CLEAN: setup, the feature store
    return feats, lengths, speaker


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(108)
    feats_all, lengths_all, speaker_all = make_corpus(dev, gen)
    model = XVector().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-4)
    losses = torch.zeros(EPOCHS * STEPS_PER_EPOCH, device=dev)  # SYNCSPY-CLEAN: setup allocation
    correct = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
    epoch_acc = []

    model.train()
    for epoch in range(EPOCHS):
        order = torch.randperm(UTTS, device=dev, generator=gen)  # SYNCSPY-CLEAN: device permutation once per epoch
        correct.zero_()
        for i in range(STEPS_PER_EPOCH):
            step = epoch * STEPS_PER_EPOCH + i
            idx = order[i * BATCH:(i + 1) * BATCH]
            feats, lengths, spk = feats_all[idx], lengths_all[idx], speaker_all[idx]  # SYNCSPY-CLEAN: the batch gathered on the device (a large temporary, allocator growth in the first steps)
            logits = model(feats, lengths)  # SYNCSPY-CLEAN: allocator growth in the first steps
            loss = F.cross_entropy(logits, spk)
            opt.zero_grad(set_to_none=True)
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            opt.step()  # SYNCSPY-CLEAN: momentum buffers allocated on the first step
            losses[step] = loss.detach()  # SYNCSPY-CLEAN: the step's loss copied into the history on the device (asynchronous device-to-device copy)
            correct += logits.detach().argmax(dim=1).eq(spk).sum()
        epoch_acc.append(correct.item() / (STEPS_PER_EPOCH * BATCH))  # SYNCSPY-CLEAN: once per epoch, outside the step loop

    first, last = losses[:5].mean().item(), losses[-5:].mean().item()  # SYNCSPY-CLEAN: final read
    ok = math.isfinite(first) and math.isfinite(last) and last < first and all(0.0 <= a <= 1.0 for a in epoch_acc)
    print("t108_xvector_unpad_sequence_stats_pool: epochs=%d steps=%d batch=%d maxlen=%d speakers=%d result=%s" % (EPOCHS, EPOCHS * STEPS_PER_EPOCH, BATCH, MAXLEN, SPEAKERS, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
