#!/usr/bin/env python3
"""examples/corpus/t109_frame_tagger_masked_fill_buffer_value.py: corpus workload (PyTorch).
Frame-level phone tagging of padded utterances (80 filterbank features, 128-256 frames padded to
256, 48 phone classes) with a six-layer pre-norm Transformer encoder written by hand: a fused QKV
projection, scaled dot-product scores, the key-padding mask applied with `masked_fill`, softmax,
dropout. The fill value is a module buffer, `register_buffer("mask_value", torch.tensor(-1e4))`,
so that `model.half()` converts it with the weights (float32's `finfo.min` overflows in fp16);
after `model.to(dev)` it is a 0-dim CUDA tensor, and `scores.masked_fill(mask, self.mask_value)`
takes the Tensor-value overload. On CUDA that overload is
`masked_fill__cuda(self, mask, value.item())` (aten/src/ATen/native/cuda/Indexing.cu): a blocking
read of the buffer in every attention layer, six per step, each behind the layer's QKV projection
and score matmul, while the host has the rest of the layer still to queue. A Python float (or
`torch.where` with the buffer) fills on the device.
Planted: the `scores.masked_fill(...)` line in MaskedSelfAttention.forward, six times per step.
Clean: setup (the corpus generated on the GPU and downloaded once into pinned host memory, the
lengths uploaded once), each batch uploaded `non_blocking` from the pinned host store that is never
rewritten, the padding mask built on the device, allocator growth in the first steps, the frame
accuracy read once per epoch outside the step loop, the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

EPOCHS, STEPS_PER_EPOCH, BATCH, UTTS, MINLEN, MAXLEN = 2, 20, 32, 1280, 128, 256
FEATS, D_MODEL, HEADS, LAYERS, FF, PHONES = 80, 256, 4, 6, 1024, 48


class MaskedSelfAttention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(D_MODEL, 3 * D_MODEL)
        self.proj = torch.nn.Linear(D_MODEL, D_MODEL)
        self.drop = torch.nn.Dropout(0.1)
        # A buffer, so that .half() converts the fill value with the weights.
        self.register_buffer("mask_value", torch.tensor(-1e4), persistent=False)

    def forward(self, x, pad):
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, HEADS, D_MODEL // HEADS).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(D_MODEL // HEADS)
        scores = scores.masked_fill(pad[:, None, None, :], self.mask_value)  # SYNCSPY-PROBLEM: Tensor-value overload on CUDA calls value.item(): a blocking read of the 0-dim buffer, every layer of every step
        attn = self.drop(scores.softmax(dim=-1))
        return self.proj((attn @ v).transpose(1, 2).reshape(b, t, D_MODEL))


class EncoderLayer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm1 = torch.nn.LayerNorm(D_MODEL)
        self.attn = MaskedSelfAttention()
        self.norm2 = torch.nn.LayerNorm(D_MODEL)
        self.ff = torch.nn.Sequential(torch.nn.Linear(D_MODEL, FF), torch.nn.GELU(), torch.nn.Dropout(0.1), torch.nn.Linear(FF, D_MODEL))

    def forward(self, x, pad):
        x = x + self.attn(self.norm1(x), pad)
        return x + self.ff(self.norm2(x))


class FrameTagger(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = torch.nn.Linear(FEATS, D_MODEL)
        pos = torch.arange(MAXLEN, dtype=torch.float32).unsqueeze(1)
        freq = torch.exp(torch.arange(0, D_MODEL, 2, dtype=torch.float32) * (-math.log(10000.0) / D_MODEL))
        self.register_buffer("pos", torch.cat([torch.sin(pos * freq), torch.cos(pos * freq)], dim=1), persistent=False)
        self.layers = torch.nn.ModuleList([EncoderLayer() for _ in range(LAYERS)])
        self.norm = torch.nn.LayerNorm(D_MODEL)
        self.out = torch.nn.Linear(D_MODEL, PHONES)

    def forward(self, feats, pad):
        x = self.inp(feats) + self.pos[: feats.shape[1]]
        for layer in self.layers:
            x = layer(x, pad)
        return self.out(self.norm(x))


def make_corpus(dev, gen):
    """Phone segments of random duration; each frame is its phone's prototype plus noise, zero and unlabelled past the end."""
    lengths = torch.randint(MINLEN, MAXLEN + 1, (UTTS,), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    boundary = torch.rand(UTTS, MAXLEN, device=dev, generator=gen) < 0.15  # SYNCSPY-CLEAN: setup allocation
    segment_phone = torch.randint(0, PHONES, (UTTS, MAXLEN + 1), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    phone = segment_phone.gather(1, boundary.long().cumsum(dim=1))  # SYNCSPY-CLEAN: setup allocation
    proto = torch.randn(PHONES, FEATS, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    noise = torch.randn(UTTS, MAXLEN, FEATS, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    valid = torch.arange(MAXLEN, device=dev).unsqueeze(0) < lengths.unsqueeze(1)  # SYNCSPY-CLEAN: setup allocation
    feats = (proto[phone] + 1.2 * noise) * valid.unsqueeze(2)  # SYNCSPY-CLEAN: setup, a large temporary
    labels = phone.masked_fill(~valid, -100)  # SYNCSPY-CLEAN: setup allocation
    return feats, labels, lengths


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(109)
    feats_dev, labels_dev, lengths = make_corpus(dev, gen)
    feats_host = torch.empty(UTTS, MAXLEN, FEATS, pin_memory=True)  # SYNCSPY-CLEAN: setup, the pinned host store
    labels_host = torch.empty(UTTS, MAXLEN, dtype=torch.long, pin_memory=True)  # SYNCSPY-CLEAN: setup, the pinned host store
    feats_host.copy_(feats_dev)  # SYNCSPY-CLEAN: setup, the corpus downloaded once (stand-in for the feature archive)
    labels_host.copy_(labels_dev)  # SYNCSPY-CLEAN: setup, the corpus downloaded once
    del feats_dev, labels_dev
    frame_pos = torch.arange(MAXLEN, device=dev).unsqueeze(0)  # SYNCSPY-CLEAN: setup allocation
    model = FrameTagger().to(dev)  # SYNCSPY-CLEAN: setup upload (the mask_value buffer becomes a CUDA tensor)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    losses = torch.zeros(EPOCHS * STEPS_PER_EPOCH, device=dev)  # SYNCSPY-CLEAN: setup allocation
    correct = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
    total = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
    epoch_acc = []

    model.train()
    for epoch in range(EPOCHS):
        correct.zero_()
        total.zero_()
        for i in range(STEPS_PER_EPOCH):
            step = epoch * STEPS_PER_EPOCH + i
            s = (step * BATCH) % UTTS
            feats = feats_host[s:s + BATCH].to(dev, non_blocking=True)  # SYNCSPY-CLEAN: asynchronous copy from pinned memory
            labels = labels_host[s:s + BATCH].to(dev, non_blocking=True)  # SYNCSPY-CLEAN: asynchronous copy from pinned memory
            pad = frame_pos >= lengths[s:s + BATCH].unsqueeze(1)
            logits = model(feats, pad)  # SYNCSPY-CLEAN: allocator growth in the first steps
            loss = F.cross_entropy(logits.reshape(-1, PHONES), labels.reshape(-1), ignore_index=-100)  # SYNCSPY-CLEAN: large temporary (log-softmax over 8,192 frames), allocator growth in the first steps
            opt.zero_grad(set_to_none=True)
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            opt.step()  # SYNCSPY-CLEAN: AdamW state allocated on the first step
            losses[step] = loss.detach()  # SYNCSPY-CLEAN: the step's loss copied into the history on the device (asynchronous device-to-device copy)
            hit = labels.ne(-100)
            correct += (logits.detach().argmax(dim=-1).eq(labels) & hit).sum()
            total += hit.sum()
        epoch_acc.append((correct / total).item())  # SYNCSPY-CLEAN: once per epoch, outside the step loop

    first, last = losses[:5].mean().item(), losses[-5:].mean().item()  # SYNCSPY-CLEAN: final read
    ok = math.isfinite(first) and math.isfinite(last) and last < first and all(0.0 <= a <= 1.0 for a in epoch_acc)
    print("t109_frame_tagger_masked_fill_buffer_value: epochs=%d steps=%d batch=%d maxlen=%d layers=%d phones=%d result=%s" % (EPOCHS, EPOCHS * STEPS_PER_EPOCH, BATCH, MAXLEN, LAYERS, PHONES, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
