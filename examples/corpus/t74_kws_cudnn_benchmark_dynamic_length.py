#!/usr/bin/env python3
"""examples/corpus/t74_kws_cudnn_benchmark_dynamic_length.py: corpus workload (PyTorch). Training
a keyword-spotting model (a TC-ResNet-style stack of 1-D convolutions over log-mel frames with
masked mean pooling) on utterances of different durations. The collate step pads each batch to
its own longest utterance, so almost every batch has a new time length, and the script sets
`torch.backends.cudnn.benchmark = True` "for speed". With benchmark mode cuDNN times every
candidate algorithm the first time it sees a convolution configuration (the PyTorch
reproducibility notes: "cuDNN will benchmark multiple convolution algorithms and select the
fastest"; the performance tuning guide warns that with input sizes that change the autotuner
runs again for each new size). The search (cudnnFind / the v8 frontend's timed plans) runs
and times the candidates on the GPU and blocks the host, with workspace taken from the caching
allocator for each candidate, for the forward convolutions in the forward call and for the
data and weight gradients in `backward()`, every step. Bucketing the lengths to a few sizes,
padding to a fixed length, or leaving benchmark off keeps the loop asynchronous.
Planted: the model forward line and the `loss.backward()` line of the step loop (cuDNN
benchmarking of a new shape), every step.
Clean: setup (the utterance bank on the GPU, the lengths kept as Python ints), the optimizer
step, the final read.
"""
import math
import os
import random
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

STEPS, BATCH, MELS, KEYWORDS, MAX_FRAMES = 40, 32, 40, 12, 240


class ResBlock1d(torch.nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = torch.nn.Conv1d(cin, cout, 9, stride=stride, padding=4, bias=False)
        self.bn1 = torch.nn.BatchNorm1d(cout)
        self.conv2 = torch.nn.Conv1d(cout, cout, 9, padding=4, bias=False)
        self.bn2 = torch.nn.BatchNorm1d(cout)
        self.skip = torch.nn.Conv1d(cin, cout, 1, stride=stride, bias=False) if (cin != cout or stride != 1) else torch.nn.Identity()

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + self.skip(x))


class TCResNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv1d(MELS, 64, 3, padding=1, bias=False)
        self.blocks = torch.nn.Sequential(ResBlock1d(64, 96, 2), ResBlock1d(96, 96, 1), ResBlock1d(96, 128, 2), ResBlock1d(128, 128, 1))
        self.head = torch.nn.Linear(128, KEYWORDS)

    def forward(self, feats, frame_mask):
        h = self.blocks(self.stem(feats.transpose(1, 2)))
        mask = F.max_pool1d(frame_mask.unsqueeze(1), kernel_size=4, stride=4, ceil_mode=True)[..., :h.shape[-1]]
        pooled = (h * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)
        return self.head(pooled)


def make_bank(dev, gen, rng):
    n = STEPS * BATCH
    lengths = [rng.randint(60, 160) for _ in range(n)]
    for b in range(STEPS):  # each batch's longest utterance: a new padded length almost every step
        lengths[b * BATCH + rng.randrange(BATCH)] = 161 + (b * 7) % (MAX_FRAMES - 161)
    labels = torch.randint(0, KEYWORDS, (n,), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    protos = torch.randn(KEYWORDS, MELS, 8, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    t = torch.arange(MAX_FRAMES, device=dev)  # SYNCSPY-CLEAN: setup allocation
    pattern = protos[labels][:, :, (t // 30) % 8].transpose(1, 2)  # SYNCSPY-CLEAN: setup allocation
    feats = pattern + 0.8 * torch.randn(n, MAX_FRAMES, MELS, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    lens = torch.tensor(lengths, device=dev)  # SYNCSPY-CLEAN: setup upload of the lengths, once
    mask = (t.view(1, -1) < lens.view(-1, 1)).float()
    return feats * mask.unsqueeze(-1), mask, labels, lengths


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(21)
    feats, mask, labels, lengths = make_bank(dev, gen, random.Random(4))
    model = TCResNet().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=1e-2)
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
    correct = torch.zeros((), dtype=torch.long, device=dev)  # SYNCSPY-CLEAN: setup allocation
    shapes = set()

    for step in range(STEPS):
        s = step * BATCH
        t_max = max(lengths[s:s + BATCH])  # Python ints: the padded length costs no read
        shapes.add(t_max)
        x, m, y = feats[s:s + BATCH, :t_max], mask[s:s + BATCH, :t_max], labels[s:s + BATCH]
        logits = model(x, m)  # SYNCSPY-PROBLEM: cudnn.benchmark autotunes the convolutions for each new time length (blocking), every step
        loss = F.cross_entropy(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-PROBLEM: cudnn.benchmark autotunes the backward convolutions for each new time length (blocking), every step
        opt.step()  # SYNCSPY-CLEAN: AdamW state allocated on the first step
        loss_sum += loss.detach()
        correct += (logits.argmax(-1) == y).sum()

    mean_loss = loss_sum.item() / STEPS  # SYNCSPY-CLEAN: final read
    ok = math.isfinite(mean_loss) and 0 <= correct.item() <= STEPS * BATCH  # SYNCSPY-CLEAN: final read
    print("t74_kws_cudnn_benchmark_dynamic_length: steps=%d batch=%d padded_lengths=%d result=OK" % (STEPS, BATCH, len(shapes)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
