#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/reference_overhead.sh [RESULT_FILE]: what the default configuration (host side and the
# GPU timeline sampled by CUPTI-5, detached between windows, CUPTI-8) costs the reference
# workloads of examples/, on a GPU machine, beside torch.profiler (issue 17 item 1).
#
# Per round (ROUNDS, default 6, numbered from FIRST_ROUND, default 1), per workload, each
# configuration of CONFIGS once (default "plain default profiler"), in an order that rotates
# with the round so that drift and warm caches hit them alike:
#   plain     no shim
#   default   LD_PRELOAD=libsyncspy.so, nothing else set
#   host      the shim with SYNCSPY_CUPTI=0 (its host side alone)
#   all       the shim with SYNCSPY_CUPTI_SAMPLE=all (CUPTI traces the whole run)
#   profiler  no shim, the step loop under torch.profiler (PyTorch workloads only:
#             EXAMPLES_TORCH_PROFILER=1, examples/torch/workload.py)
# every process pinned to the cores PIN names (default 2-3: taskset). Figures per run:
#   process   the wall time of the whole process (CUDA set-up, CUPTI's attach, the database
#             written at exit: what a user waits for)
#   loop      PyTorch workloads: the step loop's time, device sync to device sync
#             (EXAMPLES_LOOP_TIME=1 prints it), its first steps and their one-time costs
#             (CUDA's lazy loading, the shim's first sight of each call site) included
#   steady    PyTorch workloads: the median host time of a step after the first WARM (default
#             10) of the loop's steps (examples/torch/workload.py, timed(): "step_ns=...")
#   warm      PyTorch workloads: the host time of the first WARM steps together
# The shim's configurations add a "meta" line per run: what CUPTI did (windows, detaches and
# attaches with their time, the traced and paused time). Prints the raw lines, then the table of
# bench/overhead_table.py: per workload and figure the median of each configuration and the
# median over rounds of (config / plain of the same round - 1); bench/overhead_table.py
# FILE... merges the raw lines of several runs (rounds 1-3 in one device call, 4-6 in the
# next: FIRST_ROUND=4). TOTAL_BUDGET_S (default 540) stops before a round that would not fit;
# the rounds run are said. WORKLOADS="cuda torch" picks the families, ONLY=REGEX the workloads.
# Exit 0 when it ran (it measures), 2 when it cannot run.
#
# Expects the build carried in .carry/ (tests/gpu/carry.sh); nvcc and torch on the machine.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
out=${1:-/dev/stdout}
shim=$root/.carry/lib/libsyncspy.so
rounds=${ROUNDS:-6}
first_round=${FIRST_ROUND:-1}
configs_wanted=${CONFIGS:-plain default profiler}
warm=${WARM:-10}
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
	local family=$1 name=$2 config=$3 round=$4 start end loop steps status db=$work/db-$name-$round
	shift 4
	local env=(EXAMPLES_LOOP_TIME=1) shimmed=(SYNCSPY_QUIET=1 SYNCSPY_OUTPUT="$db" LD_PRELOAD="$shim")
	case $config in
	default) env+=("${shimmed[@]}") ;;
	host) env+=("${shimmed[@]}" SYNCSPY_CUPTI=0) ;;
	all) env+=("${shimmed[@]}" SYNCSPY_CUPTI_SAMPLE=all) ;;
	profiler) env+=(EXAMPLES_TORCH_PROFILER=1) ;;
	esac
	start=$(date +%s%N)
	env "${env[@]}" taskset -c "$pin" timeout 120 "$@" >"$work/out" 2>"$work/err"
	status=$?
	end=$(date +%s%N)
	loop=$(sed -n 's/^loop_ns=//p' "$work/err" | tail -n1)
	steps=$(sed -n 's/^step_ns=//p' "$work/err" | tail -n1)
	echo "raw $name $config round=$round status=$status process_ns=$((end - start)) loop_ns=${loop:--} step_ns=${steps:--}" >>"$work/raw"
	if [ -d "$db" ]; then
		local f
		for f in "$db"/*.sqlite; do
			[ -f "$f" ] || continue
			echo "meta $name $config round=$round $(python3 "$root/bench/db_meta.py" "$f")" >>"$work/raw"
		done
	fi
	rm -rf "$db"
}

done_rounds=0
last_round_s=0
for round in $(seq "$first_round" $((first_round + rounds - 1))); do
	now=$(date +%s)
	if [ $((now - began + last_round_s)) -gt "$budget" ]; then
		echo "# budget: stopped before round $round (TOTAL_BUDGET_S=$budget)" >>"$work/raw"
		break
	fi
	round_began=$now
	for w in "${workloads[@]}"; do
		IFS='|' read -r family name cmd <<<"$w"
		[[ $name =~ ${ONLY:-.} ]] || continue
		configs=()
		for c in $configs_wanted; do
			[ "$c" = profiler ] && [ "$family" != torch ] && continue
			configs+=("$c")
		done
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
	echo "# commit $(cat .carry/COMMIT 2>/dev/null); rounds run: $first_round to $done_rounds; configurations: $configs_wanted; pinned to cores $pin"
	cat "$work/raw"
	echo
	python3 "$root/bench/overhead_table.py" --warm "$warm" "$work/raw"
} >"$out"
exit 0
