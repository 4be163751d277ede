#!/usr/bin/env python3
"""examples/corpus/t98_tile_segmentation_prefetcher_stream_sync.py: corpus workload (PyTorch).
Land-cover segmentation of 4-band satellite tiles (64x64, six classes: water, forest, crop,
grass, urban, bare soil) with a small U-Net. The decoded tiles sit in pinned host memory and a
double-buffered prefetcher copies batch i+1 into the free device slot on a side stream while
batch i trains. Before overwriting a slot the side stream waits for the compute stream
(`self.stream.wait_stream(torch.cuda.current_stream())`: the slot was last read by the step
before), which is right; then `_load` ends with `self.stream.synchronize()` "so the batch is
complete when next() returns". `Stream.synchronize` blocks the host until all work queued on
that stream has completed (cudaStreamSynchronize), and that stream's copy is ordered after
everything the compute stream had queued: the previous step's forward, backward and optimizer
update. Every step the host drains the GPU before it queues the next one, so the GPU idles for
the whole time the host spends queueing a step. `torch.cuda.current_stream().wait_stream(...)`
in `next()` already orders the batch before its use; the host never needs to wait.
Planted: the `self.stream.synchronize()` line in CudaPrefetcher._load, every step.
Clean: setup (the pinned tile store, the two device slots, the model upload), the asynchronous
copies from pinned memory on the side stream, allocator growth in the first steps, the
confusion matrix kept on the GPU, the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

STEPS, BATCH, TILES, BANDS, SIZE, CLASSES = 60, 32, 1024, 4, 64, 6


def make_tiles():
    """Host-side tile decoder stand-in: smooth class fields, a spectral signature per class, noise."""
    g = torch.Generator().manual_seed(98)
    field = F.interpolate(torch.randn(TILES, CLASSES, 8, 8, generator=g), size=(SIZE, SIZE), mode="bilinear", align_corners=False)
    labels = field.argmax(dim=1)
    signature = torch.rand(CLASSES, BANDS, generator=g)
    images = signature[labels].permute(0, 3, 1, 2) + 0.15 * torch.randn(TILES, BANDS, SIZE, SIZE, generator=g)
    return images.contiguous(), labels.to(torch.uint8)


class CudaPrefetcher:
    """Double-buffered loader: batch i+1 is copied into the free device slot on a side stream."""

    def __init__(self, images, masks, batch, dev):
        self.images, self.masks, self.batch = images, masks, batch
        self.stream = torch.cuda.Stream()
        self.slots = [(torch.empty((batch,) + tuple(images.shape[1:]), device=dev), torch.empty((batch,) + tuple(masks.shape[1:]), dtype=masks.dtype, device=dev)) for _ in range(2)]  # SYNCSPY-CLEAN: setup, two device slots allocated once
        self.i = 0
        self._load(0)

    def _load(self, i):
        x, y = self.slots[i % 2]
        s = (i * self.batch) % self.images.shape[0]
        self.stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.stream):
            x.copy_(self.images[s:s + self.batch], non_blocking=True)  # SYNCSPY-CLEAN: asynchronous copy from pinned memory on the side stream
            y.copy_(self.masks[s:s + self.batch], non_blocking=True)  # SYNCSPY-CLEAN: asynchronous copy from pinned memory on the side stream
        self.stream.synchronize()  # SYNCSPY-PROBLEM: the side stream waited for the compute stream: the host waits for the previous step to finish, every step

    def next(self):
        torch.cuda.current_stream().wait_stream(self.stream)
        x, y = self.slots[self.i % 2]
        self.i += 1
        self._load(self.i)
        return x, y


def conv_bn(cin, cout):
    return torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 3, padding=1, bias=False), torch.nn.BatchNorm2d(cout), torch.nn.ReLU(inplace=True))


class UNet(torch.nn.Module):
    def __init__(self, widths=(32, 64, 128, 256)):
        super().__init__()
        self.down = torch.nn.ModuleList()
        cin = BANDS
        for w in widths:
            self.down.append(torch.nn.Sequential(conv_bn(cin, w), conv_bn(w, w)))
            cin = w
        self.up = torch.nn.ModuleList()
        self.fuse = torch.nn.ModuleList()
        for w in reversed(widths[:-1]):
            self.up.append(torch.nn.ConvTranspose2d(cin, w, 2, stride=2))
            self.fuse.append(torch.nn.Sequential(conv_bn(2 * w, w), conv_bn(w, w)))
            cin = w
        self.head = torch.nn.Conv2d(cin, CLASSES, 1)

    def forward(self, x):
        skips = []
        for i, stage in enumerate(self.down):
            x = stage(x if i == 0 else F.max_pool2d(x, 2))
            skips.append(x)
        for up, fuse, skip in zip(self.up, self.fuse, reversed(skips[:-1])):
            x = fuse(torch.cat([up(x), skip], dim=1))
        return self.head(x)


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    host_images, host_labels = make_tiles()
    images = torch.empty(host_images.shape, pin_memory=True)  # SYNCSPY-CLEAN: setup, pinned tile store allocated once
    masks = torch.empty(host_labels.shape, dtype=torch.uint8, pin_memory=True)  # SYNCSPY-CLEAN: setup, pinned tile store allocated once
    images.copy_(host_images)
    masks.copy_(host_labels)
    model = UNet().to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    losses = torch.zeros(STEPS, device=dev)  # SYNCSPY-CLEAN: setup allocation
    confusion = torch.zeros(CLASSES * CLASSES, device=dev)  # SYNCSPY-CLEAN: setup allocation
    loader = CudaPrefetcher(images, masks, BATCH, dev)

    model.train()
    for step in range(STEPS):
        x, y8 = loader.next()
        y = y8.long()
        logits = model(x)  # SYNCSPY-CLEAN: allocator growth in the first steps
        loss = F.cross_entropy(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
        losses[step] = loss.detach()  # SYNCSPY-CLEAN: the step's loss copied into the loss history on the device (asynchronous device-to-device copy)
        pred = logits.detach().argmax(dim=1)
        confusion.index_add_(0, (y * CLASSES + pred).view(-1), torch.ones(y.numel(), device=dev))

    first, last = torch.stack([losses[:5].mean(), losses[-5:].mean()]).tolist()  # SYNCSPY-CLEAN: final read
    conf = confusion.view(CLASSES, CLASSES).cpu()  # SYNCSPY-CLEAN: final read
    pixel_acc = float(conf.diag().sum() / conf.sum())
    ok = math.isfinite(first) and math.isfinite(last) and last < first and 0.0 <= pixel_acc <= 1.0 and int(conf.sum()) == STEPS * BATCH * SIZE * SIZE
    print("t98_tile_segmentation_prefetcher_stream_sync: steps=%d batch=%d tiles=%d size=%d classes=%d result=%s" % (STEPS, BATCH, TILES, SIZE, CLASSES, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
