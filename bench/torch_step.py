#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/torch_step.py: the step time of the torch reference loop, for overhead comparisons.

The loop of examples/torch/item_loop.py (an MLP step: forward, MSE loss, backward, SGD, and the
loss read back with `.item()` every step), at two sizes: "small" is item_loop's own model
(batch 512, hidden 128: launch-bound, so every microsecond the host spends per call shows) and
"large" (batch 8192, hidden 4096: the GPU's work dominates, as in real training); "mlp8" is
issue 17's launch-bound loop (8 layers 512 wide, batch 256, SGD: about 60 launches and 2 ms a
step on the H200).

  [SIZES="small large"] torch_step.py [--profiler] [STEPS]
  torch_step.py --ab cupti|shim|profiler [BLOCKS] [STEPS]

--ab compares in one process, block by block (BLOCKS blocks of STEPS steps, default 40 x 100,
in the order on, off, off, on, ... so that drift cancels within each pair; each block first
runs AB_SETTLE steps untimed, default 10, which hold the switch itself: a detached CUPTI's
attach; AB_SIZE picks the model, default small): "cupti" runs under
the shim and pauses and resumes its GPU timeline (syncspy_gpu_trace); "profiler" runs without
the shim and wraps every other block in torch.profiler; "shim" runs under the shim and stops
and starts the whole recording (syncspy_stop/syncspy_start: host rows and GPU timeline alike, as
the shim's configuration has them), so its on blocks cost what recording costs a step. One process holds the same memory,
clocks and placement throughout, which separate processes do not (bench/cupti_overhead.sh).
Prints "block MODE on|off STEP_US" per block, "paused MONO_START MONO_END" per paused block
(CLOCK_MONOTONIC ns, the databases' time axis) and "ab MODE MEDIAN_PERCENT" at the end: the
median over pairs of on/off - 1, "ab_total MODE PERCENT" the mean on block against the mean
off block, and "cpu MODE THREAD ON_US OFF_US" per thread: its CPU time per timed step in the on
and the off blocks (thread_cpu_ns: "main", or the thread's name). AB_WRITER_NICE=N sets
syncspy's writer thread to nice N once it runs (what its priority costs the program).

Prints "step_us SIZE MEAN" per size: the mean step time over STEPS steps (default 300) after
50 steps of warm-up. --profiler wraps the timed steps in torch.profiler.profile with CPU and
CUDA activities, the overhead syncspy's CUPTI mode is compared with (bench/cupti_overhead.sh).
"""
import sys
import time

import torch
import torch.nn.functional as F

# batch, input, hidden, output width, hidden layers
SIZES = {"small": (512, 64, 128, 8, 1), "large": (8192, 1024, 4096, 1024, 1),
         "mlp8": (256, 512, 512, 512, 7)}


def make_step(size):
    """The reference loop's step at SIZE: forward, MSE loss, backward, SGD, `.item()`."""
    batch, d_in, hidden, d_out, layers = SIZES[size]
    torch.manual_seed(0)
    x = torch.randn(batch, d_in, device="cuda")
    y = torch.randn(batch, d_out, device="cuda")
    stack = [torch.nn.Linear(d_in, hidden), torch.nn.ReLU()]
    for _ in range(layers - 1):
        stack += [torch.nn.Linear(hidden, hidden), torch.nn.ReLU()]
    model = torch.nn.Sequential(*stack, torch.nn.Linear(hidden, d_out)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    return step


def run(size, steps, profile):
    step = make_step(size)

    for _ in range(50):
        step()
    torch.cuda.synchronize()
    if profile:
        from torch.profiler import ProfilerActivity, profile as torch_profile
        context = torch_profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
    else:
        import contextlib
        context = contextlib.nullcontext()
    with context:
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        elapsed = time.perf_counter() - t0
    print("step_us %s %.1f" % (size, elapsed / steps * 1e6), flush=True)


def thread_cpu_ns():
    """{label: ns on a CPU} of this process's threads (/proc/self/task/*/schedstat, whose first
    field is the thread's time on a CPU in ns): "main" for the thread running this script, the
    thread's name (comm) for the others, so that syncspy's writer (syncspy-writer), torch's
    autograd threads and CUPTI's show apart. {} where the kernel keeps no schedstat."""
    import os
    import threading
    main = threading.get_native_id()
    cpu = {}
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return cpu
    for tid in tids:
        try:
            with open("/proc/self/task/%s/schedstat" % tid) as f:
                ns = int(f.read().split()[0])
            with open("/proc/self/task/%s/comm" % tid) as f:
                name = f.read().strip()
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended meanwhile
        label = "main" if int(tid) == main else name
        cpu[label] = cpu.get(label, 0) + ns
    return cpu


def set_writer_nice(nice):
    """AB_WRITER_NICE=N: the writer thread (syncspy-writer) set to nice N from the program, to
    measure what its raised priority (interpose/writer.c WRITER_NICE) costs the program's
    threads on pinned cores. Returns how many threads were set."""
    import os
    done = 0
    for tid in os.listdir("/proc/self/task"):
        try:
            with open("/proc/self/task/%s/comm" % tid) as f:
                if f.read().strip() != "syncspy-writer":
                    continue
            os.setpriority(os.PRIO_PROCESS, int(tid), nice)
            done += 1
        except OSError:
            pass
    return done


def ab(mode, blocks, steps):
    import ctypes
    import os
    import statistics
    step = make_step(os.environ.get("AB_SIZE", "small"))
    settle = int(os.environ.get("AB_SETTLE", "10"))
    if os.environ.get("AB_WRITER_NICE"):
        step()  # the shim starts recording, and its writer, at the first CUDA call
        print("writer_nice %s set on %d thread(s)" % (
            os.environ["AB_WRITER_NICE"], set_writer_nice(int(os.environ["AB_WRITER_NICE"]))))
    cpu_steps = {True: 0, False: 0}
    cpu_ns = {True: {}, False: {}}

    if mode == "cupti":
        trace = ctypes.CDLL(None).syncspy_gpu_trace
        if trace(1) != 1:
            print("ab: the GPU timeline is not recording (run under the shim with CUPTI)")
            return 2
    elif mode == "shim":
        shim = ctypes.CDLL(None)
        if shim.syncspy_start() != 1:
            print("ab: nothing is recorded (run under the shim)")
            return 2

        def trace(on):
            return shim.syncspy_start() if on else shim.syncspy_stop()
    else:
        from torch.profiler import ProfilerActivity, profile as torch_profile

    def block(on):
        if mode in ("cupti", "shim"):
            trace(1 if on else 0)
            context = None
        else:
            context = torch_profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) \
                if on else None
            if context:
                context.__enter__()
        for _ in range(settle):  # the switch itself (CUPTI's attach, at the next sync point)
            step()
        cpu_before = thread_cpu_ns()
        t0 = time.perf_counter()
        start_ns = time.monotonic_ns()
        for _ in range(steps):
            step()
        end_ns = time.monotonic_ns()
        elapsed = time.perf_counter() - t0
        cpu_after = thread_cpu_ns()
        if record_cpu[0]:
            cpu_steps[on] += steps
            for label, ns in cpu_after.items():
                cpu_ns[on][label] = cpu_ns[on].get(label, 0) + ns - cpu_before.get(label, 0)
        if context:
            context.__exit__(None, None, None)
        if mode in ("cupti", "shim") and not on:
            print("paused %d %d" % (start_ns, end_ns))
        return elapsed / steps * 1e6

    record_cpu = [False]
    for on in (True, False, True):  # warm-up: allocator, kernels, the profiler's first start
        block(on)
    torch.cuda.synchronize()
    record_cpu[0] = True
    times = []
    for i in range(blocks):
        on = (i % 4) in (0, 3)  # on, off, off, on
        us = block(on)
        print("block %s %s %.1f" % (mode, "on" if on else "off", us), flush=True)
        times.append((on, us))
    if mode in ("cupti", "shim"):
        trace(1)
    pairs = []
    for i in range(0, len(times) - 1, 2):
        (on_a, a), (on_b, b) = times[i], times[i + 1]
        on_us, off_us = (a, b) if on_a else (b, a)
        pairs.append(on_us / off_us - 1)
    print("ab %s %.2f" % (mode, statistics.median(pairs) * 100))
    # every block has STEPS steps: the mean of the on blocks' means is the mean on step
    on_mean = statistics.mean(us for on, us in times if on)
    off_mean = statistics.mean(us for on, us in times if not on)
    print("ab_total %s %.2f" % (mode, (on_mean / off_mean - 1) * 100))
    # where the CPU went: each thread's CPU time per timed step, on blocks and off blocks
    for label in sorted(set(cpu_ns[True]) | set(cpu_ns[False])):
        print("cpu %s %s %.1f %.1f" % (mode, label.replace(" ", "_"),
                                       cpu_ns[True].get(label, 0) / 1e3 / max(cpu_steps[True], 1),
                                       cpu_ns[False].get(label, 0) / 1e3 /
                                       max(cpu_steps[False], 1)))
    return 0


def main():
    args = sys.argv[1:]
    if args[:1] == ["--ab"]:
        numbers = [int(a) for a in args[2:4]]
        return ab(args[1], *(numbers + [40, 100][len(numbers):]))
    profile = "--profiler" in args
    args = [a for a in args if a != "--profiler"]
    steps = int(args[0]) if args else 300
    import os
    for size in os.environ.get("SIZES", " ".join(SIZES)).split():
        run(size, steps, profile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
