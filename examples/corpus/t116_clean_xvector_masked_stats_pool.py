#!/usr/bin/env python3
"""examples/corpus/t116_clean_xvector_masked_stats_pool.py: corpus workload (PyTorch), CLEAN.
The x-vector speaker-embedding training of t108 (a dilated 1-D convolution network, 64
utterances of 120-300 frames padded to 300, statistics pooling, a 256-dimensional segment layer,
256 training speakers) with the pooling written the way that fixes it: a frame mask built on the
device from the lengths (`arange(T) < lengths[:, None]`), masked sums for the mean and the
unbiased variance divided by the per-utterance counts, all of fixed shape, so no step reads
anything back (t108's `unpad_sequence` indexes each utterance with a boolean mask, a blocking
count read per utterance). After the loop the pooled statistics of one batch are checked against
`unpad_sequence` and per-utterance `mean`/`std` computed on the CPU from the downloaded frames.
Clean: all of it; the marked lines are setup (features and lengths generated on the GPU once), a
device `randperm` per epoch, allocator growth in the first steps, the accuracy counters read once
per epoch outside the step loop, the final reads for the loss check and the CPU reference.
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
        mask = (torch.arange(h.shape[2], device=h.device).unsqueeze(0) < lengths.unsqueeze(1)).unsqueeze(1).to(h.dtype)
        n = lengths.to(h.dtype).unsqueeze(1)
        mean = (h * mask).sum(dim=2) / n
        var = ((h - mean.unsqueeze(2)).square() * mask).sum(dim=2) / (n - 1.0)
        return torch.cat([mean, var.clamp_min(1e-10).sqrt()], dim=1)

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
    gen = torch.Generator(device=dev).manual_seed(116)
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
    model.eval()
    with torch.no_grad():
        idx = order[:BATCH]
        h = model.frames(feats_all[idx].transpose(1, 2))  # SYNCSPY-CLEAN: one evaluation batch after the loop, for the CPU reference
        pooled = XVector.stats_pool(h, lengths_all[idx])
    h_cpu, lengths_cpu, pooled_cpu = h.cpu(), lengths_all[idx].cpu(), pooled.cpu()  # SYNCSPY-CLEAN: final read for the CPU reference
    ref = torch.stack([torch.cat([u.mean(dim=0), u.std(dim=0)]) for u in unpad_sequence(h_cpu.transpose(1, 2), lengths_cpu, batch_first=True)])
    err = float((ref - pooled_cpu).abs().max() / ref.abs().max())
    ok = math.isfinite(first) and math.isfinite(last) and last < first and all(0.0 <= a <= 1.0 for a in epoch_acc) and err < 1e-3
    print("t116_clean_xvector_masked_stats_pool: epochs=%d steps=%d batch=%d maxlen=%d speakers=%d result=%s" % (EPOCHS, EPOCHS * STEPS_PER_EPOCH, BATCH, MAXLEN, SPEAKERS, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
