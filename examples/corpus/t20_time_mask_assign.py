#!/usr/bin/env python3
"""examples/corpus/t20_time_mask_assign.py: corpus workload (PyTorch). An utterance classifier
over acoustic frames with SpecAugment-style time masking, written as in several speech models:
masked frames are replaced with a fill vector by boolean-mask assignment,
`xb[mask] = fill`. With a tensor value (not a Python scalar, which torch would turn into a
masked_fill_) this is index_put_ with a boolean index: torch converts the mask to indices with
nonzero, reads the count back to the host and waits for the GPU, every step.
Planted: the boolean-mask assignment of a fill vector every step.
Clean: setup, allocator growth in the first steps, the final read.
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
    feats_all = torch.randn(STEPS, BATCH, FRAMES, FEATS, device=dev)  # SYNCSPY-CLEAN: setup allocation
    labels_all = torch.randint(0, CLASSES, (STEPS, BATCH), device=dev)  # SYNCSPY-CLEAN: setup allocation
    class_means = torch.randn(CLASSES, FEATS, device=dev)  # SYNCSPY-CLEAN: setup allocation
    feats_all += 0.5 * class_means[labels_all].unsqueeze(2)  # SYNCSPY-CLEAN: setup
    frame_idx = torch.arange(FRAMES, device=dev)  # SYNCSPY-CLEAN: setup allocation
    encoder = torch.nn.Sequential(torch.nn.Linear(FEATS, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256), torch.nn.ReLU()).to(dev)  # SYNCSPY-CLEAN: setup upload
    head = torch.nn.Linear(256, CLASSES).to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.Adam(list(encoder.parameters()) + list(head.parameters()), lr=1e-3)
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation

    for step in range(STEPS):
        xb = feats_all[step].clone()  # SYNCSPY-CLEAN: allocator growth in the first steps
        fill = xb.mean(dim=(0, 1))
        starts = torch.randint(0, FRAMES - SPAN, (BATCH, 1), device=dev)
        mask = (frame_idx >= starts) & (frame_idx < starts + SPAN)
        xb[mask] = fill  # SYNCSPY-PROBLEM: boolean-mask assignment of a tensor (index_put_ -> nonzero) every step
        logits = head(encoder(xb).mean(dim=1))  # SYNCSPY-CLEAN: allocator growth in the first steps
        loss = torch.nn.functional.cross_entropy(logits, labels_all[step])
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: Adam state allocated on the first step
        loss_sum += loss.detach()

    with torch.no_grad():
        acc = (head(encoder(feats_all[0]).mean(dim=1)).argmax(dim=1) == labels_all[0]).float().mean().item()  # SYNCSPY-CLEAN: final read
    print("t20_time_mask_assign: steps=%d mean_loss=%.3f acc=%.3f result=OK" % (STEPS, loss_sum.item() / STEPS, acc))  # SYNCSPY-CLEAN: final read
    return 0


if __name__ == "__main__":
    sys.exit(main())
