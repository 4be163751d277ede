#!/usr/bin/env python3
"""examples/corpus/t27_clean_masked_ops.py: corpus workload (PyTorch), CLEAN. The utterance
classifier of t20 written without data-dependent shapes: padded frames are zeroed with a
boolean mask and a Python scalar (`xb[~valid] = 0.0`, which torch dispatches to masked_fill_:
no index computation, no copy, no wait), the time mask replaces frames with the three-argument
`torch.where(mask, fill, xb)`, outliers are clipped with `clamp` rather than masked assignment,
and pooling over the valid frames is a masked sum divided by the lengths. Lengths are uploaded
once at setup; the loss is kept on the GPU and read once at the end.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

STEPS, BATCH, FRAMES, FEATS, CLASSES, SPAN = 50, 64, 128, 64, 10, 24


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    gen = torch.Generator().manual_seed(3)
    lens_all = torch.randint(FRAMES // 2, FRAMES + 1, (STEPS, BATCH), generator=gen).to(dev)  # SYNCSPY-CLEAN: setup upload
    labels_all = torch.randint(0, CLASSES, (STEPS, BATCH), generator=gen).to(dev)  # SYNCSPY-CLEAN: setup upload
    feats_all = torch.randn(STEPS, BATCH, FRAMES, FEATS, device=dev)  # SYNCSPY-CLEAN: setup allocation
    class_means = torch.randn(CLASSES, FEATS, device=dev)  # SYNCSPY-CLEAN: setup allocation
    feats_all += 0.5 * class_means[labels_all].unsqueeze(2)  # SYNCSPY-CLEAN: setup
    frame_idx = torch.arange(FRAMES, device=dev)  # SYNCSPY-CLEAN: setup allocation
    encoder = torch.nn.Sequential(torch.nn.Linear(FEATS, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256), torch.nn.ReLU()).to(dev)  # SYNCSPY-CLEAN: setup upload
    head = torch.nn.Linear(256, CLASSES).to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(list(encoder.parameters()) + list(head.parameters()), lr=1e-3)
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation

    for step in range(STEPS):
        lens = lens_all[step]
        valid = frame_idx < lens.unsqueeze(1)
        xb = feats_all[step].clone()  # SYNCSPY-CLEAN: allocator growth in the first steps
        xb[~valid] = 0.0  # boolean mask with a Python scalar: masked_fill_, no sync
        fill = xb.sum(dim=(0, 1)) / valid.sum()
        starts = torch.randint(0, FRAMES - SPAN, (BATCH, 1), device=dev)
        tmask = (frame_idx >= starts) & (frame_idx < starts + SPAN) & valid
        xb = torch.where(tmask.unsqueeze(-1), fill, xb)  # SYNCSPY-CLEAN: allocator growth in the first steps
        xb = xb.clamp(min=-3.0, max=3.0)  # SYNCSPY-CLEAN: allocator growth in the first steps
        h = encoder(xb)  # SYNCSPY-CLEAN: allocator growth in the first steps
        pooled = (h * valid.unsqueeze(-1)).sum(dim=1) / lens.unsqueeze(1)  # SYNCSPY-CLEAN: large temporary, allocator growth in the first steps
        loss = torch.nn.functional.cross_entropy(head(pooled), labels_all[step])
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
        loss_sum += loss.detach()

    print("t27_clean_masked_ops: steps=%d mean_loss=%.4f last=%.4f result=OK" % (STEPS, loss_sum.item() / STEPS, loss.item()))  # SYNCSPY-CLEAN: final read
    return 0


if __name__ == "__main__":
    sys.exit(main())
