#!/usr/bin/env python3
"""examples/corpus/t131_ser_pinned_loader_blocking_to.py: corpus workload (PyTorch).
Speech emotion recognition: a CNN with attention pooling over time classifies log-mel clips
(64 mel bands, 256 frames, 4 emotions) read by a `torch.utils.data.DataLoader` over a CPU
TensorDataset. The loader was given `pin_memory=True`, so every batch arrives in page-locked
memory, but the training step moves it with a plain `.to(dev)`: `non_blocking` defaults to False,
and `copy_kernel_cuda` (aten/src/ATen/native/cuda/Copy.cu) then calls
`at::cuda::memcpy_and_sync`, a `cudaMemcpyAsync` followed by `cudaStreamSynchronize` on the
current stream, whether or not the host memory is pinned. Pinning makes the copy a direct DMA;
only `non_blocking=True` lets the host go on (PyTorch CUDA semantics notes, "Use pinned memory
buffers"). So the upload of the clips waits for everything queued before it, the previous
step's forward, backward pass and Adam update, every step: the GPU's queue runs dry, and the GPU
idles through the copy until the host has queued the next forward pass. The label upload right
after it finds the stream empty and costs only its own round trip.
Planted: the two blocking `.to(dev)` lines of the step loop, every step (the features'
expensive, the labels' cheap).
Clean: setup (the validation clips uploaded once), the pinned host blocks the loader allocates
in the first batches (the caching host allocator reuses them), allocator growth in the first
steps, validation accuracy read once per epoch outside the step loop, the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

EPOCHS, CLIPS, VAL_CLIPS, BATCH, MELS, FRAMES, EMOTIONS = 3, 1024, 256, 64, 64, 256, 4


def make_clips(n, gen):
    """Log-mel clips: noise plus a band whose centre and vibrato rate depend on the class."""
    label = torch.randint(0, EMOTIONS, (n,), generator=gen)
    mel = torch.arange(MELS, dtype=torch.float32)
    frame = torch.arange(FRAMES, dtype=torch.float32)
    centre = 12.0 + 10.0 * label.float() + 2.0 * torch.randn(n, generator=gen)
    rate = 0.05 + 0.04 * label.float()
    phase = 2 * math.pi * torch.rand(n, generator=gen)
    wobble = 3.0 * torch.sin(rate[:, None] * frame[None] + phase[:, None])
    dist = (mel[None, :, None] - centre[:, None, None] - wobble[:, None, :]) / 3.0
    clips = 4.0 * torch.exp(-0.5 * dist * dist) + 0.5 * torch.randn(n, MELS, FRAMES, generator=gen)
    return clips[:, None].contiguous(), label


class EmotionCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()

        def block(cin, cout):
            conv = torch.nn.Conv2d(cin, cout, 3, padding=1, bias=False)
            return torch.nn.Sequential(conv, torch.nn.BatchNorm2d(cout), torch.nn.ReLU(),
                                       torch.nn.MaxPool2d(2))

        self.features = torch.nn.Sequential(block(1, 48), block(48, 96), block(96, 192))
        self.att = torch.nn.Linear(192, 1)
        self.head = torch.nn.Linear(192, EMOTIONS)

    def forward(self, x):
        h = self.features(x).mean(dim=2).transpose(1, 2)
        w = self.att(h).softmax(dim=1)
        return self.head((w * h).sum(dim=1))


def main():
    if not torch.cuda.is_available():
        print("t131_ser_pinned_loader_blocking_to: no CUDA device, result=SKIP")
        return 1
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator().manual_seed(131)
    clips, labels = make_clips(CLIPS, gen)
    val_clips, val_labels = make_clips(VAL_CLIPS, gen)
    val_x = val_clips.to(dev)  # SYNCSPY-CLEAN: setup upload, once
    val_y = val_labels.to(dev)  # SYNCSPY-CLEAN: setup upload, once
    loader = DataLoader(TensorDataset(clips, labels), batch_size=BATCH, shuffle=True,
                        generator=torch.Generator().manual_seed(7), pin_memory=True,
                        drop_last=True)
    model = EmotionCNN().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses, val_acc = [], []

    for epoch in range(EPOCHS):
        model.train()
        for feats, target in loader:  # SYNCSPY-CLEAN: pinned host blocks, first batches only
            feats = feats.to(dev)  # SYNCSPY-PROBLEM: pinned, but blocking: waits for the last step
            target = target.to(dev)  # SYNCSPY-PROBLEM: blocking copy (cheap: the stream is empty)
            logits = model(feats)  # SYNCSPY-CLEAN: allocator growth in the first steps
            loss = F.cross_entropy(logits, target)
            opt.zero_grad(set_to_none=True)
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
            losses.append(loss.detach())
        model.eval()
        with torch.no_grad():
            pred = model(val_x).argmax(dim=1)  # SYNCSPY-CLEAN: validation, once per epoch
        val_acc.append(pred.eq(val_y).float().mean().item())  # SYNCSPY-CLEAN: once per epoch

    hist = torch.stack(losses).cpu()  # SYNCSPY-CLEAN: final read
    first, last = hist[:5].mean().item(), hist[-5:].mean().item()
    steps = hist.numel()
    ok = (math.isfinite(first) and math.isfinite(last) and last < first
          and steps == EPOCHS * (CLIPS // BATCH) and all(0.0 <= a <= 1.0 for a in val_acc))
    print("t131_ser_pinned_loader_blocking_to: epochs=%d steps=%d batch=%d frames=%d result=%s"
          % (EPOCHS, steps, BATCH, FRAMES, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
