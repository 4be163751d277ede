#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/run.sh: the end-to-end test of syncspy on a GPU machine (the H200), in one call.
#
# Runs the reference workloads of examples/ without and with LD_PRELOAD=libsyncspy.so, checks
# that the shim changes neither their output nor their exit code, checks each database against
# the workload's .expect file (tests/gpu/check_expect.py), and runs the overhead benchmark
# (bench/run.sh). Expects the build made elsewhere and carried in .carry/ (lib/libsyncspy.so,
# lib/libunwind.so.8, bin/syncspy); builds the CUDA examples itself with nvcc.
#
# The numbered reference workloads (examples/{cuda,torch,nccl}, each a bad and a fixed variant)
# run as independent tasks, JOBS at a time (default 6: they are small, the GPU has room): each
# runs without and with the shim, `syncspy report --format json` reads its database, and
# check_expect.py compares the findings with the .expect file's section for the variant and
# build. CUDA workloads are built twice, with -cudart shared and with nvcc's default static
# cudart (seen through the driver layer, checked against the [... static] sections). PyTorch
# workloads also run once with torch.cuda.set_sync_debug_mode("warn") to count its warnings.
# All of it ends in one table in summary.txt: workload, variant, build, expected findings, got,
# sync-debug warnings, PASS/FAIL/XFAIL.
#
#   tests/gpu/run.sh [RESULTS_DIR]     default: $OUT if set, else tests/gpu/results/<date-time>
#
# RESULTS_DIR receives at most 7 files, so that the device tool brings all of them back
# (it returns at most 8 files from $OUT):
#   summary.txt          one PASS/FAIL line per check, the workload table, the expectation
#                        tables, the bench table
#   run.log              every command run, with its output
#   bench-calls.txt      bench/run.sh's result file
#   databases.tar.gz     every database recorded (copies_syncs.sqlite, item_loop.sqlite,
#                        NAME-VARIANT-BUILD/*.sqlite)
#   reports.json         every `syncspy report --format json`, one JSON object per line:
#                        {"task": "NAME-VARIANT-BUILD", "report": {...}}
#   coverage.txt         check_coverage.py of a static-cudart program, a torch step (cuBLAS)
#                        and a driver-API program: syncspy's calls against CUPTI's records
#   bench-cupti.txt      bench/cupti_ab.sh: what CUPTI adds to the torch step, in one process,
#                        sampled (checked: 3%) and traced whole (reported)
#                        (its GPU timeline paused and resumed), beside torch.profiler
#
# Environment: TOTAL_BUDGET_S (default 300), JOBS (default 6), SKIP_BENCH=1 skips the benchmarks,
# ONLY=REGEX runs only the reference tasks whose name matches, REFERENCE_CUPTI=0 records the
# reference tasks without CUPTI (default: with it, as `syncspy run` does). PARTS="NAME ..." runs
# only those parts (default all): workloads (copies_syncs, item_loop), reference, cupti,
# coverage, procaddr (a few seconds: tests/progs/gpu_procaddr.c), bench-cupti, nvtx, pylines
# (under a minute: tests/gpu/python_lines.py), stack, bench-calls; the environment checks always
# run. The part corpus (tests/gpu/corpus.sh: the labelled corpus of examples/corpus recorded, its
# traces put into databases.tar.gz under corpus/) and the part python (tests/gpu/python.sh: the
# Python package with torch, about a minute) run only when PARTS names them: "all" would not
# fit one call.
# DEBUG_INFO=1 builds the reference workloads with -g (sites with file:line, at= lines checked).
#
# A failing step does not stop the others; every step has a time limit and the whole run a
# budget (TOTAL_BUDGET_S, default 300 s), past which remaining steps are skipped and fail.
# Exit status: 0 when every check passed, 1 otherwise.
set -u

root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root" || exit 1

results=${1:-${OUT:-$root/tests/gpu/results/$(date +%Y-%m-%d-%H%M%S)}}
mkdir -p "$results" || exit 1
results=$(cd "$results" && pwd)
log_file=$results/run.log
summary=$results/summary.txt
: >"$log_file"

work=$(mktemp -d "${TMPDIR:-/tmp}/syncspy-gpu.XXXXXX")
trap 'rm -rf "$work"' EXIT
: >"$work/checks"
: >"$work/tables"
: >"$work/table"
mkdir -p "$work/keep" "$work/bin" "$work/tasks"

shim=$root/.carry/lib/libsyncspy.so
syncspy=$root/.carry/bin/syncspy
jobs_max=${JOBS:-6}
only=${ONLY:-}
total_budget=${TOTAL_BUDGET_S:-300}
failures=0

# The shim's own dependencies (libunwind.so.8) travel in .carry/lib. NVLink multicast stays off
# on the shared machines (KINDS.md): a program using it can take the host's GPUs out of service.
export LD_LIBRARY_PATH="$root/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

log() { printf '%s\n' "$*" >>"$log_file"; }

# part NAME: whether PARTS (default all) asks for that part of the run (the header lists them).
part() {
	case " ${PARTS:-all} " in
	*" all "* | *" $1 "*) return 0 ;;
	esac
	return 1
}

section() {
	log ""
	log "=== $* ($(date -u +%H:%M:%S), ${SECONDS}s) ==="
	echo "--- $*"
}

# check NAME PASS|FAIL [DETAIL]: one line of the summary.
check() {
	local line="$2  $1${3:+  ($3)}"
	echo "$line" >>"$work/checks"
	log "CHECK: $line"
	echo "$line"
	[ "$2" = PASS ] || failures=$((failures + 1))
}

# checks_from FILE: a checker's "PASS  what" / "FAIL  what" lines (check_cupti.py,
# check_coverage.py) become checks of the run.
checks_from() {
	local line
	while IFS= read -r line; do
		case $line in
		PASS*) check "${line#PASS  }" PASS ;;
		FAIL*) check "${line#FAIL  }" FAIL ;;
		esac
	done <"$1"
}

# Seconds a step may take: its own limit, cut to what is left of the run's budget.
step_limit() {
	local left=$((total_budget - SECONDS))
	if [ "$left" -lt "$1" ]; then echo "$left"; else echo "$1"; fi
}

# run_cmd LIMIT STDOUT_FILE STDERR_FILE CMD...: runs CMD with a time limit, logs the command and
# its output, keeps stdout and stderr in the files given (/dev/null to drop them); returns CMD's
# exit status (124/137: timed out, 125: skipped for lack of time).
run_cmd() {
	local limit out err rc
	limit=$(step_limit "$1")
	out=$2
	err=$3
	shift 3
	log "+ $*"
	if [ "$limit" -lt 5 ]; then
		log "(skipped: the run's ${total_budget}s budget is spent)"
		return 125
	fi
	timeout --kill-after=10 "$limit" "$@" >"$work/last.out" 2>"$work/last.err"
	rc=$?
	sed 's/^/  out| /' "$work/last.out" >>"$log_file"
	sed 's/^/  err| /' "$work/last.err" >>"$log_file"
	log "(exit $rc)"
	[ "$out" = /dev/null ] || cp "$work/last.out" "$out"
	[ "$err" = /dev/null ] || cp "$work/last.err" "$err"
	return "$rc"
}

# run_bench LIMIT CHECK_NAME RESULT_FILE CMD...: a benchmark whose exit status is its verdict
# (0 within its targets, 1 some figure over, other: it did not run).
run_bench() {
	local limit=$1 name=$2 file=$3
	shift 3
	run_cmd "$limit" /dev/null /dev/null "$@"
	case $? in
	0) check "$name" PASS ;;
	1) check "$name" FAIL "some figure over its target, see $file" ;;
	*) check "$name" FAIL "the benchmark did not run, see run.log" ;;
	esac
}

# A database is done when it has its final name; a .partial left behind means it was not.
check_database() {
	local name=$1 dir=$2 dbs partials
	dbs=$(find "$dir" -maxdepth 1 -name '*.sqlite' 2>/dev/null | wc -l)
	partials=$(find "$dir" -maxdepth 1 -name '*.partial' 2>/dev/null | wc -l)
	log "databases in $dir:"
	ls -l "$dir" >>"$log_file" 2>&1
	if [ "$dbs" -ge 1 ] && [ "$partials" -eq 0 ]; then
		check "$name: database written and finished" PASS "$dbs file(s)"
	else
		check "$name: database written and finished" FAIL "$dbs *.sqlite, $partials *.partial"
	fi
}

# run_workload NAME LIMIT EXPECT_FILE RESULT_LINE_REGEX CMD...: the same workload without and
# with the shim; compares output and exit code, then checks the database against EXPECT_FILE.
run_workload() {
	local name=$1 limit=$2 expect=$3 result_re=$4
	shift 4
	local plain_rc shim_rc dbdir=$work/db-$name newest
	section "$name without the shim"
	run_cmd "$limit" "$work/$name.plain.out" "$work/$name.plain.err" "$@"
	plain_rc=$?
	if [ "$plain_rc" -eq 0 ] && grep -Eq "$result_re" "$work/$name.plain.out"; then
		check "$name: runs and verifies its result without the shim" PASS
	else
		check "$name: runs and verifies its result without the shim" FAIL "exit $plain_rc"
	fi

	section "$name with the shim"
	if [ ! -f "$shim" ]; then
		check "$name: same stdout and exit code under the shim" FAIL "no shim at $shim"
		return
	fi
	mkdir -p "$dbdir"
	run_cmd "$limit" "$work/$name.shim.out" "$work/$name.shim.err" \
		env LD_PRELOAD="$shim" SYNCSPY_OUTPUT="$dbdir" "$@"
	shim_rc=$?
	if [ "$shim_rc" -eq "$plain_rc" ] && cmp -s "$work/$name.plain.out" "$work/$name.shim.out"; then
		check "$name: same stdout and exit code under the shim" PASS "exit $shim_rc"
	else
		check "$name: same stdout and exit code under the shim" FAIL \
			"exit $plain_rc without, $shim_rc with"
		log "stdout diff (without vs with):"
		diff "$work/$name.plain.out" "$work/$name.shim.out" >>"$log_file" 2>&1
	fi
	# stderr may differ only by the shim's own lines.
	grep -v '^syncspy:' "$work/$name.shim.err" >"$work/$name.shim.err.own"
	if cmp -s "$work/$name.plain.err" "$work/$name.shim.err.own"; then
		check "$name: stderr unchanged apart from 'syncspy:' lines" PASS
	else
		check "$name: stderr unchanged apart from 'syncspy:' lines" FAIL "see run.log"
		log "stderr diff (without vs with, syncspy: lines removed):"
		diff "$work/$name.plain.err" "$work/$name.shim.err.own" >>"$log_file" 2>&1
	fi
	if grep -Eq '^syncspy: rank [^:]+: [0-9]+ sync points, [0-9]+ enqueues -> ' \
		"$work/$name.shim.err"; then
		check "$name: shim's exit summary on stderr" PASS \
			"$(grep -Eo '[0-9]+ sync points, [0-9]+ enqueues' "$work/$name.shim.err" | tail -n1)"
	else
		check "$name: shim's exit summary on stderr" FAIL "no 'syncspy: rank R: ...' line"
	fi
	check_database "$name" "$dbdir"

	section "$name database against $expect"
	run_cmd 60 "$work/$name.expect.out" "$work/$name.expect.err" \
		python3 tests/gpu/check_expect.py "$dbdir" "$expect" --summary
	case $? in
	0) check "$name: database matches $expect" PASS ;;
	1) check "$name: database matches $expect" FAIL "expectations not met, see summary" ;;
	*) check "$name: database matches $expect" FAIL "could not check, see run.log" ;;
	esac
	{
		echo
		echo "### $name: $expect"
		sed '/^meta:$/,$d' "$work/$name.expect.out"
		cat "$work/$name.expect.err"
	} >>"$work/tables" 2>/dev/null
	newest=$(ls -t "$dbdir"/*.sqlite 2>/dev/null | head -n1)
	if [ -n "$newest" ]; then
		cp "$newest" "$work/keep/$name.sqlite"
		log "kept $newest as $name.sqlite in databases.tar.gz"
	fi
}

# --- (a) what the machine is
section "environment"
log "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)  host: $(hostname)  kernel: $(uname -r)"
# the device copy has no .git: the build's commit travels in .carry/COMMIT (tests/gpu/README.md)
# (a .git there may be an older copy's: the build's commit is named beside it)
commit="$(git rev-parse --verify -q HEAD 2>/dev/null || echo "no .git"); build (.carry/COMMIT): $(cat .carry/COMMIT 2>/dev/null || echo unknown)"
log "commit: $commit"
run_cmd 30 /dev/null /dev/null nvidia-smi -L
run_cmd 30 /dev/null /dev/null nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
run_cmd 30 "$work/nvcc.out" /dev/null nvcc --version
run_cmd 120 "$work/torch.out" /dev/null \
	python3 -c 'import torch; print(torch.__version__, torch.cuda.is_available())'
if grep -q ' True$' "$work/torch.out" 2>/dev/null; then
	check "torch sees the GPU" PASS "$(cat "$work/torch.out")"
else
	check "torch sees the GPU" FAIL "$(cat "$work/torch.out" 2>/dev/null)"
fi

# --- (b) the carried build
section "carried build"
ls -l .carry/lib .carry/bin >>"$log_file" 2>&1
if [ -f "$shim" ]; then
	check "shim present" PASS "$shim"
else
	check "shim present" FAIL "no $shim"
fi
run_cmd 30 /dev/null /dev/null ldd "$shim"

# Python's own sqlite3 module must keep working under the shim (docs/architecture.md F7: the shim's
# storage engine stays out of the process's global symbol scope).
section "python sqlite3 under the shim"
pysql='import sqlite3; c = sqlite3.connect(":memory:"); c.execute("create table t(x)"); '
pysql+='c.execute("insert into t values (42)"); print(sqlite3.sqlite_version, c.execute("select x from t").fetchone()[0])'
run_cmd 60 "$work/pysql.plain" /dev/null python3 -c "$pysql"
run_cmd 60 "$work/pysql.shim" /dev/null \
	env LD_PRELOAD="$shim" SYNCSPY_OUTPUT="$work/db-pysqlite" python3 -c "$pysql"
pysql_rc=$?
if [ "$pysql_rc" -eq 0 ] && cmp -s "$work/pysql.plain" "$work/pysql.shim"; then
	check "python's sqlite3 module works under the shim" PASS "$(cat "$work/pysql.shim")"
else
	check "python's sqlite3 module works under the shim" FAIL "exit $pysql_rc"
fi

# --- (c)+(d) the CUDA workload, built with the shared runtime so LD_PRELOAD sees its calls
if part workloads; then
section "build examples/cuda/copies_syncs"
if run_cmd 180 /dev/null /dev/null \
	nvcc -O2 -arch=sm_90 -cudart shared -o "$work/copies_syncs" examples/cuda/copies_syncs.cu; then
	check "copies_syncs: builds with nvcc -cudart shared" PASS
	run_workload copies_syncs 120 examples/cuda/copies_syncs.expect \
		'^copies_syncs: .* result=OK$' "$work/copies_syncs"
else
	check "copies_syncs: builds with nvcc -cudart shared" FAIL
fi

# --- (e) the torch workload
run_workload item_loop 180 examples/torch/item_loop.expect \
	'^item_loop: steps=60 .* loss_fell=yes$' python3 examples/torch/item_loop.py
fi # part workloads

# --- (e2) the numbered reference workloads, bad and fixed, as parallel tasks
if part reference; then
. "$root/tests/gpu/reference.sh"
run_reference_workloads
fi # part reference

# --- (f) overhead benchmark
# CUPTI (docs/cupti.md): copies_syncs once more with SYNCSPY_CUPTI=1, its GPU rows checked against
# the callbacks' ties (`correlate`; the default kinds make none: CUPTI-12).
if part cupti; then
section "CUPTI: copies_syncs with SYNCSPY_CUPTI=1"
[ -x "$work/copies_syncs" ] || run_cmd 180 /dev/null /dev/null \
	nvcc -O2 -arch=sm_90 -cudart shared -o "$work/copies_syncs" examples/cuda/copies_syncs.cu
if [ -x "$work/copies_syncs" ]; then
	rm -rf "$work/db-cupti" && mkdir -p "$work/db-cupti"
	run_cmd 120 "$work/cupti.out" "$work/cupti.err" \
		env LD_PRELOAD="$shim" SYNCSPY_CUPTI=1 SYNCSPY_OUTPUT="$work/db-cupti" \
		SYNCSPY_CUPTI_KINDS=kernel,memcpy,memset,sync,event,correlate "$work/copies_syncs"
	cupti_db=$(ls -t "$work"/db-cupti/*.sqlite 2>/dev/null | head -n1)
	if [ -n "$cupti_db" ]; then
		cp "$cupti_db" "$work/keep/copies_syncs-cupti.sqlite"
		run_cmd 60 "$work/cupti-check.out" /dev/null python3 tests/gpu/check_cupti.py "$cupti_db"
		checks_from "$work/cupti-check.out"
	else
		check "cupti: database written" FAIL
	fi
else
	check "cupti: copies_syncs built" FAIL
fi
fi # part cupti

# Coverage (issue 3): a static-cudart program, a torch step with cuBLAS and a driver-API program,
# each recorded with CUPTI on and cross-checked against CUPTI's records (check_coverage.py).
# SYNCSPY_ENQUEUE_TIMING=1: enqueue rows then carry both ends, so calls match by time.
# SYNCSPY_CUPTI_SAMPLE=all: CUPTI traces the whole run (the default samples it in windows, and a
# call outside them has no CUPTI record to compare with); `api`: CUPTI's API records to compare
# with (the default kinds make none: CUPTI-12).
if part coverage; then
section "coverage against CUPTI"
coverage_run() { # NAME EXPECT CMD...
	local name=$1 expect=$2 db
	shift 2
	rm -rf "$work/db-cov-$name" && mkdir -p "$work/db-cov-$name"
	run_cmd 120 "$work/cov-$name.plain" /dev/null "$@"
	run_cmd 120 "$work/cov-$name.shim" /dev/null env LD_PRELOAD="$shim" SYNCSPY_CUPTI=1 \
		SYNCSPY_CUPTI_SAMPLE=all SYNCSPY_ENQUEUE_TIMING=1 SYNCSPY_OUTPUT="$work/db-cov-$name" \
		SYNCSPY_CUPTI_KINDS=kernel,memcpy,memset,sync,event,api "$@"
	if cmp -s "$work/cov-$name.plain" "$work/cov-$name.shim" &&
		grep -Eq 'result=OK|loss_fell=yes' "$work/cov-$name.plain"; then
		check "coverage $name: same result and output with the shim and CUPTI" PASS
	else
		check "coverage $name: same result and output with the shim and CUPTI" FAIL
	fi
	db=$(ls -t "$work/db-cov-$name"/*.sqlite 2>/dev/null | head -n1)
	[ -n "$db" ] || { check "coverage $name: database written" FAIL; return; }
	cp "$db" "$work/keep/coverage-$name.sqlite"
	run_cmd 120 "$work/cov-$name.check" /dev/null \
		python3 tests/gpu/check_coverage.py "$db" "$name" ${expect:+--expect "$expect"}
	checks_from "$work/cov-$name.check"
	{ echo "### $name"; cat "$work/cov-$name.check"; echo; } >>"$results/coverage.txt"
}
: >"$results/coverage.txt"
if run_cmd 180 /dev/null /dev/null nvcc -O2 -arch=sm_90 -o "$work/copies_syncs_static" \
	examples/cuda/copies_syncs.cu; then
	coverage_run copies_syncs_static "" "$work/copies_syncs_static"
else
	check "coverage: copies_syncs builds with the static cudart" FAIL
fi
if run_cmd 120 /dev/null /dev/null nvcc -cubin -arch=sm_90 -o "$work/driver_api_kernel.cubin" \
	examples/cuda/driver_api_kernel.cu &&
	run_cmd 120 /dev/null /dev/null nvcc -cudart none -o "$work/driver_api" \
		examples/cuda/driver_api.c -lcuda; then
	coverage_run driver_api launches=20,copies=41,memsets=1,event_syncs=20,stream_syncs=1,ctx_syncs=1 \
		"$work/driver_api" "$work/driver_api_kernel.cubin"
else
	check "coverage: driver_api builds" FAIL
fi
coverage_run item_loop "" python3 examples/torch/item_loop.py
fi # part coverage

# Lookups the shim once missed (issue 14 item 4): a program that links libcuda and calls
# cuGetProcAddress itself, and a ctypes-style dlopen + dlsym of libcudart.so.13. Each runs
# without and with the shim (same output and exit code), then its rows are counted: every
# call through the pointers once, under its name, and no driver row inside the runtime's calls.
if part procaddr; then
section "cuGetProcAddress called directly, libcudart looked up by name"
procaddr_run() { # NAME EXPECTED CMD...: EXPECTED "api=count,..." (layer-qualified by the check)
	local name=$1 expected=$2 plain_rc shim_rc db got
	shift 2
	rm -rf "$work/db-$name" && mkdir -p "$work/db-$name"
	run_cmd 60 "$work/$name.plain" /dev/null "$@"
	plain_rc=$?
	run_cmd 60 "$work/$name.shim" /dev/null env LD_PRELOAD="$shim" SYNCSPY_OUTPUT="$work/db-$name" "$@"
	shim_rc=$?
	if [ "$plain_rc" -eq 0 ] && [ "$shim_rc" -eq 0 ] && grep -q 'result=OK' "$work/$name.plain" &&
		cmp -s "$work/$name.plain" "$work/$name.shim"; then
		check "$name: same output and exit code with the shim" PASS "$(grep -o 'checksum=[0-9a-f]*' "$work/$name.plain")"
	else
		check "$name: same output and exit code with the shim" FAIL "exit $plain_rc without, $shim_rc with"
	fi
	db=$(ls -t "$work/db-$name"/*.sqlite 2>/dev/null | head -n1)
	[ -n "$db" ] || { check "$name: database written" FAIL; return; }
	cp "$db" "$work/keep/$name.sqlite"
	got=$(python3 -c "
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
counts = dict(db.execute('SELECT layer || \':\' || api, count(*) FROM api_calls GROUP BY 1'))
span = db.execute(\"SELECT min(start_ns), max(end_ns) FROM api_calls WHERE layer = 'runtime'\").fetchone()
inner = db.execute(\"SELECT count(*) FROM api_calls WHERE layer = 'driver' AND start_ns BETWEEN ? AND ?\", span).fetchone()[0] if span[0] else 0
want = dict(kv.split('=') for kv in sys.argv[2].split(','))
print(','.join('%s=%d' % (k, counts.get(k, 0)) for k in want) + (',driver_inside_runtime=%d' % inner if span[0] else ''))
" "$db" "$expected" 2>&1)
	local want=$expected
	case $expected in runtime:*) want="$expected,driver_inside_runtime=0" ;; esac
	if [ "$got" = "$want" ]; then
		check "$name: each call through the looked-up pointers recorded once" PASS "$got"
	else
		check "$name: each call through the looked-up pointers recorded once" FAIL "got $got, want $want"
	fi
}
if run_cmd 120 /dev/null /dev/null nvcc -O2 -cudart none -o "$work/gpu_procaddr" \
	tests/progs/gpu_procaddr.c -lcuda -ldl; then
	check "gpu_procaddr: builds with nvcc -lcuda" PASS
	procaddr_run procaddr_direct \
		driver:cuStreamSynchronize=30,driver:cuStreamSynchronize_ptsz=2,driver:cuCtxSynchronize=3,driver:cuMemcpyHtoDAsync_v2=30 \
		"$work/gpu_procaddr" direct 30
	cudart_so=$(dirname "$(command -v nvcc)")/../lib64/libcudart.so.13
	[ -f "$cudart_so" ] || cudart_so=libcudart.so.13
	procaddr_run procaddr_cudart \
		runtime:cudaMemcpyAsync=20,runtime:cudaStreamSynchronize=20,runtime:cudaDeviceSynchronize=1,driver:cuCtxSynchronize=3 \
		"$work/gpu_procaddr" cudart 20 "$cudart_so"
else
	check "gpu_procaddr: builds with nvcc -lcuda" FAIL
fi
fi # part procaddr

# CUPTI's cost on the torch reference loop, beside torch.profiler's (target 3%): with the GPU
# timeline sampled (SYNCSPY_CUPTI_SAMPLE, CUPTI-4), which the check holds to 3%, and traced
# whole, whose figure is reported beside it (the launch-bound loop's kernel records alone cost
# more than 3%: docs/cupti.md).
if part bench-cupti; then
section "bench/cupti_ab.sh"
if [ "${SKIP_BENCH:-0}" != 1 ]; then
	run_bench 300 "bench: CUPTI sampled 100 of 1000 ms adds at most 3% to the torch step" \
		bench-cupti.txt env SAMPLE=100/1000 bash bench/cupti_ab.sh "$results/bench-cupti.txt"
	run_cmd 300 /dev/null /dev/null bash bench/cupti_ab.sh "$results/bench-cupti.txt"
	log "bench: CUPTI traced whole: $(grep "^syncspy's CUPTI adds" "$results/bench-cupti.txt" | tail -n1)"
fi
fi # part bench-cupti

# NVTX injection with torch (docs/attribution.md): 10 "step" ranges, each holding its sync.
if part nvtx; then
section "NVTX: torch.cuda.nvtx ranges"
rm -rf "$work/db-nvtx" && mkdir -p "$work/db-nvtx"
run_cmd 120 "$work/nvtx.out" "$work/nvtx.err" env LD_PRELOAD="$shim" \
	NVTX_INJECTION64_PATH="$shim" SYNCSPY_OUTPUT="$work/db-nvtx" python3 tests/gpu/nvtx_torch.py
nvtx_db=$(ls -t "$work"/db-nvtx/*.sqlite 2>/dev/null | head -n1)
nvtx_ranges=$([ -n "$nvtx_db" ] && python3 -c "
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print(db.execute(\"SELECT count(*), sum((SELECT count(*) FROM calls c WHERE c.tid = r.tid AND c.start_ns >= r.start_ns AND c.end_ns <= r.end_ns AND c.class = 'S2') > 0) FROM ranges r WHERE kind = 'push' AND name = 'step'\").fetchone())" "$nvtx_db")
if [ "$nvtx_ranges" = "(10, 10)" ]; then
	check "nvtx: 10 step ranges, each holding its .item() sync" PASS
else
	check "nvtx: 10 step ranges, each holding its .item() sync" FAIL "${nvtx_ranges:-no database}"
fi
fi # part nvtx

# Python frames named at the sync itself (issue 14, docs/attribution.md): a torch sync from each
# bytecode shape (mask subscript, bool of a comparison, format, print, iteration, .item(),
# .tolist(), torch.nonzero, a call) and from a threading.Thread, each line marked in
# tests/gpu/python_lines.py; check_python_lines.py asserts every sync names its own line.
if part pylines; then
section "python lines: each torch sync named by its own line"
rm -rf "$work/db-pylines" && mkdir -p "$work/db-pylines"
run_cmd 60 "$work/pylines.out" "$work/pylines.err" env LD_PRELOAD="$shim" \
	SYNCSPY_OUTPUT="$work/db-pylines" python3 tests/gpu/python_lines.py
pylines_rc=$?
pylines_python=$(python3 -c 'import sys; print("python %d.%d.%d" % sys.version_info[:3])' 2>&1)
if [ "$pylines_rc" = 0 ] && grep -q '^python_lines: done' "$work/pylines.out"; then
	check "python lines: the script ran under the shim" PASS "$pylines_python"
else
	check "python lines: the script ran under the shim" FAIL "exit $pylines_rc, $pylines_python"
fi
pylines_db=$(ls -t "$work"/db-pylines/*.sqlite 2>/dev/null | head -n1)
if [ -n "$pylines_db" ]; then
	cp "$pylines_db" "$work/keep/python_lines.sqlite"
	run_cmd 60 "$work/pylines-check.out" /dev/null \
		python3 tests/gpu/check_python_lines.py "$pylines_db" tests/gpu/python_lines.py
	checks_from "$work/pylines-check.out"
	log "$pylines_python; the script's sync points (site, api):"
	python3 -c "
import sqlite3, sys
for row in sqlite3.connect(sys.argv[1]).execute(
        \"SELECT site, api FROM api_calls WHERE site LIKE '%python_lines.py:%' ORDER BY start_ns\"):
    print('  ' + ' '.join(row))" "$pylines_db" >>"$log_file" 2>&1
else
	check "python lines: a database was written" FAIL
fi
fi # part pylines

# The cost of stacks on a sync point (bench/stack_cost.sh; target 2 us).
if part stack; then
section "bench/stack_cost.sh"
if [ "${SKIP_BENCH:-0}" != 1 ]; then
	run_cmd 240 "$work/stack-cost.log" /dev/null bash bench/stack_cost.sh "$work/stack-cost.txt"
	verdict=$(grep '^added to an idle stream sync' "$work/stack-cost.txt" 2>/dev/null)
	case $verdict in
	*": PASS") check "stack cost within 2 us per sync" PASS "$verdict" ;;
	*) check "stack cost within 2 us per sync" FAIL "${verdict:-no result}" ;;
	esac
	cat "$work/stack-cost.txt" >>"$work/tables" 2>/dev/null
	# the same stacks inside a real step (a report: docs/attribution.md, "What stacks cost")
	run_cmd 180 "$work/torch-stack-cost.log" /dev/null \
		bash bench/torch_stack_cost.sh "$work/torch-stack-cost.txt"
	cat "$work/torch-stack-cost.txt" >>"$work/tables" 2>/dev/null
fi
fi # part stack

if part bench-calls; then
section "bench/run.sh"
if [ "${SKIP_BENCH:-0}" = 1 ]; then
	log "skipped: SKIP_BENCH=1"
else
	run_bench 300 "bench: overhead within targets" bench-calls.txt \
		bash bench/run.sh "$results/bench-calls.txt"
fi
fi # part bench-calls

# The labelled corpus (issue 13): tests/gpu/corpus.sh does the work; its checks and log join
# this run's, its traces go into databases.tar.gz (corpus/NAME.sqlite).
case " ${PARTS:-} " in
*" corpus "*)
	section "labelled corpus (tests/gpu/corpus.sh)"
	CORPUS_KEEP=$work/keep/corpus TOTAL_BUDGET_S=$((total_budget - SECONDS)) \
		bash tests/gpu/corpus.sh "$work/corpus" >/dev/null 2>&1
	cat "$work/corpus/corpus-run.log" >>"$log_file" 2>/dev/null
	if [ -f "$work/corpus/corpus-summary.txt" ]; then
		checks_from "$work/corpus/corpus-summary.txt"
		grep -q '^FAIL' "$work/corpus/corpus-summary.txt" ||
			check "corpus: every workload recorded and checked" PASS \
				"$(grep '^traces:' "$work/corpus/corpus-summary.txt")"
		cp "$work/corpus/corpus-score.txt" "$work/keep/corpus-score.txt" 2>/dev/null
	else
		check "corpus: tests/gpu/corpus.sh ran" FAIL
	fi ;;
esac

# The Python package (issue 16): tests/gpu/python.sh installs the carried wheel offline into a
# venv and runs the guard, the recording, the pytest plugin, load() and the guard's bench with
# torch; its PASS/FAIL/SKIP lines join this run's checks (SKIP lines as they are, in the log).
case " ${PARTS:-} " in
*" python "*)
	section "the Python package (tests/gpu/python.sh)"
	timeout -s KILL "$(step_limit 240)" bash tests/gpu/python.sh "$work/python" >/dev/null 2>&1
	cat "$work/python/python.log" >>"$log_file" 2>/dev/null
	if [ -f "$work/python/python-summary.txt" ]; then
		grep -E '^(PASS|FAIL) ' "$work/python/python-summary.txt" | sed 's/^\(PASS\|FAIL\) /\1  python: /' >"$work/python/checks"
		checks_from "$work/python/checks"
		grep '^SKIP' "$work/python/python-summary.txt" >>"$log_file"
	else
		check "python: tests/gpu/python.sh ran" FAIL
	fi ;;
esac

# --- (f2) the databases and reports, one file each
(cd "$work/keep" && tar -czf "$results/databases.tar.gz" .) 2>>"$log_file" ||
	check "databases.tar.gz written" FAIL

# --- (g) summary
{
	echo "# syncspy GPU end-to-end test: tests/gpu/run.sh"
	echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)  (${SECONDS}s)"
	echo "commit:  $commit"
	echo "host:    $(hostname)  $(uname -r)"
	echo "gpu:     $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -n1)"
	echo "nvcc:    $(grep -o 'release [0-9.]*, V[0-9.]*' "$work/nvcc.out" 2>/dev/null)"
	echo "torch:   $(cat "$work/torch.out" 2>/dev/null)"
	echo "result:  $failures check(s) failed of $(wc -l <"$work/checks")"
	echo
	cat "$work/checks"
	echo
	echo "## reference workloads (findings of syncspy report against examples/*/NN_*.expect)"
	cat "$work/table"
	echo
	echo "## expectations"
	cat "$work/tables"
	echo
	echo "## bench (bench-calls.txt)"
	if [ -f "$results/bench-calls.txt" ]; then
		sed -n '/^call /,/^$/p' "$results/bench-calls.txt"
	else
		echo "(no result file)"
	fi
} >"$summary"

echo
cat "$summary"
[ "$failures" -eq 0 ]
