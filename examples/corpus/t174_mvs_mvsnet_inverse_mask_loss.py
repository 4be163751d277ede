#!/usr/bin/env python3
"""examples/corpus/t174_mvs_mvsnet_inverse_mask_loss.py: corpus workload (PyTorch).
Multi-view stereo: MVSNet (Yao et al. 2018) trained as MVSNet_pytorch (xy-guo/MVSNet_pytorch,
the PyTorch port that CasMVSNet, D2HC-RMVSNet, PatchmatchNet and many others start from) writes
it: `FeatureNet` (8 conv layers, 1/4 resolution, 32 channels) on the reference and two source
views, `homo_warping` of each source feature map onto 32 fronto-parallel depth planes, the
variance cost volume, `CostRegNet` (a 3D U-Net), softmax and `depth_regression`, the
photometric confidence, `mvsnet_loss` (smooth L1 over the valid ground-truth pixels), Adam, and
`train_sample` returning `tensor2float(loss)` for the per-iteration print. 120 synthetic scenes
(a textured plane seen by a reference camera and two source cameras with 0.15-0.3 baselines,
64 x 96 images, depth ground truth at 16 x 24 with 10% of it missing), rendered on the GPU; 2
epochs of 30 steps of 4 scenes.
Where the step reads the GPU:
- `homo_warping`: `proj = torch.matmul(src_proj, torch.inverse(ref_proj))` once per source view
  (two a step): `torch.inverse` is `torch.linalg.inv`, whose documentation says "When inputs
  are on a CUDA device, this function synchronizes that device with the CPU" (it checks the
  LAPACK `info` on the host; `torch.linalg.inv_ex` does not): the first waits for the three
  views' feature extraction (expensive), the second for the first view's warping;
- `mvsnet_loss`: `F.smooth_l1_loss(depth_est[mask], depth_gt[mask], ...)`: boolean-mask
  indexing calls `nonzero`, whose output size is read on the host (the torch.nonzero note:
  "causes host-device synchronization"), twice, the first behind the whole forward pass (the 3D
  U-Net, expensive);
- `tensor2float`: `vars.data.item()` of the loss, twice (`train_sample` returns
  `tensor2float(loss), tensor2float(scalar_outputs)`), the first behind the backward pass and the
  Adam update (expensive).
The Performance Tuning Guide lists `.item()`, `nonzero` and data-dependent indexing among the
CPU-GPU synchronizations to avoid; `torch.cuda.set_sync_debug_mode` reports them.
Fix (t178): `torch.linalg.inv_ex` for the projection's inverse, the loss as a masked mean over
the full depth map, the loss summed on the GPU and read every `summary_freq` (20) steps.
Planted: the `torch.inverse` line, the `depth_est[mask]` loss line and `tensor2float`'s `.item()`
line, every step.
Clean: setup (the scenes rendered on the GPU, the camera table uploaded, the model uploaded),
the per-epoch device shuffle, allocator growth in the first steps (the batch gathered on the GPU,
forward, backward, Adam), the final reads.
The script was written without the DataLoader, `tocuda` and the summary writer (the scenes live
on the GPU); `mvsnet_loss` uses `reduction="mean"` for the deprecated `size_average=True`, and
`grid_sample` is given `align_corners=True`, the convention of `homo_warping`'s normalization.
Per step on an H100 (estimated from the sizes, fp32 without TF32): 12 images through FeatureNet,
two warps and a 4 x 32 x 32 x 16 x 24 cost volume through the 3D U-Net, forward and backward,
about 3 ms.
"""
import math
import sys

import torch
import torch.nn.functional as F

IMG_H, IMG_W, N_VIEWS, NDEPTH, DEPTH_MIN, DEPTH_INTERVAL = 64, 96, 3, 32, 1.8, 0.11
FX, FY, CX, CY = 80.0, 80.0, 47.5, 31.5
N_SCENES, BATCH, EPOCHS, LR, SUMMARY_FREQ = 120, 4, 2, 1e-3, 20


class ConvBnReLU(torch.nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, pad=1):
        super().__init__()
        self.conv = torch.nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride, padding=pad, bias=False)
        self.bn = torch.nn.BatchNorm2d(out_channels)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)), inplace=True)


class ConvBnReLU3D(torch.nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size=3, stride=1, pad=1):
        super().__init__()
        self.conv = torch.nn.Conv3d(in_channels, out_channels, kernel_size, stride=stride, padding=pad, bias=False)
        self.bn = torch.nn.BatchNorm3d(out_channels)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)), inplace=True)


class FeatureNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv0, self.conv1 = ConvBnReLU(3, 8, 3, 1, 1), ConvBnReLU(8, 8, 3, 1, 1)
        self.conv2, self.conv3, self.conv4 = ConvBnReLU(8, 16, 5, 2, 2), ConvBnReLU(16, 16, 3, 1, 1), ConvBnReLU(16, 16, 3, 1, 1)
        self.conv5, self.conv6 = ConvBnReLU(16, 32, 5, 2, 2), ConvBnReLU(32, 32, 3, 1, 1)
        self.feature = torch.nn.Conv2d(32, 32, 3, 1, 1)

    def forward(self, x):
        x = self.conv1(self.conv0(x))
        x = self.conv4(self.conv3(self.conv2(x)))
        x = self.feature(self.conv6(self.conv5(x)))
        return x


class CostRegNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv0 = ConvBnReLU3D(32, 8)
        self.conv1, self.conv2 = ConvBnReLU3D(8, 16, stride=2), ConvBnReLU3D(16, 16)
        self.conv3, self.conv4 = ConvBnReLU3D(16, 32, stride=2), ConvBnReLU3D(32, 32)
        self.conv5, self.conv6 = ConvBnReLU3D(32, 64, stride=2), ConvBnReLU3D(64, 64)
        self.conv7 = torch.nn.Sequential(torch.nn.ConvTranspose3d(64, 32, 3, padding=1, output_padding=1, stride=2, bias=False), torch.nn.BatchNorm3d(32), torch.nn.ReLU(inplace=True))
        self.conv9 = torch.nn.Sequential(torch.nn.ConvTranspose3d(32, 16, 3, padding=1, output_padding=1, stride=2, bias=False), torch.nn.BatchNorm3d(16), torch.nn.ReLU(inplace=True))
        self.conv11 = torch.nn.Sequential(torch.nn.ConvTranspose3d(16, 8, 3, padding=1, output_padding=1, stride=2, bias=False), torch.nn.BatchNorm3d(8), torch.nn.ReLU(inplace=True))
        self.prob = torch.nn.Conv3d(8, 1, 3, stride=1, padding=1)

    def forward(self, x):
        conv0 = self.conv0(x)
        conv2 = self.conv2(self.conv1(conv0))
        conv4 = self.conv4(self.conv3(conv2))
        x = self.conv6(self.conv5(conv4))
        x = conv4 + self.conv7(x)
        x = conv2 + self.conv9(x)
        x = conv0 + self.conv11(x)
        x = self.prob(x)
        return x


def homo_warping(src_fea, src_proj, ref_proj, depth_values):
    # src_fea: [B, C, H, W]
    # src_proj: [B, 4, 4]
    # ref_proj: [B, 4, 4]
    # depth_values: [B, Ndepth] o [B, Ndepth, H, W]
    # out: [B, C, Ndepth, H, W]
    batch, channels = src_fea.shape[0], src_fea.shape[1]
    num_depth = depth_values.shape[1]
    height, width = src_fea.shape[2], src_fea.shape[3]

    with torch.no_grad():
        proj = torch.matmul(src_proj, torch.inverse(ref_proj))  # SYNCSPY-PROBLEM: linalg.inv checks info on the host, per source view
        rot = proj[:, :3, :3]  # [B,3,3]
        trans = proj[:, :3, 3:4]  # [B,3,1]

        y, x = torch.meshgrid([torch.arange(0, height, dtype=torch.float32, device=src_fea.device),
                               torch.arange(0, width, dtype=torch.float32, device=src_fea.device)], indexing="ij")
        y, x = y.contiguous(), x.contiguous()
        y, x = y.view(height * width), x.view(height * width)
        xyz = torch.stack((x, y, torch.ones_like(x)))  # [3, H*W]
        xyz = torch.unsqueeze(xyz, 0).repeat(batch, 1, 1)  # [B, 3, H*W]
        rot_xyz = torch.matmul(rot, xyz)  # [B, 3, H*W]
        rot_depth_xyz = rot_xyz.unsqueeze(2).repeat(1, 1, num_depth, 1) * depth_values.view(batch, 1, num_depth, -1)  # [B, 3, Ndepth, H*W]
        proj_xyz = rot_depth_xyz + trans.view(batch, 3, 1, 1)  # [B, 3, Ndepth, H*W]
        proj_xy = proj_xyz[:, :2, :, :] / proj_xyz[:, 2:3, :, :]  # [B, 2, Ndepth, H*W]
        proj_x_normalized = proj_xy[:, 0, :, :] / ((width - 1) / 2) - 1
        proj_y_normalized = proj_xy[:, 1, :, :] / ((height - 1) / 2) - 1
        proj_xy = torch.stack((proj_x_normalized, proj_y_normalized), dim=3)  # [B, Ndepth, H*W, 2]
        grid = proj_xy

    warped_src_fea = F.grid_sample(src_fea, grid.view(batch, num_depth * height, width, 2), mode="bilinear",
                                   padding_mode="zeros", align_corners=True)
    warped_src_fea = warped_src_fea.view(batch, channels, num_depth, height, width)
    return warped_src_fea


def depth_regression(p, depth_values):
    # p: probability volume [B, D, H, W]
    # depth_values: discrete depth values [B, D]
    depth_values = depth_values.view(*depth_values.shape, 1, 1)
    depth = torch.sum(p * depth_values, 1)
    return depth


class MVSNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.feature = FeatureNet()
        self.cost_regularization = CostRegNet()

    def forward(self, imgs, proj_matrices, depth_values):
        imgs = torch.unbind(imgs, 1)
        proj_matrices = torch.unbind(proj_matrices, 1)
        assert len(imgs) == len(proj_matrices), "Different number of images and projection matrices"
        num_depth = depth_values.shape[1]
        num_views = len(imgs)

        # step 1. feature extraction
        # in: images; out: 32-channel feature maps
        features = [self.feature(img) for img in imgs]
        ref_feature, src_features = features[0], features[1:]
        ref_proj, src_projs = proj_matrices[0], proj_matrices[1:]

        # step 2. differentiable homograph, build cost volume
        ref_volume = ref_feature.unsqueeze(2).repeat(1, 1, num_depth, 1, 1)
        volume_sum = ref_volume
        volume_sq_sum = ref_volume ** 2
        del ref_volume
        for src_fea, src_proj in zip(src_features, src_projs):
            # warpped features
            warped_volume = homo_warping(src_fea, src_proj, ref_proj, depth_values)
            volume_sum = volume_sum + warped_volume
            volume_sq_sum = volume_sq_sum + warped_volume ** 2
            del warped_volume
        # aggregate multiple feature volumes by variance
        volume_variance = volume_sq_sum.div_(num_views).sub_(volume_sum.div_(num_views).pow_(2))

        # step 3. cost volume regularization
        cost_reg = self.cost_regularization(volume_variance)
        cost_reg = cost_reg.squeeze(1)
        prob_volume = F.softmax(cost_reg, dim=1)
        depth = depth_regression(prob_volume, depth_values=depth_values)

        with torch.no_grad():
            # photometric confidence
            prob_volume_sum4 = 4 * F.avg_pool3d(F.pad(prob_volume.unsqueeze(1), pad=(0, 0, 0, 0, 1, 2)), (4, 1, 1), stride=1, padding=0).squeeze(1)
            depth_index = depth_regression(prob_volume, depth_values=torch.arange(num_depth, device=prob_volume.device, dtype=torch.float)).long()
            photometric_confidence = torch.gather(prob_volume_sum4, 1, depth_index.unsqueeze(1)).squeeze(1)

        return {"depth": depth, "photometric_confidence": photometric_confidence}


def mvsnet_loss(depth_est, depth_gt, mask):
    mask = mask > 0.5
    return F.smooth_l1_loss(depth_est[mask], depth_gt[mask], reduction="mean")  # SYNCSPY-PROBLEM: two boolean-mask indexings (nonzero), behind the 3D U-Net


def make_recursive_func(func):
    def wrapper(vars):
        if isinstance(vars, list):
            return [wrapper(x) for x in vars]
        elif isinstance(vars, tuple):
            return tuple([wrapper(x) for x in vars])
        elif isinstance(vars, dict):
            return {k: wrapper(v) for k, v in vars.items()}
        else:
            return func(vars)

    return wrapper


@make_recursive_func
def tensor2float(vars):
    if isinstance(vars, float):
        return vars
    elif isinstance(vars, torch.Tensor):
        return vars.data.item()  # SYNCSPY-PROBLEM: .item() of the loss, twice a step, behind the backward pass and Adam
    else:
        raise NotImplementedError("invalid input type {} for tensor2float".format(type(vars)))


def rot_y(angle):
    c, s, z, o = torch.cos(angle), torch.sin(angle), torch.zeros_like(angle), torch.ones_like(angle)
    return torch.stack([torch.stack([c, z, s], -1), torch.stack([z, o, z], -1), torch.stack([-s, z, c], -1)], -2)


def render(K, R, t, normal, dist, freq, phase, height, width):
    """Each camera's view of the textured plane normal . X = dist (X in the reference frame):
    the ray through every pixel centre meets the plane at X; colour c = 0.5 + 0.25 sum_k
    sin(freq[c, k] . X + phase[c, k]). Also the reference camera's depth at every pixel."""
    dev = K.device
    v, u = torch.meshgrid(torch.arange(height, device=dev, dtype=torch.float32), torch.arange(width, device=dev, dtype=torch.float32), indexing="ij")
    pix = torch.stack([u.reshape(-1), v.reshape(-1), torch.ones(height * width, device=dev)])  # [3, P]
    dirs_cam = torch.linalg.solve_triangular(K, pix, upper=True)  # K^-1 pix, [3, P]
    dirs = R.transpose(-1, -2) @ dirs_cam  # [n, V, 3, P] in the reference frame
    centres = -(R.transpose(-1, -2) @ t.unsqueeze(-1)).squeeze(-1)  # [n, V, 3]
    nrm = normal[:, None, :]
    lam = (dist[:, None] - (nrm * centres).sum(-1)).unsqueeze(-1) / (nrm.unsqueeze(-1) * dirs).sum(2)  # [n, V, P]
    X = centres.unsqueeze(-1) + lam.unsqueeze(2) * dirs  # [n, V, 3, P]
    arg = torch.einsum("nckj,nvjp->nvckp", freq, X) + phase[:, None, :, :, None]
    img = 0.5 + 0.25 * torch.sin(arg).sum(3)  # [n, V, 3, P]
    depth_ref = lam[:, 0] * dirs[:, 0, 2]  # z of the reference ray's point
    return img.view(-1, R.shape[1], 3, height, width), depth_ref.view(-1, height, width)


def make_scenes(n, gen, dev):
    K = torch.tensor([[FX, 0.0, CX], [0.0, FY, CY], [0.0, 0.0, 1.0]], device=dev)  # SYNCSPY-CLEAN: setup, the camera table uploaded once
    K4 = K * torch.tensor([[0.25], [0.25], [1.0]], device=dev)  # SYNCSPY-CLEAN: setup, the camera table uploaded once
    normal = torch.cat([(torch.rand(n, 2, device=dev, generator=gen) - 0.5) * 0.6, torch.ones(n, 1, device=dev)], 1)
    normal = normal / normal.norm(dim=1, keepdim=True)
    dist = 2.6 + 0.8 * torch.rand(n, device=dev, generator=gen)
    freq = (torch.rand(n, 3, 2, 3, device=dev, generator=gen) - 0.5) * 16.0
    phase = torch.rand(n, 3, 2, device=dev, generator=gen) * 2 * math.pi
    side = torch.where(torch.rand(n, N_VIEWS - 1, device=dev, generator=gen) < 0.5, -1.0, 1.0)
    baseline = side * (0.15 + 0.15 * torch.rand(n, N_VIEWS - 1, device=dev, generator=gen))
    angle = torch.cat([torch.zeros(n, 1, device=dev), -side * math.radians(2.0) * torch.rand(n, N_VIEWS - 1, device=dev, generator=gen)], 1)
    R = rot_y(angle)  # [n, V, 3, 3]
    centre = torch.zeros(n, N_VIEWS, 3, device=dev)
    centre[:, 1:, 0] = baseline
    t = -(R @ centre.unsqueeze(-1)).squeeze(-1)
    imgs, _ = render(K, R, t, normal, dist, freq, phase, IMG_H, IMG_W)
    # projection matrices at the feature resolution (the dataset's intrinsics[:2, :] /= 4)
    proj = torch.zeros(n, N_VIEWS, 4, 4, device=dev)
    proj[:, :, :3, :3] = K4 @ R
    proj[:, :, :3, 3] = (K4 @ t.unsqueeze(-1)).squeeze(-1)
    proj[:, :, 3, 3] = 1.0
    _, depth = render(K4, R[:, :1], t[:, :1], normal, dist, freq, phase, IMG_H // 4, IMG_W // 4)
    depth_values = (DEPTH_MIN + DEPTH_INTERVAL * torch.arange(NDEPTH, device=dev, dtype=torch.float32)).expand(n, NDEPTH).contiguous()
    holes = torch.rand(n, IMG_H // 4, IMG_W // 4, device=dev, generator=gen) < 0.1
    mask = ((depth >= DEPTH_MIN) & (depth < DEPTH_MIN + DEPTH_INTERVAL * (NDEPTH - 1)) & ~holes).float()
    scene = {"imgs": imgs, "proj_matrices": proj, "depth_values": depth_values, "depth": depth, "mask": mask}
    camera = {"K": K, "R": R, "t": t, "normal": normal, "dist": dist, "freq": freq, "phase": phase}
    return scene, camera


def main():
    if not torch.cuda.is_available():
        print("t174_mvs_mvsnet_inverse_mask_loss: no CUDA device, result=SKIP")
        return 1
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(174)
    scenes, camera = make_scenes(N_SCENES, gen, dev)  # SYNCSPY-CLEAN: setup, the scenes rendered on the GPU once
    model = MVSNet().to(dev)  # SYNCSPY-CLEAN: setup upload
    model_loss = mvsnet_loss
    optimizer = torch.optim.Adam(model.parameters(), lr=LR, betas=(0.9, 0.999), weight_decay=0.0)
    steps_per_epoch = N_SCENES // BATCH

    def train_sample(sample, detailed_summary=False):
        model.train()
        optimizer.zero_grad()
        depth_gt = sample["depth"]
        mask = sample["mask"]
        outputs = model(sample["imgs"], sample["proj_matrices"], sample["depth_values"])  # SYNCSPY-CLEAN: allocator growth in the first steps
        depth_est = outputs["depth"]
        loss = model_loss(depth_est, depth_gt, mask)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        optimizer.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
        scalar_outputs = {"loss": loss}
        image_outputs = {"depth_est": depth_est * mask, "depth_gt": sample["depth"], "ref_img": sample["imgs"][:, 0], "mask": sample["mask"]}
        return tensor2float(loss), tensor2float(scalar_outputs), image_outputs

    log, losses = [], []
    for epoch_idx in range(EPOCHS):
        order = torch.randperm(N_SCENES, device=dev, generator=gen)  # SYNCSPY-CLEAN: once per epoch, a device-side shuffle
        for batch_idx in range(steps_per_epoch):
            idx = order[batch_idx * BATCH:(batch_idx + 1) * BATCH]
            sample = {k: v[idx] for k, v in scenes.items()}  # SYNCSPY-CLEAN: allocator growth in the first steps (the batch gathered on the GPU)
            loss, scalar_outputs, image_outputs = train_sample(sample)
            del scalar_outputs, image_outputs
            losses.append(loss)
            log.append("Epoch {}/{}, Iter {}/{}, train loss = {:.3f}".format(epoch_idx, EPOCHS, batch_idx, steps_per_epoch, loss))

    # Photo-consistency of homo_warping: a source image warped to the reference view at the true
    # depth (full resolution) matches the reference image, and does not at a wrong depth.
    with torch.no_grad():
        n = 8
        K, R, t = camera["K"], camera["R"][:n], camera["t"][:n]
        proj = torch.zeros(n, N_VIEWS, 4, 4, device=dev)
        proj[:, :, :3, :3] = K @ R
        proj[:, :, :3, 3] = (K @ t.unsqueeze(-1)).squeeze(-1)
        proj[:, :, 3, 3] = 1.0
        _, depth_full = render(K, R[:, :1], t[:, :1], camera["normal"][:n], camera["dist"][:n], camera["freq"][:n], camera["phase"][:n], IMG_H, IMG_W)
        ref_img, src_img = scenes["imgs"][:n, 0], scenes["imgs"][:n, 1]
        errs = []
        for scale in (1.0, 1.3):
            warped = homo_warping(src_img, proj[:, 1], proj[:, 0], (depth_full * scale).unsqueeze(1)).squeeze(2)
            inside = (warped != 0).all(1)
            errs.append(((warped - ref_img).abs().mean(1) * inside).sum().item() / max(inside.sum().item(), 1))  # SYNCSPY-CLEAN: final read, for the check
        model.eval()
        depth_est = model(scenes["imgs"][:BATCH], scenes["proj_matrices"][:BATCH], scenes["depth_values"][:BATCH])["depth"]
        depth_err = (depth_est - scenes["depth"][:BATCH]).abs()
        mae = ((depth_err * scenes["mask"][:BATCH]).sum() / scenes["mask"][:BATCH].sum()).item()  # SYNCSPY-CLEAN: final read, for the check
    first, last = sum(losses[:10]) / 10, sum(losses[-10:]) / 10
    ok = (len(losses) == EPOCHS * steps_per_epoch and all(math.isfinite(v) for v in losses) and last < 0.9 * first
          and errs[0] < 0.5 * errs[1] and math.isfinite(mae) and len(log) == len(losses))
    print("t174_mvs_mvsnet_inverse_mask_loss: epochs=%d steps=%d batch=%d views=%d depths=%d "
          "result=%s" % (EPOCHS, len(losses), BATCH, N_VIEWS, NDEPTH, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
