#!/usr/bin/env python3
"""examples/corpus/t72_retina_anchor_attribute_upload.py: corpus workload (PyTorch). Training a
small single-stage (RetinaNet-style) detector on synthetic scenes of bright rectangles: a conv
backbone at stride 8, a classification and a box-regression head over three anchor shapes per
cell, IoU matching of anchors to ground truth on the GPU, sigmoid focal loss normalized by the
positive count clamped on the device, and smooth-L1 on the encoded box deltas. The anchor grid
is built once on the CPU by an AnchorGenerator and kept by the head as a plain attribute
(`self.anchors = ...`), not as a registered buffer, so `model.to(dev)` does not move it
(`Module.to` moves parameters and buffers only) and `forward` calls `self.anchors.to(x.device)`
on every call. That is a copy from pageable host memory with `non_blocking=False`: ATen's CUDA
copy (`copy_kernel_cuda`) issues `cudaMemcpyAsync` and then synchronizes the stream
(`memcpy_and_sync`), so the host waits for the previous step's backward and optimizer work
every step. `register_buffer("anchors", ...)` moves the grid once with the module.
Planted: the `self.anchors.to(feat.device)` line in RetinaHead.forward, every step.
Clean: setup (scenes rendered on the GPU, the model upload), allocator growth in the first
steps, the normalizer kept on the GPU, the final read.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

STEPS, BATCH, POOL, IMG, STRIDE, OBJS, CLASSES = 40, 32, 256, 64, 8, 3, 2
ANCHOR_SHAPES = ((12.0, 12.0), (20.0, 10.0), (10.0, 20.0))


class AnchorGenerator:
    def __init__(self, img, stride, shapes):
        self.img, self.stride, self.shapes = img, stride, shapes

    def grid(self):
        n = self.img // self.stride
        cs = (torch.arange(n, dtype=torch.float32) + 0.5) * self.stride
        cy, cx = torch.meshgrid(cs, cs, indexing="ij")
        out = []
        for w, h in self.shapes:
            out.append(torch.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], dim=-1))
        return torch.stack(out, dim=2).reshape(-1, 4)  # (n*n*A, 4), on the CPU


def box_iou(a, b):
    area_a = (a[..., 2] - a[..., 0]) * (a[..., 3] - a[..., 1])
    area_b = (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1])
    lt = torch.max(a[..., :, None, :2], b[..., None, :, :2])
    rb = torch.min(a[..., :, None, 2:], b[..., None, :, 2:])
    inter = (rb - lt).clamp(min=0).prod(-1)
    return inter / (area_a[..., :, None] + area_b[..., None, :] - inter)


def encode(anchors, boxes):
    aw, ah = anchors[..., 2] - anchors[..., 0], anchors[..., 3] - anchors[..., 1]
    ax, ay = anchors[..., 0] + aw / 2, anchors[..., 1] + ah / 2
    bw, bh = boxes[..., 2] - boxes[..., 0], boxes[..., 3] - boxes[..., 1]
    bx, by = boxes[..., 0] + bw / 2, boxes[..., 1] + bh / 2
    return torch.stack([(bx - ax) / aw, (by - ay) / ah, torch.log(bw / aw), torch.log(bh / ah)], dim=-1)


class RetinaHead(torch.nn.Module):
    def __init__(self, anchors):
        super().__init__()
        a = len(ANCHOR_SHAPES)
        self.backbone = torch.nn.Sequential(
            torch.nn.Conv2d(1, 32, 3, stride=2, padding=1), torch.nn.ReLU(inplace=True),
            torch.nn.Conv2d(32, 64, 3, stride=2, padding=1), torch.nn.ReLU(inplace=True),
            torch.nn.Conv2d(64, 128, 3, stride=2, padding=1), torch.nn.ReLU(inplace=True),
            torch.nn.Conv2d(128, 128, 3, padding=1), torch.nn.ReLU(inplace=True))
        self.cls = torch.nn.Conv2d(128, a * CLASSES, 3, padding=1)
        self.box = torch.nn.Conv2d(128, a * 4, 3, padding=1)
        torch.nn.init.constant_(self.cls.bias, -math.log(99.0))
        self.anchors = anchors  # a plain attribute: stays on the CPU when the module moves

    def forward(self, images):
        feat = self.backbone(images)
        b = feat.shape[0]
        logits = self.cls(feat).permute(0, 2, 3, 1).reshape(b, -1, CLASSES)
        deltas = self.box(feat).permute(0, 2, 3, 1).reshape(b, -1, 4)
        anchors = self.anchors.to(feat.device)  # SYNCSPY-PROBLEM: blocking H2D copy from pageable memory (memcpy_and_sync) every forward
        return logits, deltas, anchors


def render_scenes(dev, gen):
    size = 8.0 + 16.0 * torch.rand(POOL, OBJS, 2, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    corner = torch.rand(POOL, OBJS, 2, device=dev, generator=gen) * (IMG - size)  # SYNCSPY-CLEAN: setup allocation
    boxes = torch.cat([corner, corner + size], dim=-1)  # SYNCSPY-CLEAN: setup allocation
    labels = torch.randint(0, CLASSES, (POOL, OBJS), device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    ys = torch.arange(IMG, device=dev, dtype=torch.float32).view(1, 1, IMG, 1) + 0.5  # SYNCSPY-CLEAN: setup allocation
    xs = ys.view(1, 1, 1, IMG)
    inside = ((xs >= boxes[..., 0, None, None]) & (xs <= boxes[..., 2, None, None]) & (ys >= boxes[..., 1, None, None]) & (ys <= boxes[..., 3, None, None])).float()  # SYNCSPY-CLEAN: setup allocation
    level = (0.5 + 0.5 * labels.float()).view(POOL, OBJS, 1, 1)
    images = (inside * level).amax(dim=1, keepdim=True) + 0.05 * torch.randn(POOL, 1, IMG, IMG, device=dev, generator=gen)  # SYNCSPY-CLEAN: setup allocation
    return images, boxes, labels


def detection_loss(logits, deltas, anchors, gt_boxes, gt_labels):
    iou = box_iou(anchors.unsqueeze(0).expand(gt_boxes.shape[0], -1, -1), gt_boxes)  # (B, A, G)
    best_iou, best = iou.max(dim=2)
    pos = (best_iou >= 0.4).float()
    matched = torch.gather(gt_boxes, 1, best.unsqueeze(-1).expand(-1, -1, 4))
    cls_target = F.one_hot(torch.gather(gt_labels, 1, best), CLASSES).float() * pos.unsqueeze(-1)
    normalizer = pos.sum().clamp(min=1.0)
    p = torch.sigmoid(logits)
    ce = F.binary_cross_entropy_with_logits(logits, cls_target, reduction="none")
    p_t = p * cls_target + (1 - p) * (1 - cls_target)
    alpha_t = 0.25 * cls_target + 0.75 * (1 - cls_target)
    cls_loss = (alpha_t * ce * (1 - p_t) ** 2).sum() / normalizer
    reg = F.smooth_l1_loss(deltas, encode(anchors, matched), beta=0.1, reduction="none").sum(-1)
    reg_loss = (reg * pos).sum() / normalizer
    return cls_loss + reg_loss


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(11)
    images, gt_boxes, gt_labels = render_scenes(dev, gen)
    anchors = AnchorGenerator(IMG, STRIDE, ANCHOR_SHAPES).grid()
    model = RetinaHead(anchors).to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation

    for step in range(STEPS):
        s = (step * BATCH) % POOL
        logits, deltas, anc = model(images[s:s + BATCH])  # SYNCSPY-CLEAN: allocator growth in the first steps
        loss = detection_loss(logits, deltas, anc, gt_boxes[s:s + BATCH], gt_labels[s:s + BATCH])  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: momentum buffers allocated on the first step
        loss_sum += loss.detach()

    mean_loss = loss_sum.item() / STEPS  # SYNCSPY-CLEAN: final read
    ok = math.isfinite(mean_loss) and anchors.shape[0] == (IMG // STRIDE) ** 2 * len(ANCHOR_SHAPES)
    print("t72_retina_anchor_attribute_upload: steps=%d batch=%d anchors=%d result=OK" % (STEPS, BATCH, anchors.shape[0]))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
