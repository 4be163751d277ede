#!/usr/bin/env python3
"""examples/corpus/t39_sync_wallclock_step_timer.py: corpus workload (PyTorch). A throughput
benchmark inside a training script for a small convolutional image classifier: every step is
wrapped in `time.perf_counter()` with `torch.cuda.synchronize()` before reading the clock "so
that the time is right", and the per-step times go into a list for a samples/s figure.
`torch.cuda.synchronize()` waits for every stream of the device (cudaDeviceSynchronize), every
step: the host can never queue step k+1 while step k runs, and the GPU idles for the launch
latency of every step (the PyTorch docs' CUDA semantics notes recommend CUDA events for
timing, or a sync once around many steps as t16 does). The throughput is printed rounded away
(only the step count is in the deterministic line).
Planted: the `torch.cuda.synchronize()` inside the step loop, every step.
Clean: setup, allocator growth in the first steps, the final read.
"""
import os
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

STEPS, BATCH, CLASSES, CHUNKS = 60, 128, 10, 4


def main():
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    dev = torch.device("cuda")
    images = torch.randn(CHUNKS, BATCH, 3, 32, 32, device=dev)  # SYNCSPY-CLEAN: setup allocation
    labels = torch.randint(0, CLASSES, (CHUNKS, BATCH), device=dev)  # SYNCSPY-CLEAN: setup allocation
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(), torch.nn.Linear(64 * 8 * 8, CLASSES)).to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
    step_times = []

    for step in range(STEPS):
        t0 = time.perf_counter()
        xb, yb = images[step % CHUNKS], labels[step % CHUNKS]
        loss = torch.nn.functional.cross_entropy(model(xb), yb)  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: momentum buffers allocated on the first step
        loss_sum += loss.detach()
        torch.cuda.synchronize()  # SYNCSPY-PROBLEM: device-wide wait every step, to time it with the host clock
        step_times.append(time.perf_counter() - t0)

    mean = loss_sum.item() / STEPS  # SYNCSPY-CLEAN: final read
    samples_per_s = BATCH * len(step_times) / max(sum(step_times), 1e-9)
    ok = mean > 0.0 and samples_per_s > 0.0
    print("t39_sync_wallclock_step_timer: steps=%d timed=%d result=OK" % (STEPS, len(step_times)))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
