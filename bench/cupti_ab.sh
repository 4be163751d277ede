#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/cupti_ab.sh [RESULT_FILE]: what CUPTI adds to the torch reference loop, measured inside
# RESULT_FILE is appended to (default: standard output), so that runs can share one file.
# one process, beside what torch.profiler adds, measured the same way (issue 3: at most 3%).
#
# Separate processes of the launch-bound loop differ by up to 2x in step time on the H200
# (bench/cupti_overhead.sh's raw lines), far more than the few percent to be measured. So
# bench/torch_step.py --ab alternates blocks of 100 steps inside one process (on, off, off,
# on, ...): "cupti" under the shim, pausing and resuming syncspy's GPU timeline
# (syncspy_gpu_trace); "profiler" without the shim, every other block inside torch.profiler.
# The overhead is the median over pairs of on/off - 1, and the median of RUNS processes
# (default 3) of each; beside it the total, the mean on block against the mean off block - 1,
# which counts the blocks that hold one of the sampler's windows (CUPTI-5) where the median of
# pairs leaves them out (the 3% check is on the median).
#
# What this leaves out, printed beside it: the shim's host side, on in both kinds of blocks:
# each step's calls (counted in the database) at the per-call cost bench/run.sh measures, and
# the stacks of the step's sync point as the shim timed them (meta.stack_cost_*_ns).
#
# Also checks syncspy_gpu_trace itself on the databases: no kernel ran while paused, kernels
# in every traced block, meta.cupti_pauses one per run of paused blocks (on, off, off, on: one
# pause per two off blocks, and one in the warm-up). KINDS=LIST sets SYNCSPY_CUPTI_KINDS (what
# each kind costs); SAMPLE=ON/PERIOD sets SYNCSPY_CUPTI_SAMPLE (the sampler's cost, and its
# windows checked on the databases instead of the pause count); PROFILER=0 leaves
# torch.profiler out; AB_WRITER_NICE=N sets the writer thread's nice value (torch_step.py).
# Also prints each thread's CPU time per step in the on and the off blocks (medians over the
# processes): where what recording costs goes. Exit 0 when the CUPTI
# overhead is within 3% and the checks pass, 1 otherwise, 2 when it cannot run.
set -u
. "$(dirname "$0")/torch-lib.sh"
runs=${RUNS:-3}

mode=${MODE:-cupti}
case $mode in cupti | shim) ;; *) echo "cupti_ab.sh: MODE is cupti or shim" >&2; exit 2 ;; esac
for run in $(seq "$runs"); do
	env ${KINDS:+SYNCSPY_CUPTI_KINDS=$KINDS} ${SAMPLE:+SYNCSPY_CUPTI_SAMPLE=$SAMPLE} SYNCSPY_CUPTI=${CUPTI:-1} SYNCSPY_QUIET=1 SYNCSPY_OUTPUT="$tmp/db-$run" LD_PRELOAD="$shim" \
		${PIN:+taskset -c "$PIN"} python3 "$root/bench/torch_step.py" --ab "$mode" >"$tmp/cupti-$run" 2>>"$tmp/stderr"
	[ "${PROFILER:-1}" = 0 ] ||
		${PIN:+taskset -c "$PIN"} python3 "$root/bench/torch_step.py" --ab profiler >"$tmp/profiler-$run" 2>>"$tmp/stderr"
done

{
	echo "# bench/cupti_ab.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) $(nvidia-smi -L 2>/dev/null | head -n1)"
	echo "# torch $(python3 -c 'import torch; print(torch.__version__)' 2>/dev/null); $runs processes of each; 40 blocks x 100 steps each (AB_SIZE=${AB_SIZE:-small}); step time in us; MODE=$mode; SYNCSPY_CUPTI=${CUPTI:-1}; SYNCSPY_CUPTI_KINDS=${KINDS:-(default)}; SYNCSPY_CUPTI_SAMPLE=${SAMPLE:-(none)}; AB_WRITER_NICE=${AB_WRITER_NICE:-(not set)}"
	python3 - "$tmp" "$runs" "${SAMPLE:-}" "$mode" <<'PY'
import glob, os, sqlite3, statistics, sys
tmp, runs, sample, ab_mode = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
status = 0
result = {}
result_total = {}
for mode in ("cupti", "profiler"):
    per_run, per_run_total = [], []
    for run in range(1, runs + 1):
        path = os.path.join(tmp, "%s-%d" % (mode, run))
        if not os.path.exists(path):  # PROFILER=0
            continue
        lines = open(path).read().split("\n")
        blocks = [l.split() for l in lines if l.startswith("block ")]
        on = [float(b[3]) for b in blocks if b[2] == "on"]
        off = [float(b[3]) for b in blocks if b[2] == "off"]
        ab = [l.split()[2] for l in lines if l.startswith("ab ")]
        if not ab:
            print("%s run %d: no result: %s" % (mode, run, " | ".join(lines[-3:])))
            status = 1
            continue
        per_run.append(float(ab[0]))
        total = [l.split()[2] for l in lines if l.startswith("ab_total ")]
        if total:
            per_run_total.append(float(total[0]))
        print("%-8s run %d: blocks on %s us, off %s us (medians); paired overhead %s%%; total %s%%"
              % (mode, run, "%.1f" % statistics.median(on) if on else "-",
                 "%.1f" % statistics.median(off) if off else "-", ab[0],
                 total[0] if total else "-"))
    # where the CPU went (torch_step.py thread_cpu_ns): each thread's CPU per step, on and off
    cpu = {}
    for run in range(1, runs + 1):
        path = os.path.join(tmp, "%s-%d" % (mode, run))
        if os.path.exists(path):
            for l in open(path):
                f = l.split()
                if f[:1] == ["cpu"] and len(f) == 5:
                    cpu.setdefault(f[2], []).append((float(f[3]), float(f[4])))
    for label, values in sorted(cpu.items()):
        on_us = statistics.median(v[0] for v in values)
        off_us = statistics.median(v[1] for v in values)
        print("%-8s cpu of thread %-16s %8.1f us a step on, %8.1f off, %+8.1f (median of %d)"
              % (mode, label, on_us, off_us, on_us - off_us, len(values)))
    result[mode] = statistics.median(per_run) if per_run else None
    result_total[mode] = statistics.median(per_run_total) if per_run_total else None

# syncspy_gpu_trace on the databases, and the host side the A/B leaves out
host = []
for run in range(1, runs + 1):
    dbs = glob.glob(os.path.join(tmp, "db-%d" % run, "*.sqlite"))
    if not dbs:
        print("cupti run %d: no database" % run)
        status = 1
        continue
    db = sqlite3.connect(dbs[0])
    meta = dict(db.execute("SELECT key, value FROM meta"))
    lines = open(os.path.join(tmp, "cupti-%d" % run)).read().split("\n")
    paused = [tuple(map(int, l.split()[1:3])) for l in lines if l.startswith("paused ")]
    kernels = [r[0] for r in db.execute(
        "SELECT start_ns FROM gpu_activity WHERE kind = 'kernel'")] if db.execute(
        "SELECT count(*) FROM sqlite_master WHERE name = 'gpu_activity'").fetchone()[0] else []
    inside = sum(1 for k in kernels if any(s <= k <= e for s, e in paused))
    pauses = int(meta.get("cupti_pauses", 0))
    states = [l.split()[2] for l in lines if l.startswith("block ")]
    # warm-up on, off, on; then a pause wherever an off block follows an on block
    expected = 1 + sum(1 for a, b in zip(["on"] + states, states) if a == "on" and b == "off")
    on_status = meta.get("cupti") == "on" or meta.get("cupti", "").startswith("on: only")
    if ab_mode == "shim":
        # syncspy_stop/start (SHIM-6): no call row inside a stopped block, rows in the others,
        # the calls made while stopped counted
        starts = [r[0] for r in db.execute("SELECT start_ns FROM calls")]
        inside_calls = sum(1 for c in starts if any(s < c < e for s, e in paused))
        skipped = int(meta.get("capture_skipped_calls", 0))
        ok = inside_calls == 0 and len(starts) > 0 and skipped > 0 and inside == 0
        print("shim run %d: %s: %d calls recorded, %d of them inside the %d stopped blocks, "
              "%d calls skipped while stopped (meta.capture_skipped_calls); %d kernels "
              "recorded, %d inside stopped blocks; meta.cupti %s, cupti_sample %s, windows %s" % (
                  run, "PASS" if ok else "FAIL", len(starts), inside_calls, len(paused), skipped,
                  len(kernels), inside, meta.get("cupti"), meta.get("cupti_sample"),
                  meta.get("cupti_windows")))
    elif sample in ("", "all"):
        ok = inside == 0 and len(kernels) > 0 and pauses == expected and on_status
        print("cupti run %d: %s: %d kernels recorded, %d of them inside the %d paused blocks; "
              "meta.cupti_pauses %d (expected %d), meta.cupti %s" % (
                  run, "PASS" if ok else "FAIL", len(kernels), inside, len(paused), pauses,
                  expected, meta.get("cupti")))
    else:
        # SYNCSPY_CUPTI_SAMPLE=ON/PERIOD (CUPTI-4): the kernels fall into windows of at most ON
        # ms (plus a step: a window closes at the first sync point after its time, and work
        # queued before it still runs), separated by the PERIOD - ON ms off, and meta says so.
        on_ms, period_ms = map(int, sample.split("/"))
        kernels.sort()
        windows, first = [], None
        for a, b in zip([None] + kernels, kernels):
            if a is None or b - a > (period_ms - on_ms) * 1e6 / 2:
                windows.append([b, b])
            windows[-1][1] = b
        longest = max((e - s for s, e in windows), default=0) / 1e6
        traced = int(meta.get("cupti_traced_ns", 0)) / max(1, int(meta["end_mono_ns"]) - int(meta["start_mono_ns"]))
        ok = (inside == 0 and len(kernels) > 0 and on_status and meta.get("cupti_sample") == sample
              and int(meta.get("cupti_windows", 0)) > 0 and longest <= on_ms + 20)
        print("cupti run %d: %s: %d kernels recorded, %d of them inside the %d paused blocks; "
              "in %d windows of GPU activity, the longest %.1f ms (ON %d ms); meta.cupti_windows %s, "
              "meta.cupti_sample %s, %.1f%% of the run traced (meta.cupti_traced_ns)" % (
                  run, "PASS" if ok else "FAIL", len(kernels), inside, len(paused), len(windows),
                  longest, on_ms, meta.get("cupti_windows"), meta.get("cupti_sample"), 100 * traced))
    status |= not ok
    # the steps the host side recorded: every block's (settle steps included) in cupti mode,
    # the on blocks' (the warm-up's two among them) in shim mode, whose off blocks record nothing
    settle = int(os.environ.get("AB_SETTLE", "10"))
    steps = (len(states) + 3 if ab_mode != "shim" else states.count("on") + 2) * (100 + settle)
    calls = db.execute("SELECT count(*) FROM calls").fetchone()[0]
    syncs = int(meta.get("stacks_taken", 0))
    stack_ns = int(meta.get("stack_cost_native_ns", 0)) + int(meta.get("stack_cost_python_ns", 0))
    repeated = int(meta.get("stacks_repeated", 0))
    steady = int(meta.get("stack_cost_repeated_ns", 0)) / max(repeated, 1)
    host.append((calls / steps, stack_ns / max(syncs, 1), syncs / steps, steady))
if host:
    calls, per_sync, syncs, steady = (statistics.median(h[i] for h in host) for i in range(4))
    print("host side, in both kinds of blocks: %.1f calls per step (bench/run.sh: each costs tens "
          "of ns); %.2f syncs per step, whose stacks took %.0f ns each on average, %.0f ns each "
          "once their stack was known (meta.stack_cost_*)" % (calls, syncs, per_sync, steady))
for mode in ("cupti", "profiler"):
    if result[mode] is None:
        continue
    print("%s adds %.2f%% to the step (median of %d processes)%s" % (
        "torch.profiler" if mode == "profiler" else
        "syncspy's recording" if ab_mode == "shim" else "syncspy's CUPTI", result[mode], runs,
        "; in total, windows included, %.2f%%" % result_total[mode]
        if result_total.get(mode) is not None else ""))
if result.get("cupti") is None or result["cupti"] > 3:
    status = 1
print("%s within 3%% of the step: %s" % ("recording" if ab_mode == "shim" else "CUPTI",
                                         "FAIL" if status else "PASS"))
sys.exit(status)
PY
	status=$?
	grep -v '^$' "$tmp/stderr" 2>/dev/null | sort | uniq -c | sort -rn | head -n 5 | sed 's/^/# stderr: /'
	exit $status
} >>"$out"
