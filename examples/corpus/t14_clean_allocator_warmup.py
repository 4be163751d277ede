#!/usr/bin/env python3
"""examples/corpus/t14_clean_allocator_warmup.py: corpus workload (PyTorch), CLEAN. A sequence
model trained with a length curriculum: the first steps use growing sequence lengths, so the
caching allocator keeps asking the driver for larger blocks (cudaMalloc) during the first
iterations; once the longest length is reached, every step is served from the cache. That
growth is warm-up, not a per-step cost. Losses stay on the GPU; one read at the end.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

STEPS, BATCH, DIM, MAX_LEN = 70, 64, 128, 256


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    # the math attention kernels: deterministic backward, so the printed loss is reproducible
    torch.backends.cuda.enable_flash_sdp(False)
    torch.backends.cuda.enable_mem_efficient_sdp(False)
    dev = torch.device("cuda")
    layer = torch.nn.TransformerEncoderLayer(DIM, 4, dim_feedforward=256, dropout=0.0, batch_first=True).to(dev)  # SYNCSPY-CLEAN: setup upload
    head = torch.nn.Linear(DIM, 1).to(dev)  # SYNCSPY-CLEAN: setup upload
    params = list(layer.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=1e-3)
    data = torch.randn(BATCH, MAX_LEN, DIM, device=dev)  # SYNCSPY-CLEAN: setup allocation
    total = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation

    for step in range(STEPS):
        length = min(MAX_LEN, 32 * (step + 1))  # curriculum: 32, 64, ... 256, then 256
        xb = data[:, :length]
        pred = head(layer(xb)).mean(dim=1)  # SYNCSPY-CLEAN: allocator growth while the length grows
        loss = (pred - xb[:, 0, :1]).pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth while the length grows
        opt.step()  # SYNCSPY-CLEAN: AdamW state on the first step
        total += loss.detach()

    print("t14_clean_allocator_warmup: steps=%d mean_loss=%.3f result=OK" % (STEPS, total.item() / STEPS))  # SYNCSPY-CLEAN: final read
    return 0


if __name__ == "__main__":
    sys.exit(main())
