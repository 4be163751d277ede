#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/reference_overhead.sh [RESULT_FILE]: what the default configuration (host side and the
# GPU timeline sampled by CUPTI-5, detached between windows, CUPTI-8) costs the reference
# workloads of examples/, on a GPU machine, beside torch.profiler (issue 17 item 1).
#
# Per round (ROUNDS, default 6), per workload, each configuration once, in an order that
# rotates with the round so that drift and warm caches hit them alike:
#   plain     no shim
#   default   LD_PRELOAD=libsyncspy.so, nothing else set
#   profiler  no shim, the step loop under torch.profiler (PyTorch workloads only:
#             EXAMPLES_TORCH_PROFILER=1, examples/torch/workload.py)
# every process pinned to the cores PIN names (default 2-3: taskset). Two figures per run:
#   process   the wall time of the whole process (CUDA set-up, CUPTI's attach, the database
#             written at exit: what a user waits for)
#   loop      PyTorch workloads: the step loop's time, device sync to device sync
#             (EXAMPLES_LOOP_TIME=1 prints it); the reference loops are short (60 steps), so
#             this is mostly auto's first 25 ms, which it traces whole
# Prints the raw lines, then per workload and figure the median of each configuration and the
# median over rounds of (config / plain of the same round - 1). TOTAL_BUDGET_S (default 540)
# stops before a round that would not fit; the rounds run are said. WORKLOADS="cuda torch"
# picks the families. Exit 0 when it ran (it measures), 2 when it cannot run.
#
# Expects the build carried in .carry/ (tests/gpu/carry.sh); nvcc and torch on the machine.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
out=${1:-/dev/stdout}
shim=$root/.carry/lib/libsyncspy.so
rounds=${ROUNDS:-6}
pin=${PIN:-2-3}
budget=${TOTAL_BUDGET_S:-540}
families=${WORKLOADS:-cuda torch}
export LD_LIBRARY_PATH="$root/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -f "$shim" ] || { echo "reference_overhead.sh: no carried build (.carry)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
began=$(date +%s)

workloads=()
case " $families " in *" cuda "*)
	for n in 01_memcpy_in_loop 02_async_pageable 03_copy_compute_overlap 04_stream_sync_vs_wait_event \
		05_malloc_in_loop 06_legacy_stream 07_event_query_polling; do
		nvcc -O2 -g -arch=sm_90 -cudart shared -o "$work/$n" "examples/cuda/$n.cu" >"$work/$n.build" 2>&1 &&
			workloads+=("cuda|$n|$work/$n") || echo "# $n: does not build" >>"$work/raw"
	done ;;
esac
case " $families " in *" torch "*)
	for n in 08_item_per_step 09_nonblocking_pageable 10_print_tensor 11_synchronize_per_step \
		12_stream_prefetcher 13_data_dependent_shapes; do
		workloads+=("torch|$n|python3 examples/torch/$n.py bad")
	done ;;
esac

run_one() { # FAMILY NAME CONFIG ROUND CMD...
	local family=$1 name=$2 config=$3 round=$4 start end loop status
	shift 4
	local env=(EXAMPLES_LOOP_TIME=1)
	case $config in
	default) env+=(SYNCSPY_QUIET=1 SYNCSPY_OUTPUT="$work/db-$name-$round" LD_PRELOAD="$shim") ;;
	profiler) env+=(EXAMPLES_TORCH_PROFILER=1) ;;
	esac
	start=$(date +%s%N)
	env "${env[@]}" taskset -c "$pin" timeout 120 "$@" >"$work/out" 2>"$work/err"
	status=$?
	end=$(date +%s%N)
	loop=$(sed -n 's/^loop_ns=//p' "$work/err" | tail -n1)
	echo "raw $name $config round=$round status=$status process_ns=$((end - start)) loop_ns=${loop:--}" >>"$work/raw"
	rm -rf "$work/db-$name-$round"
}

done_rounds=0
last_round_s=0
for round in $(seq 1 "$rounds"); do
	now=$(date +%s)
	if [ $((now - began + last_round_s)) -gt "$budget" ]; then
		echo "# budget: stopped before round $round (TOTAL_BUDGET_S=$budget)" >>"$work/raw"
		break
	fi
	round_began=$now
	for w in "${workloads[@]}"; do
		IFS='|' read -r family name cmd <<<"$w"
		configs=(plain default)
		[ "$family" = torch ] && configs+=(profiler)
		# rotate the order with the round
		n=${#configs[@]}
		for i in $(seq 0 $((n - 1))); do
			config=${configs[$(((i + round) % n))]}
			# shellcheck disable=SC2086 # cmd is a word list
			run_one "$family" "$name" "$config" "$round" $cmd
		done
	done
	done_rounds=$round
	last_round_s=$(($(date +%s) - round_began))
done

{
	echo "# bench/reference_overhead.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) $(nvidia-smi -L 2>/dev/null | head -n1)"
	echo "# commit $(cat .carry/COMMIT 2>/dev/null); rounds run: $done_rounds of $rounds; pinned to cores $pin"
	cat "$work/raw"
	echo
	python3 - "$work/raw" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    if not line.startswith("raw "):
        continue
    _, name, config, rnd, status, proc, loop = line.split()
    rnd = int(rnd.split("=")[1])
    if status != "status=0":
        continue
    for fig, v in (("process", proc), ("loop", loop)):
        v = v.split("=")[1]
        if v != "-":
            runs.setdefault((name, fig), {}).setdefault(config, {})[rnd] = int(v)
print("%-28s %-8s %6s %12s %12s %9s %12s %9s" % ("workload", "figure", "rounds", "plain ms",
      "default ms", "default", "profiler ms", "profiler"))
for (name, fig), by in sorted(runs.items()):
    plain = by.get("plain", {})
    row = ["%-28s %-8s %6d %12.2f" % (name, fig, len(plain), statistics.median(plain.values()) / 1e6
                                      if plain else float("nan"))]
    for config in ("default", "profiler"):
        c = by.get(config, {})
        paired = [c[r] / plain[r] - 1 for r in c if r in plain]
        if c and paired:
            row.append("%12.2f %+8.1f%%" % (statistics.median(c.values()) / 1e6,
                                           statistics.median(paired) * 100))
        else:
            row.append("%12s %9s" % ("-", "-"))
    print(" ".join(row))
print("# default, profiler: median over rounds of (config / plain of the same round - 1)")
PY
} >"$out"
exit 0
