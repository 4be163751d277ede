#!/usr/bin/env python3
"""examples/corpus/t162_clean_flexmatch_device_class_counts.py: corpus workload (PyTorch),
CLEAN. The FlexMatch training of t157 (10 classes of 16 x 16 noisy pattern images, 400
labelled and 20,000 unlabelled images generated on the GPU, a small CNN on 64 labelled images
and a weak and a strong view of 448 unlabelled ones per step, hard pseudo-labels, SGD with
Nesterov momentum) with the FlexMatch thresholding hook kept on the device (the fix of t157):
`selected_label` and `classwise_acc` are created on the GPU once; `masking()` writes the
batch's entries with `selected_label[idx_ulb] = torch.where(select, max_idx,
selected_label[idx_ulb])` (an `index_put_` at indices the host never needs to count, no
boolean mask, no `nonzero`), and `update()` counts the classes with `scatter_add_` into an
11-slot table (slot 0 for the unselected -1) and sets `classwise_acc` with `torch.where(top <
ulb_dest_len, counts[1:] / top, classwise_acc)` instead of the host's `if` (the counts'
maximum `top` includes the unselected, as `thresh_warmup=True` does). Nothing in the step
reads the GPU except the loss log every 10 steps (t157 copied the 20,000-entry table to the
host for a `Counter`, ran three `nonzero` calls and ten blocking scalar uploads every step).
Clean: all of it; the marked lines are setup (data, the hook's tables and the model on the
GPU), allocator growth in the first steps (forward, backward, SGD), the loss log read every 10
steps (the trainer's logging interval), test accuracy once per epoch outside the step loop, the
final reads; after the loop the device `classwise_acc` is checked against the `Counter`
formula of t157 applied on the CPU to the final table.
Per step on an H100 (estimated from the sizes, fp32 without TF32): a three-convolution CNN on
960 16 x 16 images, forward and backward, about 1-2 ms.
"""
import math
import os
import sys
from collections import Counter

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

CLASSES, SIZE, LB_PER_CLASS, ULB, TEST, BATCH_LB, UART = 10, 16, 40, 20000, 2000, 64, 7
EPOCHS, STEPS_PER_EPOCH, LOG_EVERY, P_CUTOFF, LAMBDA_U, LR = 2, 30, 10, 0.95, 1.0, 0.03


class FlexMatchThresholdingHook:
    """Adaptive thresholding of FlexMatch (thresh_warmup=True), on the device."""

    def __init__(self, ulb_dest_len, num_classes, device):
        self.ulb_dest_len = ulb_dest_len
        self.num_classes = num_classes
        self.selected_label = torch.full((self.ulb_dest_len,), -1, dtype=torch.long, device=device)  # SYNCSPY-CLEAN: setup
        self.classwise_acc = torch.zeros((self.num_classes,), device=device)
        self.ones = torch.ones((self.ulb_dest_len,), dtype=torch.long, device=device)  # SYNCSPY-CLEAN: setup allocation
        self.updates = 0

    @torch.no_grad()
    def update(self):
        counts = torch.zeros(self.num_classes + 1, dtype=torch.long, device=self.ones.device)
        counts.scatter_add_(0, self.selected_label + 1, self.ones)  # slot 0: not selected yet (-1)
        top = counts.max()
        self.classwise_acc = torch.where(top < self.ulb_dest_len, counts[1:].float() / top.float(), self.classwise_acc)
        self.updates += 1

    @torch.no_grad()
    def masking(self, p_cutoff, logits_x_ulb, idx_ulb):
        probs_x_ulb = torch.softmax(logits_x_ulb.detach(), dim=-1)
        max_probs, max_idx = torch.max(probs_x_ulb, dim=-1)
        mask = max_probs.ge(p_cutoff * (self.classwise_acc[max_idx] / (2. - self.classwise_acc[max_idx])))  # convex
        select = max_probs.ge(p_cutoff)
        mask = mask.to(max_probs.dtype)
        self.selected_label[idx_ulb] = torch.where(select, max_idx, self.selected_label[idx_ulb])
        self.update()
        return mask


class SmallCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        chans = (1, 32, 64, 128)
        self.convs = torch.nn.ModuleList(torch.nn.Conv2d(chans[i], chans[i + 1], 3, 1 if i == 0 else 2, 1) for i in range(3))
        self.bns = torch.nn.ModuleList(torch.nn.BatchNorm2d(c) for c in chans[1:])
        self.fc = torch.nn.Linear(128, CLASSES)

    def forward(self, x):
        for conv, bn in zip(self.convs, self.bns):
            x = F.relu(bn(conv(x)))
        return self.fc(x.mean((2, 3)))


def make_data(gen, dev):
    """Class templates (smooth random patterns), samples with random gain and strong noise."""
    coarse = torch.rand(CLASSES, 1, 4, 4, device=dev, generator=gen)
    templates = F.interpolate(coarse, size=(SIZE, SIZE), mode="bilinear", align_corners=False)
    templates = (templates - templates.mean((2, 3), keepdim=True)) / templates.std((2, 3), keepdim=True)

    def draw(y):
        gain = 0.7 + 0.6 * torch.rand(y.numel(), 1, 1, 1, device=dev, generator=gen)
        return templates[y] * gain + 1.2 * torch.randn(y.numel(), 1, SIZE, SIZE, device=dev, generator=gen)

    y_lb = torch.arange(CLASSES, device=dev).repeat_interleave(LB_PER_CLASS)
    y_ulb = torch.randint(0, CLASSES, (ULB,), device=dev, generator=gen)
    y_test = torch.randint(0, CLASSES, (TEST,), device=dev, generator=gen)
    return draw(y_lb), y_lb, draw(y_ulb), y_ulb, draw(y_test), y_test


def translate(x, max_shift, gen):
    b = x.shape[0]
    shift = (torch.rand(b, 2, 1, device=x.device, generator=gen) * 2 - 1) * (2.0 * max_shift / SIZE)
    theta = torch.cat([torch.eye(2, device=x.device).expand(b, 2, 2), shift], 2)
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    return F.grid_sample(x, grid, mode="bilinear", padding_mode="reflection", align_corners=False)


def strong_augment(x, gen, coords):
    x = translate(x, 3, gen)
    c = torch.rand(x.shape[0], 2, 1, device=x.device, generator=gen) * SIZE
    hole = ((coords[0] - c[:, :1]).abs() < 4) & ((coords[1] - c[:, 1:]).abs() < 4)
    x = x.masked_fill(hole[:, None], 0.0)
    return x + 0.5 * torch.randn(x.shape, device=x.device, generator=gen)


def main():
    if not torch.cuda.is_available():
        print("t162_clean_flexmatch_device_class_counts: no CUDA device, result=SKIP")
        return 1
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(157)
    x_lb, y_lb, x_ulb, _, x_test, y_test = make_data(gen, dev)  # SYNCSPY-CLEAN: setup, data generated on the GPU
    pix = torch.arange(SIZE, device=dev, dtype=torch.float32) + 0.5
    coords = (pix[None, None, :], pix[None, :, None])
    model = SmallCNN().to(dev)  # SYNCSPY-CLEAN: setup upload
    optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=0.9, nesterov=True, weight_decay=5e-4)
    hook = FlexMatchThresholdingHook(ULB, CLASSES, dev)
    log_acc, log_hist, test_acc = torch.zeros(4, device=dev), [], []
    n_ulb = BATCH_LB * UART

    for epoch in range(EPOCHS):
        model.train()
        for it in range(STEPS_PER_EPOCH):
            idx_lb = torch.randint(0, x_lb.shape[0], (BATCH_LB,), device=dev, generator=gen)
            idx_ulb = torch.randperm(ULB, device=dev, generator=gen)[:n_ulb]
            x_w = translate(x_ulb[idx_ulb], 1, gen)
            x_s = strong_augment(x_ulb[idx_ulb], gen, coords)
            inputs = torch.cat((translate(x_lb[idx_lb], 1, gen), x_w, x_s))
            logits = model(inputs)  # SYNCSPY-CLEAN: allocator growth in the first steps
            logits_x_lb = logits[:BATCH_LB]
            logits_x_ulb_w, logits_x_ulb_s = logits[BATCH_LB:].chunk(2)
            sup_loss = F.cross_entropy(logits_x_lb, y_lb[idx_lb])
            mask = hook.masking(P_CUTOFF, logits_x_ulb_w, idx_ulb)
            pseudo_label = logits_x_ulb_w.detach().argmax(dim=-1)
            unsup_loss = (F.cross_entropy(logits_x_ulb_s, pseudo_label, reduction="none") * mask).mean()
            total_loss = sup_loss + LAMBDA_U * unsup_loss
            optimizer.zero_grad(set_to_none=True)
            total_loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
            optimizer.step()  # SYNCSPY-CLEAN: momentum buffers allocated on the first step
            log_acc += torch.stack([sup_loss.detach(), unsup_loss.detach(), total_loss.detach(), mask.mean()])
            if (it + 1) % LOG_EVERY == 0:
                log_hist.append((log_acc / LOG_EVERY).tolist())  # SYNCSPY-CLEAN: logging, every 10 steps
                log_acc.zero_()
        model.eval()
        with torch.no_grad():
            pred = model(x_test).argmax(1)  # SYNCSPY-CLEAN: evaluation, once per epoch
            test_acc.append(pred.eq(y_test).float().mean().item())  # SYNCSPY-CLEAN: once per epoch

    table = hook.selected_label.cpu()  # SYNCSPY-CLEAN: final read, check
    acc_device = hook.classwise_acc.cpu()  # SYNCSPY-CLEAN: final read, check
    counts = Counter(table.tolist())
    top = max(counts.values())
    acc_ref = torch.tensor([counts[i] / top for i in range(CLASSES)])
    selected = int((table >= 0).sum())
    ok = (all(math.isfinite(v) for row in log_hist for v in row) and len(log_hist) == EPOCHS * STEPS_PER_EPOCH // LOG_EVERY
          and test_acc[-1] > 0.6 and selected > 0 and torch.allclose(acc_device, acc_ref, atol=1e-6)
          and hook.updates == EPOCHS * STEPS_PER_EPOCH)
    print("t162_clean_flexmatch_device_class_counts: steps=%d labelled=%d unlabelled=%d batch=%d+2x%d "
          "result=%s" % (hook.updates, x_lb.shape[0], ULB, BATCH_LB, n_ulb, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
