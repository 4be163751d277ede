#!/usr/bin/env bash
# tests/gpu/results/2026-12-05-h200-session14/c75_crash.sh: run 3's probe of run 1's one crash
# (c75_column_scan_monitor_thread_readback, static cudart, exit 139 under the shim): how often,
# under which settings, and where (cuda-gdb's backtrace of every thread). Writes $OUT/c75-crash.txt.
set -u
shim=$PWD/.carry/lib/libsyncspy.so
src=examples/corpus/c75_column_scan_monitor_thread_readback.cu
log=$OUT/c75-crash.txt
w=$(mktemp -d)
nvcc -O2 -g -arch=sm_90 -o $w/c75s $src -lpthread && nvcc -O2 -g -arch=sm_90 -cudart shared -o $w/c75d $src -lpthread || exit 2
one() { # LABEL BINARY ENV...
	local label=$1 bin=$2; shift 2
	rm -rf $w/db
	env "$@" LD_PRELOAD=$shim SYNCSPY_OUTPUT=$w/db SYNCSPY_QUIET=1 timeout 60 $bin >$w/o 2>$w/e
	echo "$label rc=$? $(ls $w/db | tr '\n' ' ') | $(tail -c 200 $w/o | tr '\n' ' ') | $(grep -v '^syncspy' $w/e | tail -c 300 | tr '\n' ' ')"
}
{
	echo "# $(cat .carry/COMMIT) $(date -u +%FT%TZ)"
	for i in 1 2 3 4; do one "static default #$i" $w/c75s; done
	for i in 1 2; do one "shared default #$i" $w/c75d; done
	for i in 1 2; do one "static CUPTI=0 #$i" $w/c75s SYNCSPY_CUPTI=0; done
	for i in 1 2; do one "static STACK_DEPTH=0 #$i" $w/c75s SYNCSPY_STACK_DEPTH=0; done
	one "static SAMPLE=all" $w/c75s SYNCSPY_CUPTI_SAMPLE=all
	one "static DISABLE=1" $w/c75s SYNCSPY_DISABLE=1
	echo "## cuda-gdb, static, default"
	rm -rf $w/db
	timeout 90 cuda-gdb -batch -ex 'set pagination off' -ex "set environment LD_PRELOAD=$shim" \
		-ex "set environment SYNCSPY_OUTPUT=$w/db" -ex run -ex 'info registers rip' -ex 'x/6i $pc' \
		-ex 'thread apply all bt 40' -ex 'info sharedlibrary' --args $w/c75s 2>&1 | tail -n 250
} >$log 2>&1
cp $w/c75s $OUT/ 2>/dev/null
