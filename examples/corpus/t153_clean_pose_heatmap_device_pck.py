#!/usr/bin/env python3
"""examples/corpus/t153_clean_pose_heatmap_device_pck.py: corpus workload (PyTorch + NumPy),
CLEAN. The top-down pose estimator of t148 (two stride-2 convolutions, four residual blocks of
64 channels, 17 heatmaps of 32 x 24 from 128 x 96 crops rendered on the GPU, the joints MSE
loss weighted by visibility, Adam, 32 crops a step) with its metrics kept on the GPU (the fix
of t148): the loss is summed into a device tensor, and PCK@0.5 is computed on the device with
the same definition as HRNet's NumPy `accuracy` (argmax of the flattened heatmaps, keypoints
counted where the target's argmax is past (1, 1), distances normalized by a tenth of the heatmap
size, per-joint hit and count sums), instead of `loss.item()` into an `AverageMeter` and two
`.cpu().numpy()` heatmap copies every step. The sums are read once per epoch, after the epoch's
step loop. The device PCK is checked after the loop against the NumPy `accuracy` on the last
batch.
Clean: all of it; the marked lines are setup (the keypoints, colours and model uploaded once),
allocator growth in the first steps (rendering, forward, backward, Adam), the epoch's loss and
PCK read once per epoch outside the step loop, the final reads.
Per step on an H100 (estimated from the sizes, fp32 without TF32): about 110 GFLOP of
convolutions forward and backward for 32 crops, 2-3 ms.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

JOINTS, IMG_H, IMG_W, HM_H, HM_W, SIGMA, WIDTH = 17, 128, 96, 32, 24, 1.0, 64
CROPS, BATCH, EPOCHS, LR = 1280, 32, 2, 1e-3


class AverageMeter:
    """Computes and stores the average and current value (HRNet's lib/utils)."""

    def __init__(self):
        self.val = self.avg = self.sum = self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count if self.count != 0 else 0


def get_max_preds(batch_heatmaps):
    b, j, _, w = batch_heatmaps.shape
    reshaped = batch_heatmaps.reshape((b, j, -1))
    idx = np.argmax(reshaped, 2).reshape((b, j, 1))
    maxvals = np.amax(reshaped, 2).reshape((b, j, 1))
    preds = np.tile(idx, (1, 1, 2)).astype(np.float32)
    preds[:, :, 0] = preds[:, :, 0] % w
    preds[:, :, 1] = np.floor(preds[:, :, 1] / w)
    return preds * np.tile(np.greater(maxvals, 0.0), (1, 1, 2)).astype(np.float32), maxvals


def calc_dists(preds, target, normalize):
    dists = np.zeros((preds.shape[1], preds.shape[0]))
    for n in range(preds.shape[0]):
        for c in range(preds.shape[1]):
            if target[n, c, 0] > 1 and target[n, c, 1] > 1:
                dists[c, n] = np.linalg.norm(preds[n, c] / normalize[n] - target[n, c] / normalize[n])
            else:
                dists[c, n] = -1
    return dists


def dist_acc(dists, thr=0.5):
    valid = np.not_equal(dists, -1)
    return np.less(dists[valid], thr).sum() * 1.0 / valid.sum() if valid.sum() > 0 else -1


def accuracy(output, target, thr=0.5):
    pred, _ = get_max_preds(output)
    target, _ = get_max_preds(target)
    norm = np.ones((pred.shape[0], 2)) * np.array([output.shape[2], output.shape[3]]) / 10
    dists = calc_dists(pred, target, norm)
    accs = [dist_acc(dists[j], thr) for j in range(output.shape[1])]
    valid = [a for a in accs if a >= 0]
    return accs, (sum(valid) / len(valid) if valid else 0), len(valid), pred


def argmax_xy(heatmaps):
    maxvals, idx = heatmaps.flatten(2).max(dim=2)
    xy = torch.stack([idx % heatmaps.size(3), idx // heatmaps.size(3)], dim=-1).float()
    return xy * (maxvals > 0).unsqueeze(-1)


def pck_counts(output, target, thr=0.5):
    """HRNet's PCK on the device: per-joint hits and counted keypoints, no host read."""
    pred, gt = argmax_xy(output), argmax_xy(target)
    counted = (gt[..., 0] > 1) & (gt[..., 1] > 1)
    dx = (pred[..., 0] - gt[..., 0]) / (output.size(2) / 10.0)
    dy = (pred[..., 1] - gt[..., 1]) / (output.size(3) / 10.0)
    hits = (torch.sqrt(dx * dx + dy * dy) < thr) & counted
    return hits.sum(0), counted.sum(0)


def mean_pck(hits, counted):
    per_joint = [h / c for h, c in zip(hits, counted) if c > 0]
    return sum(per_joint) / len(per_joint) if per_joint else 0.0


class Residual(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1, self.bn1 = torch.nn.Conv2d(c, c, 3, padding=1, bias=False), torch.nn.BatchNorm2d(c)
        self.conv2, self.bn2 = torch.nn.Conv2d(c, c, 3, padding=1, bias=False), torch.nn.BatchNorm2d(c)

    def forward(self, x):
        return F.relu(x + self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x))))))


class PoseNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Sequential(
            torch.nn.Conv2d(3, 32, 3, stride=2, padding=1, bias=False), torch.nn.BatchNorm2d(32),
            torch.nn.ReLU(), torch.nn.Conv2d(32, WIDTH, 3, stride=2, padding=1, bias=False),
            torch.nn.BatchNorm2d(WIDTH), torch.nn.ReLU())
        self.blocks = torch.nn.Sequential(*[Residual(WIDTH) for _ in range(4)])
        self.head = torch.nn.Conv2d(WIDTH, JOINTS, 1)

    def forward(self, x):
        return self.head(self.blocks(self.stem(x)))


def render(kpts, vis, colours, gen):
    """Crops with a coloured blob per visible joint, and Gaussian target heatmaps."""
    ys = torch.arange(IMG_H, device=kpts.device, dtype=torch.float32)[:, None]
    xs = torch.arange(IMG_W, device=kpts.device, dtype=torch.float32)[None, :]
    x, y = kpts[..., 0, None, None], kpts[..., 1, None, None]
    blobs = torch.exp(-((xs - x) ** 2 + (ys - y) ** 2) / 8.0) * vis[..., None, None]
    img = torch.einsum("bjhw,jc->bchw", blobs, colours)
    img = img + 0.05 * torch.randn(img.shape, device=img.device, generator=gen)
    hy = torch.arange(HM_H, device=kpts.device, dtype=torch.float32)[:, None]
    hx = torch.arange(HM_W, device=kpts.device, dtype=torch.float32)[None, :]
    cx, cy = (x / 4.0).round(), (y / 4.0).round()
    target = torch.exp(-((hx - cx) ** 2 + (hy - cy) ** 2) / (2 * SIGMA ** 2)) * vis[..., None, None]
    return img, target


def joints_mse(output, target, weight):
    w = weight[..., None, None]
    return 0.5 * F.mse_loss(output * w, target * w)


def make_keypoints(gen):
    template = torch.rand(JOINTS, 2, generator=gen) * torch.tensor([IMG_W - 40.0, IMG_H - 40.0])
    kpts = template + 20.0 + 6.0 * torch.randn(CROPS, JOINTS, 2, generator=gen)
    kpts[..., 0].clamp_(8.0, IMG_W - 8.0)
    kpts[..., 1].clamp_(8.0, IMG_H - 8.0)
    vis = (torch.rand(CROPS, JOINTS, generator=gen) < 0.9).float()
    return kpts, vis, torch.rand(JOINTS, 3, generator=gen) * 2.0 - 1.0


def main():
    if not torch.cuda.is_available():
        print("t153_clean_pose_heatmap_device_pck: no CUDA device, result=SKIP")
        return 1
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    kpts, vis, colours = (t.to(dev) for t in make_keypoints(torch.Generator().manual_seed(148)))  # SYNCSPY-CLEAN: setup upload
    gen = torch.Generator(device=dev).manual_seed(148)
    model = PoseNet().to(dev)  # SYNCSPY-CLEAN: setup upload (stand-in for pretrained weights)
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    history, epoch_pck, epoch_loss = [], [], []

    for epoch in range(EPOCHS):
        model.train()
        loss_sum = torch.zeros((), device=dev)
        hits = torch.zeros(JOINTS, dtype=torch.long, device=dev)
        counted = torch.zeros(JOINTS, dtype=torch.long, device=dev)
        for i in range(CROPS // BATCH):
            s = slice(i * BATCH, (i + 1) * BATCH)
            input, target = render(kpts[s], vis[s], colours, gen)  # SYNCSPY-CLEAN: growth, first steps
            target_weight = vis[s]
            output = model(input)  # SYNCSPY-CLEAN: allocator growth in the first steps
            loss = joints_mse(output, target, target_weight)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            optimizer.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
            history.append(loss.detach())
            loss_sum += loss.detach() * input.size(0)
            h, c = pck_counts(output.detach(), target)
            hits += h
            counted += c
        stats = torch.cat([hits.float(), counted.float(), loss_sum[None] / CROPS]).tolist()  # SYNCSPY-CLEAN: once per epoch
        epoch_pck.append(mean_pck(stats[:JOINTS], stats[JOINTS:2 * JOINTS]))
        epoch_loss.append(stats[-1])

    hist = torch.stack(history).cpu()  # SYNCSPY-CLEAN: final read
    first, last = hist[:5].mean().item(), hist[-5:].mean().item()
    h, c = pck_counts(output.detach(), target)
    device_pck = mean_pck(h.tolist(), c.tolist())  # SYNCSPY-CLEAN: final read, check
    _, numpy_pck, _, _ = accuracy(output.detach().cpu().numpy(), target.cpu().numpy())  # SYNCSPY-CLEAN: final read, check
    ok = (math.isfinite(first) and math.isfinite(last) and last < first
          and hist.numel() == EPOCHS * (CROPS // BATCH) and abs(device_pck - numpy_pck) < 0.02
          and all(0.0 <= p <= 1.0 for p in epoch_pck) and epoch_loss[-1] < epoch_loss[0])
    print("t153_clean_pose_heatmap_device_pck: epochs=%d steps=%d batch=%d joints=%d "
          "result=%s" % (EPOCHS, hist.numel(), BATCH, JOINTS, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
