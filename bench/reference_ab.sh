#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/reference_ab.sh [RESULT_FILE]: what recording costs a step of each PyTorch reference
# workload (examples/torch), measured inside one process, beside torch.profiler measured the same
# way (issue 17 item 1).
#
# Separate processes of these short loops differ by far more than the few percent to be measured
# (the plain runs of bench/reference_overhead.sh: 5.0 and 9.0 ms a step of 09 on one H100), so
# each process here runs its workload's step loop 1 + BLOCKS times (EXAMPLES_AB,
# examples/torch/workload.py: a warm-up loop, then blocks on, off, off, on, ...) and compares
# its own blocks: the median over pairs of on / off - 1, a block's figure being the median host
# time of its steps after the first 5 (the switch itself). Configurations (CONFIGS, default
# "default host profiler"), each RUNS processes (default 3), interleaved (each round starting
# one configuration further on), pinned to PIN (default 2-3):
#   default   under the shim as users run it; on: recording (syncspy_start), off: not
#             (syncspy_stop: neither host rows nor the GPU timeline, CUPTI detached, CUPTI-8)
#   host      the same with SYNCSPY_CUPTI=0: the host side alone
#   all       the same with SYNCSPY_CUPTI_SAMPLE=all: every call traced while on
#   kinds=LIST  `all` with only CUPTI's kinds LIST (SYNCSPY_CUPTI_KINDS, comma list: what each
#             kind costs while traced)
#   sampled=LIST  `default` (sampled as users run it) with only CUPTI's kinds LIST: a candidate
#             default
#   profiler  no shim; on: inside torch.profiler (CPU and CUDA activities)
#   long      under the shim as users run it, recording all along (no blocks off): the loop runs
#             BLOCKS times and bench/long_cost.py compares the steps the sampler left untraced
#             (CUPTI detached) with all of them, so that each window and switch counts once, as
#             in a long run; its figure (`total`; `ab` is left out) is the GPU timeline's cost
#             alone, the host side's being the `host` configuration's
# What this leaves out, and bench/reference_overhead.sh measures in separate processes: the
# one-time costs (the shim's and CUPTI's start, each call site's first sight, the database
# written at exit) and the interposition itself, on in both kinds of blocks (tens of ns a call,
# bench/run.sh). An on block starts CUPTI afresh, so the sampler (CUPTI-5) starts over in each
# one and traces its first window whole: more of each block traced than in a long run.
# Two figures per process: `ab`, the median over pairs of blocks of on / off - 1, a block's
# figure being the median of its steps (robust to the odd slow step, blind to what a few steps
# pay: the sampler's windows); `total`, the mean of every on step against the mean of every off
# step (what a long run pays, windows included; pessimistic for the default, whose windows open
# at sync points and so only in on blocks). WARMUP (default 1) loops of warm-up, on, run first:
# the sampler's start (its continuous trace until the first estimate; in a loop without sync
# points, until CUPTI-9 closes it) is a one-time cost, left to bench/reference_overhead.sh.
# ONLY=REGEX picks workloads; BLOCKS (default 20); TOTAL_BUDGET_S stops before a round that
# would end past it (the rounds run are said); PARTIAL=FILE keeps the raw lines so far there
# after every process (a run cut short keeps what it measured; default RESULT_FILE.partial when
# a result file is named, removed when the run ends: session 27 lost a call's 480 s cut short
# without it). Exit 0 when it ran, 2 when it cannot run.
set -u
. "$(dirname "$0")/torch-lib.sh"
runs=${RUNS:-3}
blocks=${BLOCKS:-20}
pin=${PIN:-2-3}
configs=${CONFIGS:-default host profiler}
[ "$out" = /dev/stdout ] || PARTIAL=${PARTIAL:-$out.partial}

budget=${TOTAL_BUDGET_S:-0}
runs_done=0
for run in $(seq "$runs"); do
	# TOTAL_BUDGET_S: no round started that the last one's time says would not fit
	if [ "$budget" -gt 0 ] && [ "$run" -gt 1 ] &&
		[ $((SECONDS + SECONDS / (run - 1))) -gt "$budget" ]; then
		break
	fi
	runs_done=$run
	for name in 08_item_per_step 09_nonblocking_pageable 10_print_tensor 11_synchronize_per_step \
		12_stream_prefetcher 13_data_dependent_shapes; do
		[[ $name =~ ${ONLY:-.} ]] || continue
		# each round starts one configuration further on: no configuration always runs first
		# (session 24: of two syncspy configurations, the first of each round measured higher in two
		# runs)
		read -r -a all <<<"$configs"
		first=$(((run - 1) % ${#all[@]}))
		for config in "${all[@]:first}" "${all[@]:0:first}"; do
			env=(EXAMPLES_AB="$blocks" AB_WARMUP="${WARMUP:-1}" EXAMPLES_AB_MODE=shim SYNCSPY_QUIET=1
				SYNCSPY_OUTPUT="$tmp/db" LD_PRELOAD="$shim")
			case $config in
			default) ;;
			host) env+=(SYNCSPY_CUPTI=0) ;;
			all) env+=(SYNCSPY_CUPTI_SAMPLE=all) ;;
			kinds=*) env+=(SYNCSPY_CUPTI_SAMPLE=all SYNCSPY_CUPTI_KINDS="${config#kinds=}") ;;
			sampled=*) env+=(SYNCSPY_CUPTI_KINDS="${config#sampled=}") ;;
			profiler) env=(EXAMPLES_AB="$blocks" AB_WARMUP="${WARMUP:-1}" EXAMPLES_AB_MODE=profiler) ;;
			long) env+=(EXAMPLES_AB_MODE=long) ;;
			*) echo "reference_ab.sh: unknown configuration $config" >&2; exit 2 ;;
			esac
			env "${env[@]}" taskset -c "$pin" timeout 300 python3 "$root/examples/torch/$name.py" \
				bad >/dev/null 2>"$tmp/err"
			status=$?
			ab=$(sed -n 's/^ab [a-z]* //p' "$tmp/err" | tail -n1)
			total=$(sed -n 's/^ab_total [a-z]* //p' "$tmp/err" | tail -n1)
			long=
			if [ "$config" = long ]; then
				for f in "$tmp"/db/*.sqlite; do
					[ -f "$f" ] && long=$(python3 "$root/bench/long_cost.py" "$f" "$tmp/err")
				done
				total=$(echo "$long" | sed -n 's/.*cost=\([-0-9.]*\).*/\1/p')
				long=" ${long}"
			fi
			blocks_on=$(sed -n 's/^ab_block on //p' "$tmp/err" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
			blocks_off=$(sed -n 's/^ab_block off //p' "$tmp/err" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
			echo "raw $name $config run=$run status=$status ab=${ab:--} total=${total:--} on_ns=${blocks_on:--} off_ns=${blocks_off:--}$long" >>"$tmp/raw"
			[ -n "$ab$total" ] || tail -n 3 "$tmp/err" | sed "s/^/# $name $config: /" >>"$tmp/raw"
			for f in "$tmp"/db/*.sqlite; do
				[ -f "$f" ] || continue
				echo "meta $name $config run=$run $(python3 "$root/bench/db_meta.py" "$f")" >>"$tmp/raw"
			done
			[ -z "${PARTIAL:-}" ] || cp "$tmp/raw" "$PARTIAL"
			rm -rf "$tmp/db"
		done
	done
done

{
	echo "# bench/reference_ab.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) $(nvidia-smi -L 2>/dev/null | head -n1)"
	echo "# commit $(cat "$root/.carry/COMMIT" 2>/dev/null); $runs_done of $runs processes per configuration, $blocks blocks of the loop each after ${WARMUP:-1} of warm-up; pinned to cores $pin"
	cat "$tmp/raw"
	echo
	python3 - "$tmp/raw" <<'PY'
import statistics, sys
by = {}
for line in open(sys.argv[1]):
    w = line.split()
    if w[:1] != ["raw"]:
        continue
    f = dict(x.split("=", 1) for x in w[3:])
    for figure in ("ab", "total"):
        if f.get(figure, "-") != "-":
            by.setdefault((figure, w[1], w[2]), []).append(float(f[figure]))
configs = []
for _, _, c in by:
    if c not in configs:
        configs.append(c)
for figure in ("total", "ab"):
    for name in sorted({n for g, n, _ in by if g == figure}):
        for c in configs:
            v = by.get((figure, name, c))
            if v:
                print("%-5s %-24s %-36s %+8.2f%% (%d, %s)" % (
                    figure, name, c, statistics.median(v), len(v),
                    "/".join("%+.1f" % x for x in v)))
print("# per figure and configuration: the median over processes, the processes, each process's "
      "figure; total: mean on step / mean off step - 1; ab: median over pairs of blocks of "
      "(on / off - 1), a block's figure the median of its steps")
PY
} >>"$out"
[ "${PARTIAL:-}" != "$out.partial" ] || rm -f "$PARTIAL"
exit 0
