#!/usr/bin/env python3
"""examples/corpus/t113_protonet_sampler_cuda_class_iter.py: corpus workload (PyTorch).
Few-shot image classification with a prototypical network: a Conv-4 backbone (64 channels, 84x84 RGB
images), 20-way 5-shot episodes with 15 queries per class, prototypes as the mean support embedding,
logits as negative squared distances over the embedding width (unscaled, they saturate the softmax:
a loss of 0 from the first episode on the GPU), Adam. The images and the class index table
(`by_class`, classes x samples, into the shuffled image store) live on the GPU, and the episode
sampler draws the episode's classes and sample order on the device. It then builds the episode in a
Python loop over the class tensor, `for way, c in enumerate(classes)`, and picks each class's row
with `self.by_class[c]`. Iterating a CUDA tensor yields 0-dim CUDA tensors, and an integer 0-dim
tensor used as an index is turned into an integer on the host (`tensor.item<int64_t>()` in
at::indexing's handleDimInMultiDimIndexing, then a `select`): a blocking read per class, 20 per
episode, the first behind the previous episode's backward pass and update, while nothing is queued
for the GPU until the sampler returns. Indexing `by_class` with the whole class tensor gathers the
rows on the device with no read.
Planted: the `self.by_class[c]` line in EpisodeSampler.sample, 20 times per episode.
Clean: setup (the image store generated on the GPU), the device-side draws of classes and sample
order, allocator growth in the first episodes, the query accuracy read once per epoch outside the
episode loop, the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

EPOCHS, EPISODES_PER_EPOCH, CLASSES, PER_CLASS, SIZE = 2, 20, 160, 20, 84
N_WAY, K_SHOT, N_QUERY, WIDTH = 20, 5, 15, 64


class EpisodeSampler:
    def __init__(self, by_class, gen):
        self.by_class, self.gen = by_class, gen

    def sample(self):
        dev = self.by_class.device
        classes = torch.randperm(self.by_class.shape[0], device=dev, generator=self.gen)[:N_WAY]
        order = torch.rand(N_WAY, PER_CLASS, device=dev, generator=self.gen).argsort(dim=1)[:, :K_SHOT + N_QUERY]
        rows = []
        for way, c in enumerate(classes):
            rows.append(self.by_class[c][order[way]])  # SYNCSPY-PROBLEM: c is a 0-dim CUDA tensor; indexing with it calls .item(): a blocking read per class, 20 per episode
        picks = torch.stack(rows)
        return picks[:, :K_SHOT].reshape(-1), picks[:, K_SHOT:].reshape(-1)


def conv_block(cin, cout):
    return torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 3, padding=1), torch.nn.BatchNorm2d(cout), torch.nn.ReLU(), torch.nn.MaxPool2d(2))


class ProtoNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = torch.nn.Sequential(conv_block(3, WIDTH), conv_block(WIDTH, WIDTH), conv_block(WIDTH, WIDTH), conv_block(WIDTH, WIDTH), torch.nn.Flatten())

    def forward(self, support, query):
        emb = self.backbone(torch.cat([support, query]))
        protos = emb[: N_WAY * K_SHOT].view(N_WAY, K_SHOT, -1).mean(dim=1)
        return -torch.cdist(emb[N_WAY * K_SHOT:], protos).square() / emb.shape[1]


def make_store(dev, gen):
    """Each class a smooth random colour pattern; samples add their own smooth variation and pixel noise; stored shuffled."""
    n = CLASSES * PER_CLASS
    proto = torch.randn(CLASSES, 3, 12, 12, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    cls = torch.arange(CLASSES, device=dev).repeat_interleave(PER_CLASS)  # SYNCSPY-CLEAN: setup allocation
    low = proto[cls] + 0.7 * torch.randn(n, 3, 12, 12, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    images = F.interpolate(low, size=(SIZE, SIZE), mode="bilinear", align_corners=False)  # SYNCSPY-CLEAN: setup, the image store
    images += 0.3 * torch.randn(n, 3, SIZE, SIZE, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup, a large temporary
    slot = torch.randperm(n, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    store = torch.empty_like(images)  # SYNCSPY-CLEAN: setup, the shuffled store
    store[slot] = images  # SYNCSPY-CLEAN: setup, the images scattered into their shuffled slots (device-to-device)
    return store, slot.view(CLASSES, PER_CLASS)


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(113)
    store, by_class = make_store(dev, gen)
    sampler = EpisodeSampler(by_class, gen)
    model = ProtoNet().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    target = torch.arange(N_WAY, device=dev).repeat_interleave(N_QUERY)  # SYNCSPY-CLEAN: setup allocation
    losses = torch.zeros(EPOCHS * EPISODES_PER_EPOCH, device=dev)  # SYNCSPY-CLEAN: setup allocation
    correct = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
    epoch_acc = []

    model.train()
    for epoch in range(EPOCHS):
        correct.zero_()
        for i in range(EPISODES_PER_EPOCH):
            episode = epoch * EPISODES_PER_EPOCH + i
            support_idx, query_idx = sampler.sample()
            logits = model(store[support_idx], store[query_idx])  # SYNCSPY-CLEAN: allocator growth in the first episodes (the episode's images gathered, the forward pass)
            loss = F.cross_entropy(logits, target)
            opt.zero_grad(set_to_none=True)
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first episodes
            opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first episode
            losses[episode] = loss.detach()  # SYNCSPY-CLEAN: the episode's loss copied into the history on the device (asynchronous device-to-device copy)
            correct += logits.detach().argmax(dim=1).eq(target).sum()
        epoch_acc.append(correct.item() / (EPISODES_PER_EPOCH * N_WAY * N_QUERY))  # SYNCSPY-CLEAN: once per epoch, outside the episode loop

    first, last = losses[:5].mean().item(), losses[-5:].mean().item()  # SYNCSPY-CLEAN: final read
    ok = math.isfinite(first) and math.isfinite(last) and last < first and all(0.0 <= a <= 1.0 for a in epoch_acc)
    print("t113_protonet_sampler_cuda_class_iter: epochs=%d episodes=%d way=%d shot=%d query=%d size=%d result=%s" % (EPOCHS, EPOCHS * EPISODES_PER_EPOCH, N_WAY, K_SHOT, N_QUERY, SIZE, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
