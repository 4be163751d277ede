#!/usr/bin/env python3
"""examples/corpus/t157_flexmatch_counter_tolist_mask_update.py: corpus workload (PyTorch).
Semi-supervised image classification with FlexMatch (curriculum pseudo-labelling): 10 classes
of 16 x 16 noisy pattern images, 40 labelled images per class and 20,000 unlabelled ones, all
generated on the GPU in setup; each step runs a small CNN on 64 labelled images and on a weak
and a strong augmentation of 448 unlabelled ones in one batch (960 images), the supervised
cross-entropy plus the masked consistency loss on hard pseudo-labels, SGD with Nesterov
momentum. The thresholding is the `FlexMatchThresholdingHook` of the popular unified
semi-supervised learning library (and of TorchSSL before it): `masking()` records every
confident prediction in `selected_label`, a per-sample class table as long as the unlabelled
set kept on the GPU, with `if idx_ulb[select == 1].nelement() != 0:` and
`self.selected_label[idx_ulb[select == 1]] = max_idx[select == 1]` (boolean-mask indexing,
three `nonzero` calls whose output size is read on the host: the torch.nonzero note says it
"causes host-device synchronization" on CUDA), then `update()` counts the classes with
`pseudo_counter = Counter(self.selected_label.tolist())` (the whole 20,000-entry table copied
to the host and counted in Python, every step) and writes the per-class learning effect
element by element, `self.classwise_acc[i] = pseudo_counter[i] / max(...)` (a Python float
assigned into a CUDA tensor: a 0-dim CPU tensor copied with a blocking upload,
`memcpy_and_sync`, ten per step). The first `nonzero` waits for the forward pass; the GPU then
idles through the table's copy, the count and the ten uploads before the host queues the loss
and the backward pass (the Performance Tuning Guide lists `.tolist()`-style copies and
`nonzero` among the CPU-GPU synchronizations to avoid; `torch.cuda.set_sync_debug_mode("warn")`
reports each).
Fix (t162): the table updated with `torch.where(select, max_idx, table[idx_ulb])` at the
batch's indices, the class counts by `scatter_add_` on the device and `classwise_acc` from them
with `torch.where` (no branch on the host), nothing read back in the step.
Planted: four lines of the hook (one problem): the `if ... nelement() != 0:` test (expensive,
behind the forward pass), the masked assignment, the `Counter(....tolist())` line and the
element-wise `classwise_acc[i] = ...` assignment, every step.
Clean: setup (the data generated on the GPU, the model uploaded), the hook's two one-time
`.to(device)` moves on the first step (as the library does), allocator growth in the first
steps (forward, backward, SGD), the loss log read every 10 steps (the trainer's logging
interval), test accuracy once per epoch outside the step loop, the final reads and the check.
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
    """Adaptive thresholding of FlexMatch (thresh_warmup=True)."""

    def __init__(self, ulb_dest_len, num_classes):
        self.ulb_dest_len = ulb_dest_len
        self.num_classes = num_classes
        self.selected_label = torch.ones((self.ulb_dest_len,), dtype=torch.long) * -1
        self.classwise_acc = torch.zeros((self.num_classes,))
        self.updates = 0

    @torch.no_grad()
    def update(self):
        pseudo_counter = Counter(self.selected_label.tolist())  # SYNCSPY-PROBLEM: whole table to host, every step
        if max(pseudo_counter.values()) < self.ulb_dest_len:  # not all(5w) -1
            for i in range(self.num_classes):
                self.classwise_acc[i] = pseudo_counter[i] / max(pseudo_counter.values())  # SYNCSPY-PROBLEM: blocking upload
        self.updates += 1

    @torch.no_grad()
    def masking(self, p_cutoff, logits_x_ulb, idx_ulb):
        if not self.selected_label.is_cuda:
            self.selected_label = self.selected_label.to(logits_x_ulb.device)  # SYNCSPY-CLEAN: first step only
        if not self.classwise_acc.is_cuda:
            self.classwise_acc = self.classwise_acc.to(logits_x_ulb.device)  # SYNCSPY-CLEAN: first step only
        probs_x_ulb = torch.softmax(logits_x_ulb.detach(), dim=-1)
        max_probs, max_idx = torch.max(probs_x_ulb, dim=-1)
        mask = max_probs.ge(p_cutoff * (self.classwise_acc[max_idx] / (2. - self.classwise_acc[max_idx])))  # convex
        select = max_probs.ge(p_cutoff)
        mask = mask.to(max_probs.dtype)
        if idx_ulb[select == 1].nelement() != 0:  # SYNCSPY-PROBLEM: boolean mask (nonzero), behind the forward
            self.selected_label[idx_ulb[select == 1]] = max_idx[select == 1]  # SYNCSPY-PROBLEM: two nonzero
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
        print("t157_flexmatch_counter_tolist_mask_update: no CUDA device, result=SKIP")
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
    hook = FlexMatchThresholdingHook(ULB, CLASSES)
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
    print("t157_flexmatch_counter_tolist_mask_update: steps=%d labelled=%d unlabelled=%d batch=%d+2x%d "
          "result=%s" % (hook.updates, x_lb.shape[0], ULB, BATCH_LB, n_ulb, "OK" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
