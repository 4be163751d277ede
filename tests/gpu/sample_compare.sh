#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/sample_compare.sh [RESULT_FILE]: what the default GPU timeline (SYNCSPY_CUPTI_SAMPLE
# =auto, CUPTI-5) finds beside continuous tracing (=all), per workload, on a GPU machine
# (issue 17 item 1: GPU idle time per sync site and copy/compute overlap within 10%).
#
# Each workload (the reference workloads of examples/, bad variants, and bench/torch_step.py's
# launch-bound loop) runs RUNS times in each mode, interleaved: all, auto, all, auto, ...
# Separate processes' GPU idle differs by up to 41% between two `all` runs (session 12), so one
# run of each cannot show a 10% difference: the spread of the `all` runs among themselves is
# printed beside auto's difference. For each run, from `syncspy report --format json`: per
# host-sync / sync-copy site, gpu_idle_ns per steady step; per copy-without-overlap site, its
# cost per step; the rank's GPU idle per step and whether the timeline was sampled. Prints, per
# value, the median of each mode, auto / all - 1 of the medians, and each mode's spread
# (max / min - 1 over its runs); then the first `all` recordings sampled afterwards
# (sample_replay.py: what the sampler's windows alone lose, without the difference between
# runs). Then tests/gpu/check_clock.py on the launch-bound loop's auto recording (the GPU rows
# on the host's clock after each re-attach). Exit 0 always when it ran (it measures;
# tests/gpu/README.md explains).
#
# Environment: RUNS (runs per mode, default 2), ONLY=REGEX (the workloads whose name matches),
# KEEP=FILE.tar.gz with KEEP_ONLY=REGEX (the databases of the matching workloads' runs, packed
# there: sample_compare.sh deletes its own otherwise).
#
# Expects the build carried in .carry/ (tests/gpu/carry.sh); nvcc and torch on the machine.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 2
out=${1:-/dev/stdout}
shim=$root/.carry/lib/libsyncspy.so
syncspy=$root/.carry/bin/syncspy
export LD_LIBRARY_PATH="$root/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ -f "$shim" ] && [ -x "$syncspy" ] || { echo "sample_compare.sh: no carried build (.carry)" >&2; exit 2; }

workloads=()
for n in 01_memcpy_in_loop 02_async_pageable 03_copy_compute_overlap 04_stream_sync_vs_wait_event \
	05_malloc_in_loop 06_legacy_stream 07_event_query_polling; do
	nvcc -O2 -g -arch=sm_90 -cudart shared -o "$work/$n" "examples/cuda/$n.cu" >"$work/$n.build" 2>&1 &&
		workloads+=("$n|$work/$n")
done
for n in 08_item_per_step 09_nonblocking_pageable 10_print_tensor 11_synchronize_per_step \
	12_stream_prefetcher 13_data_dependent_shapes; do
	workloads+=("$n|python3 examples/torch/$n.py bad")
done
workloads+=("torch_step-mlp8|env SIZES=mlp8 python3 bench/torch_step.py 1500")
runs=${RUNS:-2}
if [ -n "${ONLY:-}" ]; then
	kept=()
	for w in "${workloads[@]}"; do
		[[ ${w%%|*} =~ $ONLY ]] && kept+=("$w")
	done
	workloads=("${kept[@]}")
fi

summary() { # JSON -> lines: KEY VALUE (per steady step), and sampled=...
	python3 tests/gpu/sample_figures.py "$1"
}

for round in $(seq 1 "$runs"); do
	for w in "${workloads[@]}"; do
		name=${w%%|*} cmd=${w#*|}
		for sample in all auto; do
			run=$name-$sample-$round
			dir=$work/db-$run
			# shellcheck disable=SC2086 # cmd is a word list
			SYNCSPY_CUPTI=1 SYNCSPY_CUPTI_SAMPLE=$sample SYNCSPY_QUIET=1 SYNCSPY_OUTPUT=$dir \
				LD_PRELOAD=$shim timeout 120 $cmd >"$work/$run.out" 2>&1 ||
				echo "run failed: $run (exit $?)" >>"$work/errors"
			"$syncspy" report --format json "$dir" >"$work/$run.json" 2>>"$work/errors" &&
				summary "$work/$run.json" >"$work/$run.sum"
		done
	done
done
if [ -n "${KEEP:-}" ] && [ -n "${KEEP_ONLY:-}" ]; then
	keep=()
	for w in "${workloads[@]}"; do
		[[ ${w%%|*} =~ $KEEP_ONLY ]] && keep+=($(cd "$work" && ls -d "db-${w%%|*}"-*))
	done
	[ ${#keep[@]} -gt 0 ] && tar -C "$work" -czf "$KEEP" "${keep[@]}"
fi

# The GPU rows on the host's clock after each re-attach (CUPTI-8): the launch-bound loop's
# default recording is the one that detaches and attaches again. Recorded once more with the
# callbacks' ties (`correlate`): the default's ties are made by the report from the order
# (CUPTI-13), which puts every kernel after its call by construction.
clock_dir=$work/db-clock
SYNCSPY_CUPTI=1 SYNCSPY_CUPTI_KINDS=kernel,memcpy,memset,sync,event,correlate SYNCSPY_QUIET=1 \
	SYNCSPY_OUTPUT=$clock_dir LD_PRELOAD=$shim SIZES=mlp8 timeout 120 python3 bench/torch_step.py \
	1500 >"$work/clock.out" 2>&1 || echo "run failed: clock (exit $?)" >>"$work/errors"
clock_db=$(ls "$clock_dir"/*.sqlite 2>/dev/null | head -n1)
if [ -n "$clock_db" ]; then
	python3 tests/gpu/check_clock.py "$clock_db" >"$work/clock" 2>&1
	echo "exit $?" >>"$work/clock"
else
	echo "no database of torch_step-mlp8 with auto and correlate" >"$work/clock"
fi

{
	echo "# tests/gpu/sample_compare.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) $(nvidia-smi -L 2>/dev/null | head -n1)"
	echo "# commit $(cat .carry/COMMIT 2>/dev/null); per steady step, ns; medians of $runs runs" \
		"per mode; auto/all of the medians; spread: max/min - 1 over a mode's runs"
	python3 - "$work" "$runs" "${workloads[@]%%|*}" <<'PY'
import os, statistics, sys
work, runs, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def read(run):
    d = {}
    try:
        for line in open(os.path.join(work, run + ".sum")):
            key, _, value = line.rstrip("\n").rpartition(" ")
            d[key] = value
    except OSError:
        pass
    return d
def numbers(values):
    out = []
    for v in values:
        try:
            out.append(float(v))
        except (TypeError, ValueError):
            pass
    return out
def median(values):
    n = numbers(values)
    if not n:
        return "-" if not values or all(v is None for v in values) else values[0]
    return "%.0f" % statistics.median(n)
def rel(a, b):
    try:
        a, b = float(a), float(b)
    except (TypeError, ValueError):
        return "   -   "
    if b == 0:
        return "  0.0%" if a == 0 else "   inf "
    return "%+6.1f%%" % ((a / b - 1) * 100)
def spread(values):
    n = numbers(values)
    if len(n) < 2:
        return "   -   "
    return rel(max(n), min(n)) if min(n) > 0 else ("  0.0%" if max(n) == 0 else "   inf ")
print("%-26s %-52s %12s %12s %8s %8s %8s" % ("workload", "figure", "all", "auto", "auto/all",
                                            "all-sprd", "auto-sprd"))
for name in names:
    per = {m: [read("%s-%s-%d" % (name, m, r)) for r in range(1, runs + 1)] for m in ("all", "auto")}
    keys = set()
    for m in per:
        for d in per[m]:
            keys |= set(d)
    for key in sorted(keys):
        va = [d.get(key) for d in per["all"]]
        vs = [d.get(key) for d in per["auto"]]
        ma, ms = median(va), median(vs)
        print("%-26s %-52s %12s %12s %8s %8s %8s" % (name, key[:52], ma, ms, rel(ms, ma),
                                                    spread(va), spread(vs)))
PY
	echo
	# The sampler's own error, without the runs' difference: each continuous recording sampled
	# afterwards as auto would have (50 ms windows, two duties, 4 phases: sample_replay.py)
	echo "# tests/gpu/sample_replay.py on the first continuous run of each workload:"
	python3 tests/gpu/sample_replay.py --syncspy "$syncspy" --on-ms 50 --duty 0.25,0.1 --phases 4 \
		"$work"/db-*-all-1/*.sqlite 2>&1 | sed 's/^/#   /'
	echo
	echo "# tests/gpu/check_clock.py on torch_step-mlp8's auto recording (with correlate):"
	sed 's/^/#   /' "$work/clock"
	echo
	echo "# errors:"
	sed 's/^/#   /' "$work/errors" 2>/dev/null | head -40
} >"$out"
exit 0
