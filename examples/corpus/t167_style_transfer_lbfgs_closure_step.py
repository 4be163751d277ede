#!/usr/bin/env python3
"""examples/corpus/t167_style_transfer_lbfgs_closure_step.py: corpus workload (PyTorch).
Neural style transfer as the PyTorch tutorial "Neural Transfer Using PyTorch" writes it (Gatys
et al.): content and style loss modules inserted after the convolutions of a VGG-style feature
network (five 3x3 convolutions with two poolings; randomly initialized and frozen here, the
tutorial loads VGG19), the input image optimized with `optim.LBFGS([input_img])` (lr 1,
`max_iter` 20 per `step`) and the tutorial's `run_style_transfer` loop: `while run[0] <=
num_steps: ... optimizer.step(closure)`, the closure clamping the image, running the network,
summing the losses and calling `backward()`, 80 evaluations on a 256 x 256 content image
(generated on the GPU) and a striped style image. The optimizer's step runs on the host and
reads the GPU at every turn (torch/optim/lbfgs.py): `loss = float(closure())` after every
evaluation, `opt_cond = flat_grad.abs().max() <= tolerance_grad` and `if opt_cond:`, `if ys >
1e-10:` on the curvature pair, the two-loop recursion's `q.add_(old_dirs[i], alpha=-al[i])` and
`r.add_(old_stps[i], alpha=al[i] - be_i)` with 0-dim CUDA tensors as the Scalar `alpha` (an
`.item()` each, two per stored curvature pair, the pairs kept across calls), `t = min(1., 1. /
flat_grad.abs().sum()) * lr` on the first iteration, `if gtd > -tolerance_change:` and `if
d.mul(t).abs().max() <= tolerance_change:`: each `float()` or `Tensor.__bool__` of a CUDA tensor
is an `.item()`, the first of every iteration behind the closure's forward and backward pass
(the Performance Tuning Guide lists `.item()` and Python control flow on CUDA results among the
CPU-GPU synchronizations to avoid; `torch.cuda.set_sync_debug_mode` reports them).
Fix (not in this set): a first-order optimizer on the image (Adam, as many style transfer code
bases use), whose step reads nothing back.
Planted: `optimizer.step(closure)` in `run_style_transfer` (one line: every L-BFGS iteration's
reads, 80 evaluations in 4 calls).
Clean: setup (the images generated on the GPU, the network built and moved once, the targets
computed), allocator growth in the first evaluations (the forward and backward lines), the
tutorial's print every 50 evaluations, the final reads.
Per evaluation on an H100 (estimated from the sizes, fp32 without TF32): about 1.9 GFLOP forward
on one 256 x 256 image and twice that backward, the Gram matrices, about 1 ms.
"""
import sys

import torch
import torch.nn.functional as F

IMSIZE, NUM_STEPS, STYLE_WEIGHT, CONTENT_WEIGHT = 256, 79, 1000000, 1
CONTENT_LAYERS, STYLE_LAYERS = ["conv_4"], ["conv_1", "conv_2", "conv_3", "conv_4", "conv_5"]


class ContentLoss(torch.nn.Module):
    def __init__(self, target):
        super().__init__()
        self.target = target.detach()

    def forward(self, input):
        self.loss = F.mse_loss(input, self.target)
        return input


def gram_matrix(input):
    a, b, c, d = input.size()
    features = input.view(a * b, c * d)
    G = torch.mm(features, features.t())
    return G.div(a * b * c * d)


class StyleLoss(torch.nn.Module):
    def __init__(self, target_feature):
        super().__init__()
        self.target = gram_matrix(target_feature).detach()

    def forward(self, input):
        self.loss = F.mse_loss(gram_matrix(input), self.target)
        return input


class Normalization(torch.nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        self.mean, self.std = mean.clone().view(-1, 1, 1), std.clone().view(-1, 1, 1)

    def forward(self, img):
        return (img - self.mean) / self.std


def make_cnn():
    """A frozen VGG-style feature stack (conv_1 .. conv_5), randomly initialized."""
    layers, c_in = [], 3
    for c_out, pool in ((32, False), (32, True), (64, False), (64, True), (128, False)):
        conv = torch.nn.Conv2d(c_in, c_out, 3, padding=1)
        torch.nn.init.kaiming_normal_(conv.weight, nonlinearity="relu")
        layers += [conv, torch.nn.ReLU(inplace=True)] + ([torch.nn.MaxPool2d(2, 2)] if pool else [])
        c_in = c_out
    return torch.nn.Sequential(*layers).eval()


def get_style_model_and_losses(cnn, normalization_mean, normalization_std, style_img, content_img):
    normalization = Normalization(normalization_mean, normalization_std)
    content_losses, style_losses = [], []
    model = torch.nn.Sequential(normalization)
    i = 0
    for layer in cnn.children():
        if isinstance(layer, torch.nn.Conv2d):
            i += 1
            name = "conv_{}".format(i)
        elif isinstance(layer, torch.nn.ReLU):
            name = "relu_{}".format(i)
            layer = torch.nn.ReLU(inplace=False)
        else:
            name = "pool_{}".format(i)
        model.add_module(name, layer)
        if name in CONTENT_LAYERS:
            content_loss = ContentLoss(model(content_img).detach())
            model.add_module("content_loss_{}".format(i), content_loss)
            content_losses.append(content_loss)
        if name in STYLE_LAYERS:
            style_loss = StyleLoss(model(style_img).detach())
            model.add_module("style_loss_{}".format(i), style_loss)
            style_losses.append(style_loss)
    return model, style_losses, content_losses


def run_style_transfer(cnn, normalization_mean, normalization_std, content_img, style_img, input_img, log, history):
    model, style_losses, content_losses = get_style_model_and_losses(cnn, normalization_mean, normalization_std, style_img, content_img)  # SYNCSPY-CLEAN: setup, the targets computed once
    input_img.requires_grad_(True)
    model.eval()
    model.requires_grad_(False)
    optimizer = torch.optim.LBFGS([input_img])
    run = [0]
    while run[0] <= NUM_STEPS:
        def closure():
            with torch.no_grad():
                input_img.clamp_(0, 1)
            optimizer.zero_grad()
            model(input_img)  # SYNCSPY-CLEAN: allocator growth in the first evaluations
            style_score = 0
            content_score = 0
            for sl in style_losses:
                style_score += sl.loss
            for cl in content_losses:
                content_score += cl.loss
            style_score *= STYLE_WEIGHT
            content_score *= CONTENT_WEIGHT
            loss = style_score + content_score
            loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first evaluations
            run[0] += 1
            history.append(loss.detach())
            if run[0] % 50 == 0:
                log.append("run {}: Style Loss : {:4f} Content Loss: {:4f}".format(run, style_score.item(), content_score.item()))  # SYNCSPY-CLEAN: the tutorial's print, every 50 evaluations
            return style_score + content_score
        optimizer.step(closure)  # SYNCSPY-PROBLEM: L-BFGS reads the GPU at every iteration (float(), if, alpha=tensor)
    with torch.no_grad():
        input_img.clamp_(0, 1)
    return input_img, run[0]


def make_images(gen, dev):
    ys = torch.linspace(0, 1, IMSIZE, device=dev)[:, None]
    xs = torch.linspace(0, 1, IMSIZE, device=dev)[None, :]
    disk = (((xs - 0.5) ** 2 + (ys - 0.45) ** 2) < 0.09).float()
    content = torch.stack([0.2 + 0.6 * xs.expand(IMSIZE, IMSIZE), 0.3 + 0.5 * disk, 0.8 - 0.6 * ys.expand(IMSIZE, IMSIZE)])
    stripes = 0.5 + 0.5 * torch.sin(40.0 * (xs + 0.6 * ys))
    style = torch.stack([stripes, 1.0 - stripes, 0.5 * stripes + 0.25]) + 0.05 * torch.rand(3, IMSIZE, IMSIZE, device=dev, generator=gen)
    return content[None].clamp(0, 1), style[None].clamp(0, 1)


def main():
    if not torch.cuda.is_available():
        print("t167_style_transfer_lbfgs_closure_step: no CUDA device, result=SKIP")
        return 1
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(167)
    content_img, style_img = make_images(gen, dev)  # SYNCSPY-CLEAN: setup, the images generated on the GPU once
    cnn = make_cnn().to(dev)  # SYNCSPY-CLEAN: setup upload
    cnn_normalization_mean = torch.tensor([0.485, 0.456, 0.406], device=dev)  # SYNCSPY-CLEAN: setup upload
    cnn_normalization_std = torch.tensor([0.229, 0.224, 0.225], device=dev)  # SYNCSPY-CLEAN: setup upload
    input_img = content_img.clone()
    log, history = [], []
    output, evaluations = run_style_transfer(cnn, cnn_normalization_mean, cnn_normalization_std, content_img, style_img, input_img, log, history)

    hist = torch.stack(history).cpu()  # SYNCSPY-CLEAN: final read
    lo, hi = output.min().item(), output.max().item()  # SYNCSPY-CLEAN: final read
    ok = (bool(torch.isfinite(hist).all()) and len(hist) == evaluations and evaluations > NUM_STEPS
          and float(hist[-5:].min()) < 0.2 * float(hist[0]) and 0.0 <= lo <= hi <= 1.0 and len(log) == evaluations // 50)
    print("t167_style_transfer_lbfgs_closure_step: size=%d evaluations=%d logs=%d "
          "result=%s" % (IMSIZE, evaluations, len(log), "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
