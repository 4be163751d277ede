#!/usr/bin/env bash
# tests/gpu/corpus.sh: records the labelled corpus (examples/corpus, issue 13 item 4) on a GPU
# machine, in one call, and leaves the traces ready to commit under examples/corpus/traces/.
#
# For every workload of examples/corpus (README.md there lists them):
#   1. build it with nvcc there: CUDA C and NCCL programs twice, -cudart shared and nvcc's
#      default static cudart (NAME-shared, NAME-static), with -g so that their sites can carry
#      file:line; driver-API programs once, with -lcuda (NAME), their kernels as one cubin
#   2. run it without the shim (all tasks at once, JOBS at a time), then with the shim and the GPU
#      timeline on, as `syncspy run` does (LD_PRELOAD, SYNCSPY_OUTPUT, SYNCSPY_CUPTI=1,
#      NVTX_INJECTION64_PATH), SHIM_JOBS at a time (default 1: the GPU to itself, so that the
#      recorded timings are the program's own and not a neighbour's)
#   3. check: exit code 0 and a "result=OK" line without the shim; the same exit code and stdout
#      with it; stderr the same apart from the shim's 'syncspy:' lines; exactly one database
#   4. `syncspy symbolize` the database (the native sites' file:line written into it while the
#      binary is still there: docs/cli.md), then `syncspy report --format json` on it (JOBS at
#      a time: they need no GPU)
#   5. the scorer (examples/corpus/score.py) on all the traces
#
#   tests/gpu/corpus.sh [RESULTS_DIR]     default: $OUT if set, else tests/gpu/results/corpus-<time>
#
# RESULTS_DIR receives 5 to 7 files (the device tool brings back at most 8):
#   corpus-summary.txt      one PASS/FAIL line per check, then the score
#   corpus-run.log          every command run, with its output
#   corpus-traces.tar.gz    NAME[-shared|-static].sqlite, one per workload and build: unpack it
#                           into examples/corpus/traces/ and commit (over 15 MiB: two files,
#                           corpus-traces-1.tar.gz and corpus-traces-2.tar.gz, unpack both)
#   corpus-reports.json     every report, one line each: {"trace": NAME, "report": {...}}
#   corpus-score.txt        examples/corpus/score.py on the traces (per workload and the total)
#   corpus-order.txt        with `correlate` in SYNCSPY_CUPTI_KINDS: tests/gpu/check_order.py on
#                           the traces (the report's ties by stream order against the callbacks')
#
# Expects the build made here and carried in .carry/ (tests/gpu/carry.sh): lib/libsyncspy.so,
# bin/syncspy (with libdw, for symbolize and report). Environment: JOBS (default 8), SHIM_JOBS
# (default 1), TOTAL_BUDGET_S (default 450; past it remaining steps are skipped and fail),
# ONLY=REGEX (only the tasks whose name matches). Exit status 0 when every check passed.
# tests/gpu/run.sh runs it as its part "corpus" (traces then go into its databases.tar.gz).
set -u

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1

results=${1:-${OUT:-$root/tests/gpu/results/corpus-$(date +%Y%m%d-%H%M%S)}}
mkdir -p "$results" || exit 1
results=$(cd "$results" && pwd)
log_file=$results/corpus-run.log
summary=$results/corpus-summary.txt
: >"$log_file"

cwork=$(mktemp -d "${TMPDIR:-/tmp}/syncspy-corpus.XXXXXX")
trap 'rm -rf "$cwork"' EXIT
mkdir -p "$cwork/bin" "$cwork/tasks" "$cwork/traces"
: >"$cwork/checks"

shim=$root/.carry/lib/libsyncspy.so
syncspy=$root/.carry/bin/syncspy
corpus=examples/corpus
jobs_max=${JOBS:-8}
shim_jobs=${SHIM_JOBS:-1}
budget=${TOTAL_BUDGET_S:-450}
only=${ONLY:-}
failures=0

export LD_LIBRARY_PATH="$root/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# NVLink multicast stays off on the shared machines (see tests/gpu/run.sh)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

log() { printf '%s\n' "$*" >>"$log_file"; }
check() { # NAME PASS|FAIL [DETAIL]
	local line="$2  $1${3:+  ($3)}"
	echo "$line" >>"$cwork/checks"
	log "CHECK: $line"
	[ "$2" = PASS ] || failures=$((failures + 1))
}
left() { echo $((budget - SECONDS)); }

# The tasks, one line each: ID KIND SOURCE BUILD. KIND: cuda (CUDA C, NCCL), driver, torch.
task_list() {
	local src name build
	for src in "$corpus"/c*.cu "$corpus"/n*.cu; do
		name=$(basename "$src" .cu)
		for build in shared static; do echo "$name-$build cuda $src $build"; done
	done
	for src in "$corpus"/d*.c; do echo "$(basename "$src" .c) driver $src -"; done
	for src in "$corpus"/t*.py; do echo "$(basename "$src" .py) torch $src -"; done
}

# NCCL's header and library: torch's nvidia/nccl package on the H200, else the CUDA directory.
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

# --- environment
log "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)  host: $(hostname)"
log "build carried (.carry/COMMIT): $(cat .carry/COMMIT 2>/dev/null || echo unknown)"
{ nvidia-smi -L; nvcc --version | tail -n2; } >>"$log_file" 2>&1
torch_version=$(python3 -c 'import torch; print(torch.__version__, torch.cuda.is_available())' 2>>"$log_file")
log "torch: $torch_version"
[ -f "$shim" ] && check "shim present" PASS || check "shim present" FAIL "no $shim"
[ -x "$syncspy" ] && check "syncspy present" PASS || check "syncspy present" FAIL "no $syncspy"
nccl=$(find_nccl)
log "NCCL: ${nccl:-not found}"
[ -n "$nccl" ] && export LD_LIBRARY_PATH="$nccl/lib:$LD_LIBRARY_PATH"

# --- build, all at once (nvcc is single-threaded; the machine has cores to spare)
log ""
log "=== build ($(date -u +%H:%M:%S))"
build() { # ID CMD...: $cwork/bin/ID.log, exit status in $cwork/bin/ID.rc
	local id=$1
	shift
	timeout 240 "$@" >"$cwork/bin/$id.log" 2>&1
	echo $? >"$cwork/bin/$id.rc"
	echo "+ $*" >>"$cwork/bin/$id.cmd"
}
build driver_kernels nvcc -cubin -arch=sm_90 -o "$cwork/bin/driver_kernels.cubin" \
	"$corpus/driver_kernels.cu" &
while read -r id kind src b; do
	[ -n "$only" ] && ! [[ $id =~ $only ]] && continue
	extra=()
	# A workload that needs a library beyond cudart names it in its top comment:
	# `// CORPUS-LDLIBS: -lcublas` (examples/corpus/README.md).
	read -r -a ldlibs < <(sed -n 's|^.*CORPUS-LDLIBS:||p' "$src" | head -n1)
	case $kind in
	cuda)
		[ "$b" = shared ] && extra+=(-cudart shared)
		case $src in */n*.cu) extra+=(-I"$nccl/include" -L"$nccl/lib" -l:libnccl.so.2) ;; esac
		build "$id" nvcc -O2 -g -arch=sm_90 "${extra[@]}" -o "$cwork/bin/$id" "$src" -lpthread \
			"${ldlibs[@]}" & ;;
	driver)
		build "$id" nvcc -O2 -g -cudart none -o "$cwork/bin/$id" "$src" -lcuda "${ldlibs[@]}" & ;;
	esac
	while [ "$(jobs -rp | wc -l)" -ge 16 ]; do wait -n; done
done < <(task_list)
wait
for rc in "$cwork"/bin/*.rc; do
	id=$(basename "$rc" .rc)
	{ cat "$cwork/bin/$id.cmd"; sed 's/^/  | /' "$cwork/bin/$id.log"; } >>"$log_file"
	if [ "$(cat "$rc")" = 0 ]; then check "$id: builds" PASS; else check "$id: builds" FAIL; fi
done

# task_cmd ID KIND: the command line of a task, one word per line.
task_cmd() {
	case $2 in
	cuda) echo "$cwork/bin/$1" ;;
	driver) printf '%s\n' "$cwork/bin/$1" "$cwork/bin/driver_kernels.cubin" ;;
	torch) printf '%s\n' python3 "$corpus/$1.py" ;;
	esac
}

# run_task ID KIND MODE: MODE plain or shim; writes $cwork/tasks/ID/MODE.{out,err,rc}.
run_task() {
	local id=$1 kind=$2 mode=$3 dir=$cwork/tasks/$1 limit cmd=()
	mkdir -p "$dir/db"
	mapfile -t cmd < <(task_cmd "$id" "$kind")
	limit=$(left)
	[ "$limit" -gt 120 ] && limit=120
	if [ "$limit" -lt 10 ]; then
		echo 125 >"$dir/$mode.rc"
		: >"$dir/$mode.out"
		echo "skipped: budget spent" >"$dir/$mode.err"
		return
	fi
	if [ "$mode" = plain ]; then
		timeout --kill-after=10 "$limit" "${cmd[@]}" >"$dir/plain.out" 2>"$dir/plain.err"
	else
		timeout --kill-after=10 "$limit" env LD_PRELOAD="$shim" SYNCSPY_OUTPUT="$dir/db" \
			SYNCSPY_CUPTI=1 NVTX_INJECTION64_PATH="$shim" "${cmd[@]}" \
			>"$dir/shim.out" 2>"$dir/shim.err"
	fi
	echo $? >"$dir/$mode.rc"
	echo "${cmd[*]}" >"$dir/cmd"
}

run_all() { # MODE PARALLEL
	local id kind src b
	while read -r id kind src b; do
		[ -n "$only" ] && ! [[ $id =~ $only ]] && continue
		while [ "$(jobs -rp | wc -l)" -ge "$2" ]; do wait -n; done
		run_task "$id" "$kind" "$1" </dev/null &
	done < <(task_list)
	wait
}

log ""
log "=== runs without the shim, $jobs_max at a time ($(date -u +%H:%M:%S), ${SECONDS}s)"
run_all plain "$jobs_max"
log "=== runs with the shim, $shim_jobs at a time ($(date -u +%H:%M:%S), ${SECONDS}s)"
run_all shim "$shim_jobs"
log "=== symbolize and report, $jobs_max at a time ($(date -u +%H:%M:%S), ${SECONDS}s)"
# post ID: symbolize the task's one database (in place, in its task directory: the binary is
# still where it ran) and make its report; their exit statuses in symbolize.rc and report.rc.
post() {
	local dir=$cwork/tasks/$1 db
	db=$(ls "$dir"/db/*.sqlite 2>/dev/null | head -n1)
	[ -n "$db" ] || return
	# While the binary is here: its file:line texts go into the database (docs/cli.md).
	timeout 120 "$syncspy" symbolize "$db" >"$dir/symbolize.out" 2>&1
	echo $? >"$dir/symbolize.rc"
	timeout 120 "$syncspy" report --format json "$db" >"$dir/report.json" 2>"$dir/report.err"
	echo $? >"$dir/report.rc"
}
while read -r id kind src b; do
	[ -n "$only" ] && ! [[ $id =~ $only ]] && continue
	while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n; done
	post "$id" </dev/null &
done < <(task_list)
wait
log "=== checks ($(date -u +%H:%M:%S), ${SECONDS}s)"

: >"$results/corpus-reports.json"
while read -r id kind src b; do
	[ -n "$only" ] && ! [[ $id =~ $only ]] && continue
	dir=$cwork/tasks/$id
	{
		echo
		echo "--- $id: $(cat "$dir/cmd" 2>/dev/null)"
		for mode in plain shim; do
			echo "  $mode: exit $(cat "$dir/$mode.rc" 2>/dev/null)"
			sed "s/^/  $mode out| /" "$dir/$mode.out" 2>/dev/null | head -n 50
			sed "s/^/  $mode err| /" "$dir/$mode.err" 2>/dev/null | head -n 50
		done
	} >>"$log_file"
	plain_rc=$(cat "$dir/plain.rc" 2>/dev/null || echo none)
	shim_rc=$(cat "$dir/shim.rc" 2>/dev/null || echo none)
	ran=1 # a trace is packed only when the program did its work, the same with the shim
	if [ "$plain_rc" = 0 ] && grep -q 'result=OK$' "$dir/plain.out"; then
		check "$id: runs and prints result=OK without the shim" PASS
	else
		check "$id: runs and prints result=OK without the shim" FAIL "exit $plain_rc"
		ran=0
	fi
	if [ "$shim_rc" = "$plain_rc" ] && cmp -s "$dir/plain.out" "$dir/shim.out"; then
		check "$id: same exit code and stdout under the shim" PASS
	else
		check "$id: same exit code and stdout under the shim" FAIL "exit $plain_rc without, $shim_rc with"
		diff "$dir/plain.out" "$dir/shim.out" 2>&1 | head -n 20 >>"$log_file"
		ran=0
	fi
	grep -v '^syncspy:' "$dir/shim.err" >"$dir/shim.err.own" 2>/dev/null
	if cmp -s "$dir/plain.err" "$dir/shim.err.own"; then
		check "$id: stderr unchanged apart from 'syncspy:' lines" PASS
	else
		check "$id: stderr unchanged apart from 'syncspy:' lines" FAIL
		diff "$dir/plain.err" "$dir/shim.err.own" 2>&1 | head -n 20 >>"$log_file"
	fi
	dbs=("$dir"/db/*.sqlite)
	if [ "${#dbs[@]}" -ne 1 ] || [ ! -f "${dbs[0]}" ] || ls "$dir"/db/*.partial >/dev/null 2>&1; then
		check "$id: one finished database" FAIL "$(ls "$dir/db" | tr '\n' ' ')"
		continue
	fi
	check "$id: one finished database" PASS
	[ "$ran" = 1 ] || { log "$id: not packed (the run failed)"; continue; }
	sed 's/^/  symbolize| /' "$dir/symbolize.out" >>"$log_file" 2>/dev/null
	sed 's/^/  report err| /' "$dir/report.err" >>"$log_file" 2>/dev/null
	if [ "$(cat "$dir/symbolize.rc" 2>/dev/null)" = 0 ]; then
		check "$id: symbolized" PASS "$(sed 's/^.*: //' "$dir/symbolize.out" | head -n1)"
	else
		check "$id: symbolized" FAIL "see corpus-run.log"
	fi
	if [ "$(cat "$dir/report.rc" 2>/dev/null)" = 0 ]; then
		python3 -c 'import json,sys; print(json.dumps({"trace": sys.argv[1], "report": json.load(open(sys.argv[2]))}))' \
			"$id" "$dir/report.json" >>"$results/corpus-reports.json" 2>>"$log_file"
		check "$id: syncspy report" PASS
	else
		check "$id: syncspy report" FAIL
	fi
	cp "${dbs[0]}" "$cwork/traces/$id.sqlite"
done < <(task_list)

(cd "$cwork/traces" && tar -czf "$results/corpus-traces.tar.gz" .) 2>>"$log_file" ||
	check "corpus-traces.tar.gz written" FAIL
# The device tool brings back files of at most 16 MiB: a larger tarball becomes two, the CUDA C
# and NCCL traces (c*, n*) and the others (d*, t*), corpus-traces-1.tar.gz and -2.tar.gz.
if [ "$(stat -c %s "$results/corpus-traces.tar.gz" 2>/dev/null || echo 0)" -gt $((15 * 1024 * 1024)) ]; then
	rm -f "$results/corpus-traces.tar.gz"
	(cd "$cwork/traces" && tar -czf "$results/corpus-traces-1.tar.gz" c* n* &&
		tar -czf "$results/corpus-traces-2.tar.gz" d* t*) 2>>"$log_file" ||
		check "corpus-traces-1.tar.gz and -2.tar.gz written" FAIL
fi
python3 "$corpus/score.py" --syncspy "$syncspy" --sources "$corpus" "$cwork/traces" \
	>"$results/corpus-score.txt" 2>>"$log_file" || check "scorer ran" FAIL "see corpus-run.log"
# Recorded with the callbacks' ties (`correlate` in SYNCSPY_CUPTI_KINDS), the report's ties by
# stream order (CUPTI-13) checked against them, one check per trace (tests/gpu/check_order.py).
if [[ ,${SYNCSPY_CUPTI_KINDS:-}, == *,correlate,* ]]; then
	python3 tests/gpu/check_order.py "$syncspy" "$cwork"/traces/*.sqlite \
		>"$results/corpus-order.txt" 2>>"$log_file"
	while IFS=$'\t' read -r trace ops _ _ _ _ _ _ _ _ verdict _; do
		case $verdict in
		ok) check "order ties: $trace ($ops ops)" PASS ;;
		LOW) check "order ties: $trace ($ops ops)" FAIL "see corpus-order.txt" ;;
		esac
	done <"$results/corpus-order.txt"
fi

{
	echo "# tests/gpu/corpus.sh: the labelled corpus recorded"
	echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)  (${SECONDS}s)"
	echo "build:   $(cat .carry/COMMIT 2>/dev/null || echo unknown)"
	echo "gpu:     $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -n1)"
	echo "torch:   $torch_version"
	echo "traces:  $(ls "$cwork/traces" | wc -l) in $(cd "$results" && echo corpus-traces*.tar.gz)"
	echo "result:  $failures check(s) failed of $(wc -l <"$cwork/checks")"
	echo
	grep -v '^PASS' "$cwork/checks"
	echo
	tail -n 1 "$results/corpus-score.txt" 2>/dev/null
} >"$summary"
cat "$summary"
# when run.sh runs it as a part: the traces, for its databases.tar.gz
[ -n "${CORPUS_KEEP:-}" ] && mkdir -p "$CORPUS_KEEP" && cp "$cwork"/traces/*.sqlite "$CORPUS_KEEP"/ 2>/dev/null
[ "$failures" -eq 0 ]
