#!/usr/bin/env python3
"""examples/corpus/t158_raft_sequence_loss_epe_mask_item.py: corpus workload (PyTorch).
Optical flow: a small RAFT (feature and context encoders at 1/4 resolution, an all-pairs
correlation volume with a two-level pyramid, radius-3 lookups, a convolutional GRU update
block iterated 6 times, each prediction upsampled to full resolution) trained on 256 synthetic
64 x 64 image pairs with sparse (KITTI-style) ground truth: a smooth random texture warped by
a smooth random flow, half of the pixels marked valid. The pairs are staged once in pinned
memory and each batch of 8 is uploaded with `non_blocking=True`. The loss is RAFT's
`sequence_loss` as the official training code (and the many optical-flow and stereo code bases
that copied it) writes it: the gamma-weighted L1 over the 6 predictions, then the metrics of
the last one for the logger: `epe = epe.view(-1)[valid.view(-1)]` (boolean-mask indexing: the
torch.nonzero note says it "causes host-device synchronization" on CUDA, the output size is
read on the host) and `.item()` of the mean EPE and of the 1/3/5-pixel fractions. They run
inside the loss, before `loss.backward()`: the boolean index waits for the whole forward pass
(the 6 GRU iterations), the four `.item()` reads follow, and only then does the host queue the
backward pass, so the GPU idles between the passes every step (the Performance Tuning Guide
lists `tensor.item()` and `nonzero` among the CPU-GPU synchronizations to avoid;
`torch.cuda.set_sync_debug_mode("warn")` reports each). The logger only prints every
SUM_FREQ steps (16 here; it keeps its averages for the check instead of printing them).
Fix (not in this set): the metrics as masked sums on the device (`(epe * valid).sum()`,
`((epe < px) & valid).sum()`, the valid count), accumulated on the GPU and read by the logger
every SUM_FREQ steps.
Planted: in `sequence_loss`, the boolean index line (expensive: behind the forward pass) and the
two `.item()` lines (cheap: the mean EPE, and the 1/3/5-pixel fractions in a loop), every step.
Clean: setup (the pairs generated on the CPU and pinned once, the model uploaded), the pinned
`non_blocking` batch uploads, allocator growth in the first steps (forward, backward, AdamW),
the losses read once after the loop.
Per step on an H100 (estimated from the sizes, fp32 without TF32): encoders on 2 x 8 images of
64 x 64, a 256 x 256 correlation per pair, 6 GRU iterations with grid_sample lookups at
16 x 16, forward and backward, about 2-3 ms.
"""
import math
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

PAIRS, H, W, BATCH, EPOCHS, ITERS = 256, 64, 64, 8, 2, 6
GAMMA, MAX_FLOW, LR, WDECAY, CLIP, SUM_FREQ, RADIUS, LEVELS = 0.8, 400, 4e-4, 1e-4, 1.0, 16, 3, 2
HDIM, CDIM, FDIM = 48, 32, 64


class Encoder(torch.nn.Module):
    def __init__(self, out_dim, norm):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 32, 7, stride=2, padding=3)
        self.conv2 = torch.nn.Conv2d(32, 48, 3, stride=2, padding=1)
        self.conv3 = torch.nn.Conv2d(48, out_dim, 3, padding=1)
        self.norm1, self.norm2 = norm(32), norm(48)

    def forward(self, x):
        x = F.relu(self.norm1(self.conv1(x)))
        x = F.relu(self.norm2(self.conv2(x)))
        return self.conv3(x)


class CorrBlock:
    def __init__(self, fmap1, fmap2):
        b, d, h, w = fmap1.shape
        corr = torch.matmul(fmap1.view(b, d, h * w).transpose(1, 2), fmap2.view(b, d, h * w))
        corr = (corr / math.sqrt(d)).reshape(b * h * w, 1, h, w)
        self.pyramid = [corr]
        for _ in range(LEVELS - 1):
            corr = F.avg_pool2d(corr, 2, stride=2)
            self.pyramid.append(corr)
        r = torch.linspace(-RADIUS, RADIUS, 2 * RADIUS + 1, device=fmap1.device)
        self.delta = torch.stack(torch.meshgrid(r, r, indexing="ij"), dim=-1).view(1, 2 * RADIUS + 1, 2 * RADIUS + 1, 2)

    def __call__(self, coords):
        b, _, h, w = coords.shape
        coords = coords.permute(0, 2, 3, 1).reshape(b * h * w, 1, 1, 2)
        out = []
        for i, corr in enumerate(self.pyramid):
            xy = coords / 2 ** i + self.delta.flip(-1)
            hh, ww = corr.shape[-2:]
            grid = torch.cat([2 * xy[..., :1] / (ww - 1) - 1, 2 * xy[..., 1:] / (hh - 1) - 1], dim=-1)
            out.append(F.grid_sample(corr, grid, align_corners=True).view(b, h, w, -1))
        return torch.cat(out, dim=-1).permute(0, 3, 1, 2).contiguous()


class UpdateBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        cor_planes = LEVELS * (2 * RADIUS + 1) ** 2
        self.convc1 = torch.nn.Conv2d(cor_planes, 64, 1)
        self.convf1 = torch.nn.Conv2d(2, 32, 7, padding=3)
        self.convf2 = torch.nn.Conv2d(32, 16, 3, padding=1)
        self.conv = torch.nn.Conv2d(80, 62, 3, padding=1)
        gru_in = HDIM + 64 + CDIM
        self.convz, self.convr, self.convq = (torch.nn.Conv2d(gru_in, HDIM, 3, padding=1) for _ in range(3))
        self.head1, self.head2 = torch.nn.Conv2d(HDIM, 64, 3, padding=1), torch.nn.Conv2d(64, 2, 3, padding=1)

    def forward(self, net, inp, corr, flow):
        cor = F.relu(self.convc1(corr))
        flo = F.relu(self.convf2(F.relu(self.convf1(flow))))
        motion = torch.cat([F.relu(self.conv(torch.cat([cor, flo], dim=1))), flow], dim=1)
        x = torch.cat([inp, motion], dim=1)
        hx = torch.cat([net, x], dim=1)
        z, r = torch.sigmoid(self.convz(hx)), torch.sigmoid(self.convr(hx))
        q = torch.tanh(self.convq(torch.cat([r * net, x], dim=1)))
        net = (1 - z) * net + z * q
        return net, self.head2(F.relu(self.head1(net)))


class RAFT(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fnet = Encoder(FDIM, torch.nn.InstanceNorm2d)
        self.cnet = Encoder(HDIM + CDIM, torch.nn.BatchNorm2d)
        self.update_block = UpdateBlock()

    def forward(self, image1, image2, iters):
        image1, image2 = 2 * (image1 / 255.0) - 1.0, 2 * (image2 / 255.0) - 1.0
        fmap1, fmap2 = self.fnet(torch.cat([image1, image2], dim=0)).chunk(2)
        corr_fn = CorrBlock(fmap1, fmap2)
        net, inp = torch.split(self.cnet(image1), [HDIM, CDIM], dim=1)
        net, inp = torch.tanh(net), torch.relu(inp)
        b, _, h, w = fmap1.shape
        ys, xs = torch.meshgrid(torch.arange(h, device=image1.device), torch.arange(w, device=image1.device), indexing="ij")
        coords0 = torch.stack([xs, ys], dim=0).float()[None].expand(b, 2, h, w)
        coords1 = coords0.clone()
        flow_predictions = []
        for _ in range(iters):
            coords1 = coords1.detach()
            corr = corr_fn(coords1)
            net, delta_flow = self.update_block(net, inp, corr, coords1 - coords0)
            coords1 = coords1 + delta_flow
            flow_predictions.append(4 * F.interpolate(coords1 - coords0, scale_factor=4, mode="bilinear", align_corners=True))
        return flow_predictions


def sequence_loss(flow_preds, flow_gt, valid, gamma=0.8, max_flow=MAX_FLOW):
    """Loss function defined over sequence of flow predictions."""
    n_predictions = len(flow_preds)
    flow_loss = 0.0
    # exclude invalid pixels and extremely large displacements
    mag = torch.sum(flow_gt ** 2, dim=1).sqrt()
    valid = (valid >= 0.5) & (mag < max_flow)
    for i in range(n_predictions):
        i_weight = gamma ** (n_predictions - i - 1)
        i_loss = (flow_preds[i] - flow_gt).abs()
        flow_loss += i_weight * (valid[:, None] * i_loss).mean()
    epe = torch.sum((flow_preds[-1] - flow_gt) ** 2, dim=1).sqrt()
    epe = epe.view(-1)[valid.view(-1)]  # SYNCSPY-PROBLEM: boolean mask: nonzero, behind the forward pass
    metrics = {"epe": epe.mean().item()}  # SYNCSPY-PROBLEM: .item() before the backward pass, every step
    for px in (1, 3, 5):
        metrics["%dpx" % px] = (epe < px).float().mean().item()  # SYNCSPY-PROBLEM: three .item(), every step
    return flow_loss, metrics


class Logger:
    def __init__(self):
        self.total_steps = 0
        self.running_loss = {}
        self.history = []

    def _print_training_status(self):
        self.history.append({k: v / SUM_FREQ for k, v in sorted(self.running_loss.items())})

    def push(self, metrics):
        self.total_steps += 1
        for key in metrics:
            self.running_loss[key] = self.running_loss.get(key, 0.0) + metrics[key]
        if self.total_steps % SUM_FREQ == 0:
            self._print_training_status()
            self.running_loss = {}


def make_pairs(gen):
    """Smooth textures warped by smooth flows; image2(x) = image1(x - flow(x)), 50% valid."""
    def smooth(c, cells, scale):
        return F.interpolate(torch.rand(PAIRS, c, cells, cells, generator=gen) * 2 - 1, size=(H, W),
                             mode="bicubic", align_corners=False) * scale
    texture = 128 + smooth(3, 4, 60) + smooth(3, 8, 40) + smooth(3, 16, 25)
    flow = smooth(2, 3, 5.0) + (torch.rand(PAIRS, 2, 1, 1, generator=gen) * 8 - 4)
    ys, xs = torch.meshgrid(torch.arange(H, dtype=torch.float32), torch.arange(W, dtype=torch.float32), indexing="ij")
    src_x, src_y = xs - flow[:, 0], ys - flow[:, 1]
    grid = torch.stack([2 * src_x / (W - 1) - 1, 2 * src_y / (H - 1) - 1], dim=-1)
    image2 = F.grid_sample(texture, grid, mode="bilinear", padding_mode="reflection", align_corners=True)
    valid = (torch.rand(PAIRS, H, W, generator=gen) < 0.5).float()
    return texture.clamp(0, 255), image2.clamp(0, 255), flow, valid


def main():
    if not torch.cuda.is_available():
        print("t158_raft_sequence_loss_epe_mask_item: no CUDA device, result=SKIP")
        return 1
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    store = [t.pin_memory() for t in make_pairs(torch.Generator().manual_seed(158))]  # SYNCSPY-CLEAN: setup, pinned once
    model = RAFT().to(dev)  # SYNCSPY-CLEAN: setup upload
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WDECAY, eps=1e-8)
    total_steps = EPOCHS * (PAIRS // BATCH)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, LR, total_steps + 100, pct_start=0.05,
                                                    cycle_momentum=False, anneal_strategy="linear")
    logger, losses = Logger(), []
    order = torch.randperm(PAIRS // BATCH, generator=torch.Generator().manual_seed(1)).tolist()

    for epoch in range(EPOCHS):
        for b in order:
            s = slice(b * BATCH, (b + 1) * BATCH)
            optimizer.zero_grad()
            image1, image2, flow, valid = [x[s].to(dev, non_blocking=True) for x in store]  # SYNCSPY-CLEAN: pinned, async
            flow_predictions = model(image1, image2, iters=ITERS)  # SYNCSPY-CLEAN: allocator growth in the first steps
            loss, metrics = sequence_loss(flow_predictions, flow, valid, GAMMA)
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
            optimizer.step()  # SYNCSPY-CLEAN: AdamW state allocated on the first step
            scheduler.step()
            logger.push(metrics)
            losses.append(loss.detach())

    hist = torch.stack(losses).cpu()  # SYNCSPY-CLEAN: final read
    first, last = logger.history[0], logger.history[-1]
    ok = (bool(torch.isfinite(hist).all()) and len(logger.history) == total_steps // SUM_FREQ
          and hist[-8:].mean() < 0.9 * hist[:8].mean() and last["epe"] < first["epe"]
          and all(0.0 <= h[k] <= 1.0 for h in logger.history for k in ("1px", "3px", "5px")))
    print("t158_raft_sequence_loss_epe_mask_item: epochs=%d steps=%d batch=%d size=%dx%d iters=%d "
          "result=%s" % (EPOCHS, logger.total_steps, BATCH, H, W, ITERS, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
