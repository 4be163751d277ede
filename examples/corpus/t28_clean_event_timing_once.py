#!/usr/bin/env python3
"""examples/corpus/t28_clean_event_timing_once.py: corpus workload (PyTorch), CLEAN. What t17
and t22 do wrong, done right: per-step GPU times are taken with a pair of CUDA events per step,
created before the loop and only recorded inside it; the host waits once, after the loop, and
then reads every elapsed_time. The gradient norm returned by clip_grad_norm_ is stored in a GPU
tensor and the number of clipped steps is counted on the GPU; the loss is summed on the GPU.
(The measured times are not printed: the output must not vary between runs.)
"""
import os
import sys

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402

STEPS, BATCH, CHUNKS, MAX_NORM = 60, 512, 6, 0.3


def main():
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = torch.device("cuda")
    xs = torch.randn(CHUNKS, BATCH, 512, device=dev)  # SYNCSPY-CLEAN: setup allocation
    teacher = torch.randn(512, 32, device=dev) / 512 ** 0.5  # SYNCSPY-CLEAN: setup allocation
    ys = torch.relu(xs @ teacher)  # SYNCSPY-CLEAN: setup allocation
    model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 32)).to(dev)  # SYNCSPY-CLEAN: setup upload
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(STEPS)]
    norms = torch.zeros(STEPS, device=dev)  # SYNCSPY-CLEAN: setup allocation
    clipped = torch.zeros((), dtype=torch.long, device=dev)  # SYNCSPY-CLEAN: setup allocation
    loss_sum = torch.zeros((), device=dev)  # SYNCSPY-CLEAN: setup allocation
    torch.cuda.synchronize()  # SYNCSPY-CLEAN: setup done before the timed loop, once

    for step in range(STEPS):
        start, end = events[step]
        xb, yb = xs[step % CHUNKS], ys[step % CHUNKS]
        start.record()
        loss = torch.nn.functional.mse_loss(model(xb), yb)  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.zero_grad(set_to_none=True)
        loss.backward()  # SYNCSPY-CLEAN: allocator growth in the first steps
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), MAX_NORM)  # SYNCSPY-CLEAN: allocator growth in the first steps
        opt.step()  # SYNCSPY-CLEAN: momentum buffers allocated on the first step
        end.record()
        norms[step] = norm
        clipped += (norm > MAX_NORM).long()
        loss_sum += loss.detach()

    torch.cuda.synchronize()  # SYNCSPY-CLEAN: one wait, after the loop
    step_ms = [s.elapsed_time(e) for s, e in events]
    assert len(step_ms) == STEPS and all(t >= 0 for t in step_ms)
    stats = torch.stack([loss_sum / STEPS, norms.max(), clipped.float()]).cpu()  # SYNCSPY-CLEAN: final read, once
    print("t28_clean_event_timing_once: steps=%d timed=%d mean_loss=%.4f max_norm=%.3f clipped=%d result=OK" % (STEPS, len(step_ms), float(stats[0]), float(stats[1]), int(stats[2])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
