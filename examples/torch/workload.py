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
    ("loop_ns=N", from a device sync before it to one after it), EXAMPLES_TORCH_PROFILER=1 runs
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


@contextlib.contextmanager
def _timed_loop():
    torch.cuda.synchronize()
    start = time.perf_counter_ns()
    yield
    torch.cuda.synchronize()
    print("loop_ns=%d" % (time.perf_counter_ns() - start), file=sys.stderr)


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
