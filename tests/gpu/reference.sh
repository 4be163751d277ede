# SPDX-License-Identifier: MIT
# tests/gpu/reference.sh: the numbered reference workloads of examples/ as parallel tasks.
# Sourced by tests/gpu/run.sh, whose variables and helpers (root, work, results, shim, syncspy,
# jobs_max, only, log, section, check, step_limit, run_cmd) it uses; `bash -n` checks it alone.
#
# One task = one workload, one variant (bad|fixed), one build (shared|static; torch: shared):
#   1. run it without the shim, then with it (same stdout, exit code, stderr but 'syncspy:' lines)
#   2. `syncspy report --format json` on its database directory
#   3. check_expect.py DB EXPECT --variant V --build B --report JSON --row
#   4. torch only: once more with --sync-debug, counting set_sync_debug_mode("warn") warnings
# A task writes only under $work/tasks/ID/ (its own log, outputs and result lines), so tasks can
# run at the same time; the main shell gathers them in task order afterwards.

# kind name [variants]: kinds cuda (built shared and static), torch, nccl-c (built both), ddp.
reference_list() {
	local n
	for n in 01_memcpy_in_loop 02_async_pageable 03_copy_compute_overlap \
		04_stream_sync_vs_wait_event 05_malloc_in_loop 06_legacy_stream \
		07_event_query_polling; do
		echo "cuda $n"
	done
	for n in 08_item_per_step 09_nonblocking_pageable 10_print_tensor \
		11_synchronize_per_step 12_stream_prefetcher 13_data_dependent_shapes; do
		echo "torch $n"
	done
	echo "nccl-c allreduce"
	echo "ddp ddp_allreduce"
}

# Where NCCL's header and library are: torch's nvidia/nccl package on the H200 (the CUDA
# directory has none there), else the CUDA directory.
find_nccl() {
	local d
	d=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null)
	if [ -n "$d" ] && [ -f "$d/include/nccl.h" ]; then
		echo "$d"
		return
	fi
	d=$(dirname "$(dirname "$(command -v nvcc)")")
	[ -f "$d/include/nccl.h" ] && echo "$d"
}

# build_one NAME SOURCE BUILD [EXTRA...]: $work/bin/NAME-BUILD; its log in $work/bin/NAME-BUILD.log.
build_one() {
	local name=$1 src=$2 build=$3 cudart=()
	shift 3
	[ "$build" = shared ] && cudart=(-cudart shared)
	# DEBUG_INFO=1: host debug info, so that sites carry file:line and at= lines get checked
	timeout 240 nvcc -O2 ${DEBUG_INFO:+-g} -arch=sm_90 "${cudart[@]}" -o "$work/bin/$name-$build" "$src" "$@" \
		>"$work/bin/$name-$build.log" 2>&1
}

build_reference() {
	local kind name build nccl pids=() labels=() i
	section "build reference workloads (shared and static cudart, in parallel)"
	nccl=$(find_nccl)
	log "NCCL: ${nccl:-not found}"
	[ -n "$nccl" ] && export LD_LIBRARY_PATH="$nccl/lib:$LD_LIBRARY_PATH"
	while read -r kind name; do
		case $kind in
		cuda) for build in shared static; do
			build_one "$name" "examples/cuda/$name.cu" "$build" </dev/null &
			pids+=($!) labels+=("$name-$build")
		done ;;
		nccl-c) [ -n "$nccl" ] || { check "$name: NCCL found for the build" FAIL; continue; }
			for build in shared static; do
			build_one "$name" "examples/nccl/$name.cu" "$build" -I"$nccl/include" \
				-L"$nccl/lib" -l:libnccl.so.2 </dev/null &
			pids+=($!) labels+=("$name-$build")
		done ;;
		esac
	done < <(reference_list)
	for i in "${!pids[@]}"; do
		if wait "${pids[$i]}"; then
			check "${labels[$i]}: builds" PASS
		else
			check "${labels[$i]}: builds" FAIL "see run.log"
		fi
		{ echo "+ nvcc ... ${labels[$i]}"; sed 's/^/  | /' "$work/bin/${labels[$i]}.log"; } \
			>>"$log_file"
	done
}

# task_run DIR TAG LIMIT CMD...: runs CMD with a time limit inside the task DIR; TAG.out, .err,
# .rc there, the command and its output appended to DIR/log.
task_run() {
	local dir=$1 tag=$2 limit rc
	limit=$(step_limit "$3")
	shift 3
	echo "+ $*" >>"$dir/log"
	if [ "$limit" -lt 5 ]; then
		echo "(skipped: the run's budget is spent)" >>"$dir/log"
		: >"$dir/$tag.out"
		: >"$dir/$tag.err"
		echo 125 >"$dir/$tag.rc"
		return 125
	fi
	timeout --kill-after=10 "$limit" "$@" >"$dir/$tag.out" 2>"$dir/$tag.err"
	rc=$?
	echo "$rc" >"$dir/$tag.rc"
	{ sed 's/^/  out| /' "$dir/$tag.out"; sed 's/^/  err| /' "$dir/$tag.err"; echo "(exit $rc)"; } \
		>>"$dir/log"
	return "$rc"
}

# reference_task KIND NAME VARIANT BUILD: one task (see the top of this file). Its results are
# lines of $dir/result: "check STATUS TEXT" and one "row <tab-separated table row>".
reference_task() {
	local kind=$1 name=$2 variant=$3 build=$4
	local id=$name-$variant-$build dir=$work/tasks/$name-$variant-$build
	local cmd=() expect limit=120 plain_rc shim_rc status verdict="" debug="-" row
	mkdir -p "$dir/db"
	case $kind in
	cuda | nccl-c)
		expect=examples/${kind%-c}/$name.expect
		[ "$kind" = cuda ] || expect=examples/nccl/$name.expect
		cmd=("$work/bin/$name-$build")
		[ "$variant" = fixed ] && cmd+=(--fixed) ;;
	torch)
		expect=examples/torch/$name.expect
		cmd=(python3 "examples/torch/$name.py" "$variant") ;;
	ddp)
		expect=examples/nccl/$name.expect
		cmd=(python3 -m torch.distributed.run --standalone --nproc-per-node 1 "examples/nccl/$name.py" "$variant") ;;
	esac
	res() { echo "$*" >>"$dir/result"; }

	if [ ! -x "${cmd[0]}" ] && [ "${cmd[0]#/}" != "${cmd[0]}" ]; then
		res "check FAIL $id: not built"
		res "row	$name	$variant	$build	-	not built	-	FAIL"
		return
	fi
	task_run "$dir" plain "$limit" "${cmd[@]}"
	plain_rc=$?
	if [ "$plain_rc" -eq 0 ] && grep -q 'result=OK$' "$dir/plain.out"; then
		res "check PASS $id: runs and verifies its result without the shim"
	else
		res "check FAIL $id: runs and verifies its result without the shim (exit $plain_rc)"
		status=FAIL
	fi
	task_run "$dir" shim "$limit" env LD_PRELOAD="$shim" SYNCSPY_OUTPUT="$dir/db" \
		SYNCSPY_CUPTI="${REFERENCE_CUPTI:-1}" "${cmd[@]}"
	shim_rc=$?
	if [ "$shim_rc" -eq "$plain_rc" ] && cmp -s "$dir/plain.out" "$dir/shim.out"; then
		res "check PASS $id: same stdout and exit code under the shim (exit $shim_rc)"
	else
		res "check FAIL $id: same stdout and exit code under the shim ($plain_rc without, $shim_rc with)"
		diff "$dir/plain.out" "$dir/shim.out" >>"$dir/log" 2>&1
		status=FAIL
	fi
	grep -v '^syncspy:' "$dir/shim.err" >"$dir/shim.err.own"
	if cmp -s "$dir/plain.err" "$dir/shim.err.own"; then
		res "check PASS $id: stderr unchanged apart from 'syncspy:' lines"
	elif [ "$kind" = ddp ]; then
		# torchrun and ProcessGroupNCCL log lines with times and ports: shown, not compared.
		echo "stderr differs (not compared for torchrun):" >>"$dir/log"
		diff "$dir/plain.err" "$dir/shim.err.own" >>"$dir/log" 2>&1
	else
		res "check FAIL $id: stderr unchanged apart from 'syncspy:' lines"
		diff "$dir/plain.err" "$dir/shim.err.own" >>"$dir/log" 2>&1
		status=FAIL
	fi

	# The report of every database of the run (ddp: torchrun's worker; a fork: each child).
	local report_args=()
	if ls "$dir"/db/*.sqlite >/dev/null 2>&1; then
		if task_run "$dir" report 60 "$syncspy" report --format json "$dir/db"; then
			cp "$dir/report.out" "$dir/report.json"
			report_args=(--report "$dir/report.json")
		else
			echo "syncspy report failed" >>"$dir/log"
		fi
	fi
	task_run "$dir" expect 60 python3 tests/gpu/check_expect.py "$dir/db" "$expect" \
		--variant "$variant" --build "$build" "${report_args[@]}" --row
	case $? in
	0) verdict=PASS ;;
	3) verdict=XFAIL ;;
	*) verdict=FAIL ;;
	esac
	row=$(grep '^row	' "$dir/expect.out" | tail -n1)
	[ -n "$row" ] || row="row	-	$(tail -n1 "$dir/expect.err" 2>/dev/null)	FAIL"
	grep -q '	XPASS$' <<<"$row" && verdict=XPASS
	res "check $([ "$verdict" = FAIL ] && echo FAIL || echo PASS) $id: findings match $expect ($verdict)"

	if [ "$kind" = torch ]; then
		task_run "$dir" debug "$limit" "${cmd[@]}" --sync-debug
		debug=$(sed -n 's/^sync-debug: warnings=//p' "$dir/debug.err" | tail -n1)
		[ -n "$debug" ] || debug="?"
	fi
	# A run that fails its output checks fails the row even when the findings matched.
	[ "${status:-}" = FAIL ] && verdict=FAIL
	IFS=$'\t' read -r _ want got _ <<<"$row"
	res "row	$name	$variant	$build	$want	$got	$debug	$verdict"
}

run_reference_workloads() {
	local kind name variant build ids=() id
	build_reference
	section "reference workloads (JOBS=$jobs_max)"
	if [ ! -x "$syncspy" ]; then
		check "syncspy command present" FAIL "no $syncspy"
	fi
	while read -r kind name; do
		for variant in bad fixed; do
			for build in shared static; do
				case $kind in torch | ddp) [ "$build" = static ] && continue ;; esac
				id=$name-$variant-$build
				[ -n "$only" ] && ! [[ $id =~ $only ]] && continue
				while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n; done
				reference_task "$kind" "$name" "$variant" "$build" </dev/null &
				ids+=("$id")
			done
		done
	done < <(reference_list)
	wait
	{
		printf '%-30s %-6s %-7s %-48s %-40s %-6s %s\n' workload variant build \
			"expected findings" got sync-dbg status
	} >>"$work/table"
	for id in "${ids[@]}"; do
		local dir=$work/tasks/$id line
		{ echo; echo "=== task $id ==="; cat "$dir/log" 2>/dev/null; cat "$dir/expect.out" 2>/dev/null; } \
			>>"$log_file"
		if [ ! -f "$dir/result" ]; then
			check "$id: task finished" FAIL "no result (killed?)"
			continue
		fi
		while IFS= read -r line; do
			case $line in
			"check "*)
				line=${line#check }
				check "${line#* }" "${line%% *}" ;;
			"row	"*)
				IFS=$'\t' read -r _ n v b want got dbg verdict <<<"$line"
				printf '%-30s %-6s %-7s %-48s %-40s %-6s %s\n' "$n" "$v" "$b" "$want" "$got" \
					"$dbg" "$verdict" >>"$work/table" ;;
			esac
		done <"$dir/result"
		if [ -f "$dir/report.json" ]; then
			python3 -c 'import json,sys; print(json.dumps({"task": sys.argv[1], "report": json.load(open(sys.argv[2]))}))' \
				"$id" "$dir/report.json" >>"$results/reports.json" 2>>"$log_file"
		fi
		if ls "$dir"/db/*.sqlite >/dev/null 2>&1; then
			mkdir -p "$work/keep/$id" && cp "$dir"/db/*.sqlite "$work/keep/$id/"
		fi
	done
}
