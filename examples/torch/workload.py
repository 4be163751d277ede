"""examples/torch/workload.py: what the numbered PyTorch reference workloads (NN_*.py) share.

Each workload runs as `python3 NN_name.py bad|fixed [--sync-debug]`:
  bad / fixed   the pattern a syncspy rule flags, and its repair; they compute the same thing.
  --sync-debug  also turn on torch.cuda.set_sync_debug_mode("warn") around the step loop and
                print on stderr how many warnings it gave ("sync-debug: warnings=N"), so that the
                GPU suite can put torch's own detector beside syncspy's findings. Run it in a
                separate process: the mode changes what torch checks.
Determinism (output identical with and without the shim): fixed seeds, a fixed cuBLAS
workspace, TF32 off, deterministic algorithms where torch has them, values printed rounded.
"""

import contextlib
import os
import sys
import time
import warnings

# Before cuBLAS initializes: a fixed workspace makes its kernels reproducible.
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402  (after the environment above, on purpose)


def setup(name, argv):
    """Parses argv, seeds everything; returns (variant, sync_debug, device) or exits."""
    args = argv[1:]
    sync_debug = "--sync-debug" in args
    args = [a for a in args if a != "--sync-debug"]
    if len(args) != 1 or args[0] not in ("bad", "fixed"):
        print("usage: %s bad|fixed [--sync-debug]" % name, file=sys.stderr)
        sys.exit(2)
    if not torch.cuda.is_available():
        print("%s: no CUDA device" % name, file=sys.stderr)
        sys.exit(1)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.manual_seed(0)  # seeds the CUDA generators too
    return args[0], sync_debug, torch.device("cuda")


@contextlib.contextmanager
def step_loop(name, sync_debug):
    """Wraps the step loop; with sync_debug, counts torch's synchronization warnings in it.
    For bench/reference_overhead.sh: EXAMPLES_LOOP_TIME=1 prints the loop's time on stderr
    ("loop_ns=N", from a device sync before it to one after it; with timed(), "step_ns=A,B,..."
    each step's host time), EXAMPLES_TORCH_PROFILER=1 runs
    the loop under torch.profiler (CPU and CUDA activities; its trace processing, at the
    profiler's exit, outside the timed loop)."""
    if os.environ.get("EXAMPLES_LOOP_TIME") == "1":
        with _profiled_loop(), _timed_loop(), _sync_debug_loop(sync_debug):
            yield
    else:
        with _sync_debug_loop(sync_debug):
            yield


@contextlib.contextmanager
def _sync_debug_loop(sync_debug):
    if not sync_debug:
        yield
        return
    torch.cuda.synchronize()  # setup work is not the loop's
    with warnings.catch_warnings(record=True) as caught:
        # "always": Python otherwise shows a warning once per source line, and the loop's
        # warnings all come from the same lines.
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            yield
        finally:
            torch.cuda.set_sync_debug_mode("default")
    count = sum(1 for w in caught if "synchroniz" in str(w.message))
    print("sync-debug: warnings=%d" % count, file=sys.stderr)


_step_starts = []  # perf_counter_ns at each step's start, under EXAMPLES_LOOP_TIME=1 (timed)


def timed(steps):
    """Iterates over STEPS (the step loop's iterable); under EXAMPLES_LOOP_TIME=1 also notes when
    each step starts, so that step_loop can print every step's host time beside the loop's
    (bench/reference_overhead.sh: the steady steps apart from the first ones, which carry
    one-time costs); under EXAMPLES_AB=N runs the loop N + 1 times for an in-process A/B
    (_ab_blocks). Otherwise STEPS itself: nothing added to the loop."""
    blocks = int(os.environ.get("EXAMPLES_AB", "0") or "0")
    if blocks > 0 and os.environ.get("EXAMPLES_AB_MODE") == "long":
        return _long_run(steps, blocks)
    if blocks > 0:
        return _ab_blocks(steps, blocks, os.environ.get("EXAMPLES_AB_MODE", "shim"))
    if os.environ.get("EXAMPLES_LOOP_TIME") != "1":
        return steps
    return _noting(steps)


def _ab_blocks(steps, blocks, mode):
    """bench/reference_ab.sh: the step loop's cost under a tool, measured inside one process, as
    bench/torch_step.py --ab measures issue 17's loop (separate processes differ by more than
    the few percent to be measured). The loop runs once to warm up (on), then BLOCKS times, on,
    off, off, on, ... so that drift cancels within each pair. MODE shim: under the shim, on is
    recording (syncspy_start), off is not (syncspy_stop: the host rows and the GPU timeline
    alike); profiler: no shim, on blocks inside torch.profiler (CPU and CUDA activities, its
    start and its trace processing between the blocks). A block's figure is the median host
    time of its steps after the first AB_SETTLE (default 5), which hold the switch itself.
    Prints "ab_block on|off NS" per block and "ab MODE PERCENT" on stderr: the median over
    pairs of on / off - 1; then "ab_total MODE PERCENT": the mean of every on step (after
    AB_SETTLE) against the mean of every off step, - 1. The median of block medians leaves out
    what happens in a few steps only (the sampler's windows, CUPTI-5, and their attaches: a
    step in twenty or fewer); the total counts them, as a long run pays them. AB_WARMUP
    (default 1) loops of warm-up run first, on: the sampler's start (the continuous trace
    until its first estimate, and in a loop without sync points until CUPTI-9 closes it) is a
    one-time cost, which bench/reference_overhead.sh measures. The workload's own result then
    covers BLOCKS + AB_WARMUP loops: its exit status means nothing here."""
    import ctypes
    import statistics
    settle = int(os.environ.get("AB_SETTLE", "5"))
    warmup = max(1, int(os.environ.get("AB_WARMUP", "1")))
    items = list(steps) if iter(steps) is steps else steps  # an iterator runs out: keep it
    if mode == "shim":
        shim = ctypes.CDLL(None)
        if not hasattr(shim, "syncspy_start") or shim.syncspy_start() != 1:
            print("ab: nothing is recorded (run under the shim)", file=sys.stderr)
            sys.exit(2)
    else:
        from torch.profiler import ProfilerActivity, profile as torch_profile
    figures = []
    totals = {True: [0, 0], False: [0, 0]}  # on/off: nanoseconds, steps
    for n, on in enumerate([True] * warmup + [(i % 4) in (0, 3) for i in range(blocks)]):
        profiler = None
        if mode == "shim":
            (shim.syncspy_start if on else shim.syncspy_stop)()
        elif on:
            profiler = torch_profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
            profiler.start()
        marks = []
        for item in items:
            marks.append(time.perf_counter_ns())
            yield item
        marks.append(time.perf_counter_ns())
        if profiler:
            torch.cuda.synchronize()
            profiler.stop()
        if n >= warmup:
            times = [b - a for a, b in zip(marks, marks[1:])][settle:]
            figures.append((on, statistics.median(times)))
            totals[on][0] += sum(times)
            totals[on][1] += len(times)
            print("ab_block %s %d" % ("on" if on else "off", figures[-1][1]), file=sys.stderr)
            # the block's span on CLOCK_MONOTONIC, the recording's time axis (bench/db_timeline.py)
            print("ab_span %s %d %d" % ("on" if on else "off", _mono(marks[0]), _mono(marks[-1])),
                  file=sys.stderr)
    if mode == "shim":
        shim.syncspy_start()
    pairs = []
    for (on_a, a), (_, b) in zip(figures[0::2], figures[1::2]):
        on_ns, off_ns = (a, b) if on_a else (b, a)
        pairs.append(on_ns / off_ns - 1)
    print("ab %s %.2f" % (mode, statistics.median(pairs) * 100), file=sys.stderr)
    (on_ns, on_steps), (off_ns, off_steps) = totals[True], totals[False]
    if on_steps and off_steps:
        print("ab_total %s %.2f" % (mode, ((on_ns / on_steps) / (off_ns / off_steps) - 1) * 100),
              file=sys.stderr)


def _long_run(steps, loops):
    """bench/reference_ab.sh's `long` configuration: what the GPU timeline costs a long run as
    the default samples it (CUPTI-5), each window counted once. Under the shim, recording all
    along, the loop runs AB_WARMUP (default 1) times, then LOOPS times, and every step after the
    warm-up prints "long_step START END" on stderr (CLOCK_MONOTONIC, the recording's time axis).
    bench/long_cost.py then tells the steps the GPU timeline left alone (inside one of the
    database's gpu_paused intervals: CUPTI detached) from the others (in a window, or holding an
    attach or a detach), and compares their mean host times: the A/B's `total` counts every
    window in an on block, where a long run spreads them over all of its steps."""
    warmup = max(1, int(os.environ.get("AB_WARMUP", "1")))
    items = list(steps) if iter(steps) is steps else steps  # an iterator runs out: keep it
    for n in range(warmup + loops):
        marks = []
        for item in items:
            marks.append(time.perf_counter_ns())
            yield item
        marks.append(time.perf_counter_ns())
        if n >= warmup:
            for a, b in zip(marks, marks[1:]):
                print("long_step %d %d" % (_mono(a), _mono(b)), file=sys.stderr)


_mono_offset = time.monotonic_ns() - time.perf_counter_ns()


def _mono(perf_ns):
    """perf_counter_ns as CLOCK_MONOTONIC ns (both are CLOCK_MONOTONIC on Linux; the offset is 0
    there and kept for other systems)."""
    return perf_ns + _mono_offset


def _noting(steps):
    for item in steps:
        _step_starts.append(time.perf_counter_ns())
        yield item


@contextlib.contextmanager
def _timed_loop():
    torch.cuda.synchronize()
    start = time.perf_counter_ns()
    yield
    host_end = time.perf_counter_ns()
    torch.cuda.synchronize()
    end = time.perf_counter_ns()
    print("loop_ns=%d" % (end - start), file=sys.stderr)
    # each step's host time: to the next step's start, the last one to the loop's host end
    marks = _step_starts + [host_end]
    print("step_ns=%s" % ",".join(str(b - a) for a, b in zip(marks, marks[1:])), file=sys.stderr)


@contextlib.contextmanager
def _profiled_loop():
    if os.environ.get("EXAMPLES_TORCH_PROFILER") != "1":
        yield
        return
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities):
        yield


def mlp(device, in_features, hidden, out_features):
    """A small two-layer MLP, initialized from the seeded generator."""
    return torch.nn.Sequential(
        torch.nn.Linear(in_features, hidden, device=device),
        torch.nn.ReLU(),
        torch.nn.Linear(hidden, out_features, device=device),
    )


def result(name, variant, **values):
    """The one deterministic stdout line of a workload; floats rounded to four places."""
    fields = " ".join("%s=%s" % (k, ("%.4f" % v) if isinstance(v, float) else v)
                      for k, v in values.items())
    print("%s: variant=%s %s result=OK" % (name, variant, fields))
