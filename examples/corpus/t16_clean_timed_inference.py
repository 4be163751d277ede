#!/usr/bin/env python3
"""examples/corpus/t16_clean_timed_inference.py: corpus workload (PyTorch), CLEAN. A throughput
benchmark as people write them: a few warm-up iterations, `torch.cuda.synchronize()`, a timed
loop that only queues work (results accumulated on the GPU), one more synchronize to stop the
clock, then a single read of the results. The two synchronizes bracket the loop; they are not
in it. (The time is measured but not printed: the output must not vary between runs.)
"""
import os
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

WARMUP, STEPS, BATCH = 5, 60, 256


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.deterministic = True
    dev = torch.device("cuda")
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(), torch.nn.Linear(64, 10))
    model = net.to(dev).eval()  # SYNCSPY-CLEAN: setup upload
    images = torch.randn(BATCH, 3, 32, 32, device=dev)  # SYNCSPY-CLEAN: setup allocation
    votes = torch.zeros(10, device=dev)  # SYNCSPY-CLEAN: setup allocation
    classes = torch.arange(10, device=dev)  # SYNCSPY-CLEAN: setup allocation

    with torch.inference_mode():
        for _ in range(WARMUP):
            model(images)  # SYNCSPY-CLEAN: warm-up (cuDNN autotune, allocator growth)
        torch.cuda.synchronize()  # SYNCSPY-CLEAN: start the clock, once
        start = time.perf_counter()
        for step in range(STEPS):
            shifted = images.roll(step, dims=3)
            # counted against a class row, not with bincount (which reads the max back to size its output)
            votes += (model(shifted).argmax(dim=1, keepdim=True) == classes).sum(dim=0).float()
        torch.cuda.synchronize()  # SYNCSPY-CLEAN: stop the clock, once
        elapsed = time.perf_counter() - start

    counts = votes.cpu()  # SYNCSPY-CLEAN: final read
    assert elapsed > 0
    print("t16_clean_timed_inference: steps=%d votes=%d top=%d result=OK" % (STEPS, int(counts.sum()), int(counts.argmax())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
