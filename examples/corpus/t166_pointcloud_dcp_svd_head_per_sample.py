#!/usr/bin/env python3
"""examples/corpus/t166_pointcloud_dcp_svd_head_per_sample.py: corpus workload (PyTorch).
Point cloud registration: Deep Closest Point (DCP-v1: a DGCNN embedding with k-nearest-neighbour
edge convolutions, identity pointer, SVD head) trained to register synthetic shapes (three
random ellipsoid blobs, 256 points, generated on the GPU) against copies rotated by up to 45
degrees about each axis, translated by up to 0.5 and shuffled, 8 pairs a step. The rigid
transform comes from DCP's `SVDHead.forward`, which solves the weighted Procrustes problem one
cloud at a time in a Python loop over the batch: `u, s, v = torch.svd(H[i])` of the 3 x 3
cross-covariance, then `r_det = torch.det(r)` and `if r_det < 0:` to undo a reflection, where
it computes the SVD again. On CUDA the SVD checks its `info` on the host (`torch.svd` calls
`linalg.svd`, which ends in `_linalg_check_errors`, an `.item()`; the torch.linalg notes say of
CUDA inputs "this function synchronizes that device with the CPU"), and `if r_det < 0:` is
`Tensor.__bool__`, an `.item()`: two or three blocking reads per cloud, 16-24 a step, the first
behind the DGCNN's forward pass (the Performance Tuning Guide lists `.item()` and Python control
flow on CUDA results among the synchronizations to avoid). The training loop is written without
DCP's other per-step host copies (batches generated on the GPU, the identity built once, the
loss kept on the device), so that the SVD head is the problem.
Fix (not in this set): one batched `torch.linalg.svd(H)` for the whole batch (one check per step
instead of one per cloud) and the reflection applied with `torch.where` on the sign of the
batched determinant.
Planted: in `SVDHead.solve`, the `torch.svd` line, the `if r_det < 0:` line and the branch's
second `torch.svd`, every cloud of every step.
Clean: setup (the shapes generated on the GPU, the model uploaded), allocator growth in the
first steps (forward, backward, Adam), the final reads.
Per step on an H100 (estimated from the sizes, fp32 without TF32): 2 x 8 clouds of 256 points
through four edge convolutions with k = 10, a 256 x 256 attention per pair, forward and
backward, about 1-2 ms, plus 8 small SVDs and their waits.
"""
import math
import sys

import torch
import torch.nn.functional as F

SHAPES, POINTS, K, EMB, BATCH, STEPS, LR, MAX_ANGLE, MAX_T = 512, 256, 10, 64, 8, 40, 3e-3, math.pi / 4, 0.5


def knn(x, k):
    inner = -2 * torch.matmul(x.transpose(2, 1).contiguous(), x)
    xx = torch.sum(x ** 2, dim=1, keepdim=True)
    pairwise_distance = -xx - inner - xx.transpose(2, 1).contiguous()
    return pairwise_distance.topk(k=k, dim=-1)[1]


def get_graph_feature(x, k=K):
    idx = knn(x, k=k)
    batch_size, num_points, _ = idx.size()
    idx_base = torch.arange(0, batch_size, device=x.device).view(-1, 1, 1) * num_points
    idx = (idx + idx_base).view(-1)
    _, num_dims, _ = x.size()
    x = x.transpose(2, 1).contiguous()
    feature = x.view(batch_size * num_points, -1)[idx, :].view(batch_size, num_points, k, num_dims)
    x = x.view(batch_size, num_points, 1, num_dims).repeat(1, 1, k, 1)
    return torch.cat((feature, x), dim=3).permute(0, 3, 1, 2)


class DGCNN(torch.nn.Module):
    def __init__(self, emb_dims=EMB):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(6, 32, kernel_size=1, bias=False)
        self.conv2 = torch.nn.Conv2d(32, 32, kernel_size=1, bias=False)
        self.conv3 = torch.nn.Conv2d(32, 64, kernel_size=1, bias=False)
        self.conv4 = torch.nn.Conv2d(64, 128, kernel_size=1, bias=False)
        self.conv5 = torch.nn.Conv2d(256, emb_dims, kernel_size=1, bias=False)
        self.bn1, self.bn2, self.bn3 = torch.nn.BatchNorm2d(32), torch.nn.BatchNorm2d(32), torch.nn.BatchNorm2d(64)
        self.bn4, self.bn5 = torch.nn.BatchNorm2d(128), torch.nn.BatchNorm2d(emb_dims)

    def forward(self, x):
        batch_size, num_dims, num_points = x.size()
        x = get_graph_feature(x)
        x1 = F.relu(self.bn1(self.conv1(x))).max(dim=-1, keepdim=True)[0]
        x2 = F.relu(self.bn2(self.conv2(x1))).max(dim=-1, keepdim=True)[0]
        x3 = F.relu(self.bn3(self.conv3(x2))).max(dim=-1, keepdim=True)[0]
        x4 = F.relu(self.bn4(self.conv4(x3))).max(dim=-1, keepdim=True)[0]
        x = torch.cat((x1, x2, x3, x4), dim=1)
        return F.relu(self.bn5(self.conv5(x))).view(batch_size, -1, num_points)


class SVDHead(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.reflect = torch.nn.Parameter(torch.eye(3), requires_grad=False)
        self.reflect.data[2, 2] = -1

    def forward(self, src_embedding, tgt_embedding, src, tgt):
        d_k = src_embedding.size(1)
        scores = torch.matmul(src_embedding.transpose(2, 1).contiguous(), tgt_embedding) / math.sqrt(d_k)
        scores = torch.softmax(scores, dim=2)
        src_corr = torch.matmul(tgt, scores.transpose(2, 1).contiguous())
        return self.solve(src, src_corr)

    def solve(self, src, src_corr):
        batch_size = src.size(0)
        src_centered = src - src.mean(dim=2, keepdim=True)
        src_corr_centered = src_corr - src_corr.mean(dim=2, keepdim=True)
        H = torch.matmul(src_centered, src_corr_centered.transpose(2, 1).contiguous())
        R = []
        for i in range(src.size(0)):
            u, s, v = torch.svd(H[i])  # SYNCSPY-PROBLEM: per-cloud SVD: info checked on the host
            r = torch.matmul(v, u.transpose(1, 0).contiguous())
            r_det = torch.det(r)
            if r_det < 0:  # SYNCSPY-PROBLEM: Tensor.__bool__ per cloud
                u, s, v = torch.svd(H[i])  # SYNCSPY-PROBLEM: the SVD again, its info checked on the host
                v = torch.matmul(v, self.reflect)
                r = torch.matmul(v, u.transpose(1, 0).contiguous())
            R.append(r)
        R = torch.stack(R, dim=0)
        t = torch.matmul(-R, src.mean(dim=2, keepdim=True)) + src_corr.mean(dim=2, keepdim=True)
        return R, t.view(batch_size, 3)


class DCP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb_nn, self.head = DGCNN(), SVDHead()

    def forward(self, src, tgt):
        src_embedding, tgt_embedding = self.emb_nn(src), self.emb_nn(tgt)
        rotation_ab, translation_ab = self.head(src_embedding, tgt_embedding, src, tgt)
        return rotation_ab, translation_ab


def euler_to_matrix(angles):
    """Rz @ Ry @ Rx for a batch of (x, y, z) angles."""
    c, s = torch.cos(angles), torch.sin(angles)
    one, zero = torch.ones_like(c[:, 0]), torch.zeros_like(c[:, 0])
    rx = torch.stack([one, zero, zero, zero, c[:, 0], -s[:, 0], zero, s[:, 0], c[:, 0]], 1).view(-1, 3, 3)
    ry = torch.stack([c[:, 1], zero, s[:, 1], zero, one, zero, -s[:, 1], zero, c[:, 1]], 1).view(-1, 3, 3)
    rz = torch.stack([c[:, 2], -s[:, 2], zero, s[:, 2], c[:, 2], zero, zero, zero, one], 1).view(-1, 3, 3)
    return rz @ ry @ rx


def make_shapes(gen, dev):
    """Three random ellipsoid blobs a shape, 256 surface points, centred."""
    blob = torch.randint(0, 3, (SHAPES, POINTS), device=dev, generator=gen)
    axes = 0.15 + 0.35 * torch.rand(SHAPES, 3, 3, device=dev, generator=gen)
    centres = torch.rand(SHAPES, 3, 3, device=dev, generator=gen) - 0.5
    d = F.normalize(torch.randn(SHAPES, POINTS, 3, device=dev, generator=gen), dim=2)
    pts = d * axes.gather(1, blob[..., None].expand(-1, -1, 3)) + centres.gather(1, blob[..., None].expand(-1, -1, 3))
    return (pts - pts.mean(dim=1, keepdim=True)).transpose(1, 2).contiguous()


def sample_pairs(shapes, gen):
    dev = shapes.device
    src = shapes[torch.randint(0, SHAPES, (BATCH,), device=dev, generator=gen)]
    rotation_ab = euler_to_matrix((torch.rand(BATCH, 3, device=dev, generator=gen) * 2 - 1) * MAX_ANGLE)
    translation_ab = (torch.rand(BATCH, 3, device=dev, generator=gen) * 2 - 1) * MAX_T
    tgt = torch.matmul(rotation_ab, src) + translation_ab[:, :, None]
    perm = torch.rand(BATCH, POINTS, device=dev, generator=gen).argsort(dim=1)
    tgt = tgt.gather(2, perm[:, None, :].expand(-1, 3, -1))
    return src, tgt, rotation_ab, translation_ab


def main():
    if not torch.cuda.is_available():
        print("t166_pointcloud_dcp_svd_head_per_sample: no CUDA device, result=SKIP")
        return 1
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(166)
    shapes = make_shapes(gen, dev)  # SYNCSPY-CLEAN: setup, the shapes generated on the GPU once
    net = DCP().to(dev)  # SYNCSPY-CLEAN: setup upload
    identity = torch.eye(3, device=dev).unsqueeze(0).repeat(BATCH, 1, 1)  # SYNCSPY-CLEAN: setup allocation
    opt = torch.optim.Adam(net.parameters(), lr=LR, weight_decay=1e-4)
    losses = []

    net.train()
    for step in range(STEPS):
        src, target, rotation_ab, translation_ab = sample_pairs(shapes, gen)
        opt.zero_grad()
        rotation_ab_pred, translation_ab_pred = net(src, target)  # SYNCSPY-CLEAN: allocator growth in the first steps
        loss = F.mse_loss(torch.matmul(rotation_ab_pred.transpose(2, 1), rotation_ab), identity) \
            + F.mse_loss(translation_ab_pred, translation_ab)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
        losses.append(loss.detach())

    hist = torch.stack(losses).cpu()  # SYNCSPY-CLEAN: final read
    with torch.no_grad():
        src, _, rotation_ab, translation_ab = sample_pairs(shapes, gen)
        exact = torch.matmul(rotation_ab, src) + translation_ab[:, :, None]
        r_hat, t_hat = net.head.solve(src, exact)
        r_err = (r_hat - rotation_ab).abs().max().item()  # SYNCSPY-CLEAN: final read, for the check
        t_err = (t_hat - translation_ab).abs().max().item()  # SYNCSPY-CLEAN: final read, for the check
    ok = (bool(torch.isfinite(hist).all()) and r_err < 1e-3 and t_err < 1e-3
          and float(hist[-8:].mean()) < 0.9 * float(hist[:8].mean()))
    print("t166_pointcloud_dcp_svd_head_per_sample: steps=%d batch=%d points=%d k=%d "
          "result=%s" % (STEPS, BATCH, POINTS, K, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
