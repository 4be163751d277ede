#!/usr/bin/env python3
"""examples/corpus/t148_pose_heatmap_average_meter_cpu_numpy.py: corpus workload (PyTorch +
NumPy). Top-down human pose estimation in the style of SimpleBaseline/HRNet: a small
convolutional network (two stride-2 convolutions, four residual blocks of 64 channels, a 1x1
head) regresses 17 keypoint heatmaps (32 x 24, stride 4) from 128 x 96 person crops, trained
with the joints MSE loss weighted by keypoint visibility. The crops are rendered on the GPU from
keypoints uploaded once in setup (a coloured blob per visible joint), the target heatmaps are
Gaussians at the keypoints. The training loop is the reference `train()` of the HRNet
repository: after `optimizer.step()`, `losses.update(loss.item(), input.size(0))` feeds an
`AverageMeter`, and `accuracy(output.detach().cpu().numpy(), target.detach().cpu().numpy())`
computes PCK@0.5 in NumPy (`get_max_preds`, `calc_dists`, `dist_acc`), every step.
`Tensor.item()` and `.cpu()` of CUDA tensors copy to pageable host memory and wait for the copy
(`copy_kernel_cuda` ends it in `memcpy_and_sync`; the Performance Tuning Guide lists both among
the CPU-GPU synchronizations to avoid; `torch.cuda.set_sync_debug_mode("warn")` reports them).
`loss.item()` waits for the forward pass, the backward pass and the Adam update; the two
heatmap copies after it (2 x 32 x 17 x 32 x 24 floats, 3.3 MB) then run with the GPU idle, and
the NumPy accuracy runs on the host before the next step can be queued.
Fix (t153): keep the loss sum and the PCK counts on the GPU (argmax of the flattened heatmaps,
distances and threshold on the device) and read them once per epoch.
Planted: `losses.update(loss.item(), ...)` (expensive) and the `accuracy(...cpu().numpy()...)`
line (cheap: two blocking copies), every step.
Clean: setup (the keypoints, colours and model uploaded once), allocator growth in the first
steps (rendering, forward, backward, Adam), the losses read once after the loop.
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
        print("t148_pose_heatmap_average_meter_cpu_numpy: no CUDA device, result=SKIP")
        return 1
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    kpts, vis, colours = (t.to(dev) for t in make_keypoints(torch.Generator().manual_seed(148)))  # SYNCSPY-CLEAN: setup upload
    gen = torch.Generator(device=dev).manual_seed(148)
    model = PoseNet().to(dev)  # SYNCSPY-CLEAN: setup upload (stand-in for pretrained weights)
    optimizer = torch.optim.Adam(model.parameters(), lr=LR)
    losses, acc, history = AverageMeter(), AverageMeter(), []

    for epoch in range(EPOCHS):
        model.train()
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
            losses.update(loss.item(), input.size(0))  # SYNCSPY-PROBLEM: .item() every step, waits for the step
            _, avg_acc, cnt, pred = accuracy(output.detach().cpu().numpy(), target.detach().cpu().numpy())  # SYNCSPY-PROBLEM: blocking copies
            acc.update(avg_acc, cnt)

    hist = torch.stack(history).cpu()  # SYNCSPY-CLEAN: final read
    first, last = hist[:5].mean().item(), hist[-5:].mean().item()
    ok = (math.isfinite(first) and math.isfinite(last) and last < first and acc.count > 0
          and hist.numel() == EPOCHS * (CROPS // BATCH) and 0.0 <= acc.avg <= 1.0)
    print("t148_pose_heatmap_average_meter_cpu_numpy: epochs=%d steps=%d batch=%d joints=%d "
          "result=%s" % (EPOCHS, hist.numel(), BATCH, JOINTS, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
