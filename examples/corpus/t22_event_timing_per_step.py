#!/usr/bin/env python3
"""examples/corpus/t22_event_timing_per_step.py: corpus workload (PyTorch). A training loop
instrumented with CUDA events to log the GPU time of every step: `start.record()` before the
forward pass, `end.record()` after the optimizer step, then `end.synchronize()` so that
`start.elapsed_time(end)` can be read at once. The event wait blocks the host until the step
is done, every step, and the next step's launches no longer overlap the GPU's work.
(The measured times are kept but not printed: the output must not vary between runs.)
Planted: `end.synchronize()` every step.
Clean: setup (one synchronize before the loop), allocator growth in the first steps, the
final read.
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

STEPS, BATCH, CHUNKS = 60, 4096, 6


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    xs = torch.randn(CHUNKS, BATCH, 512, device=dev)  # SYNCSPY-CLEAN: setup allocation
    teacher = torch.randn(512, 32, device=dev) / 512 ** 0.5  # SYNCSPY-CLEAN: setup allocation
    ys = torch.relu(xs @ teacher)  # SYNCSPY-CLEAN: setup allocation
    model = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 32)).to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9)
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()  # SYNCSPY-CLEAN: setup done before the timed loop, once

    step_ms = []
    for step in range(STEPS):
        xb, yb = xs[step % CHUNKS], ys[step % CHUNKS]
        start.record()
        loss = torch.nn.functional.mse_loss(model(xb), yb)  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: momentum buffers allocated on the first step
        end.record()
        end.synchronize()  # SYNCSPY-PROBLEM: event wait every step, to read the step time
        step_ms.append(start.elapsed_time(end))

    assert len(step_ms) == STEPS and all(t >= 0 for t in step_ms)
    with torch.no_grad():
        final = torch.nn.functional.mse_loss(model(xs[0]), ys[0]).item()  # SYNCSPY-CLEAN: final read
    print("t22_event_timing_per_step: steps=%d timed=%d loss=%.4f result=OK" % (STEPS, len(step_ms), final))
    return 0


if __name__ == "__main__":
    sys.exit(main())
