#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/gpu/exit_hunt.sh OUT_DIR: runs the PyTorch reference workloads (examples/torch) under the
# shim's default many times, 7 processes at once on core pairs 2-3 .. 14-15, for HUNT_S seconds
# (default 150), looking for a crash that comes once in tens of runs (session 25's SIGSEGV at
# exit: 4 of 168 processes, tests/gpu/results/2026-12-06-session26). In turn: the in-process A/B
# (EXAMPLES_AB=20 after AB_WARMUP=4, as bench/reference_ab.sh runs it) of 10_print_tensor, of
# 08_item_per_step, of 09, 11, 12 and 13 by rotation, and a plain run of each of the six.
# tests/gpu/segv_trace.c is built and preloaded beside the shim: a fatal signal writes its native
# stack (LIBRARY+OFFSET: `addr2line -e .carry/lib/libsyncspy.so OFFSET` here names the line).
# Writes OUT_DIR/status.txt (one line per process: run, workload, blocks, exit status) and, for
# each process whose status is neither 0 nor 1 (the workloads' own results), its stderr, its
# database files and their meta.cupti* in OUT_DIR/crashes.txt. Exit 0: no crash; 1: a crash;
# 2: cannot run (no carried build, no compiler).
set -u
out=${1:?usage: exit_hunt.sh OUT_DIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
shim=$root/.carry/lib/libsyncspy.so
[ -f "$shim" ] || { echo "exit_hunt.sh: no carried build (tests/gpu/carry.sh)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O1 -shared -fPIC -o "$work/segv_trace.so" "$root/tests/gpu/segv_trace.c" || exit 2
mkdir -p "$out"
others=(09_nonblocking_pageable 11_synchronize_per_step 12_stream_prefetcher 13_data_dependent_shapes)
all=(08_item_per_step 09_nonblocking_pageable 10_print_tensor 11_synchronize_per_step
	12_stream_prefetcher 13_data_dependent_shapes)
hunt_s=${HUNT_S:-150}
start=$SECONDS
i=0
cd "$root/examples/torch" || exit 2
while [ $((SECONDS - start)) -lt "$hunt_s" ]; do
	for slot in 1 2 3 4 5 6 7; do
		i=$((i + 1))
		case $((i % 4)) in
		0) w=10_print_tensor blocks=20 ;;
		1) w=08_item_per_step blocks=20 ;;
		2) w=${others[$(((i / 4) % 4))]} blocks=20 ;;
		3) w=${all[$(((i / 4) % 6))]} blocks=0 ;;
		esac
		(PYTHONFAULTHANDLER=1 EXAMPLES_AB=$blocks AB_WARMUP=4 EXAMPLES_AB_MODE=shim SYNCSPY_QUIET=1 \
			SYNCSPY_OUTPUT=$work/d$i LD_PRELOAD="$shim $work/segv_trace.so" \
			taskset -c $((2 * slot))-$((2 * slot + 1)) timeout 120 python3 "$w.py" bad \
			>"$work/o$i" 2>"$work/e$i"
		 echo "run $i $w blocks $blocks status $?" >>"$work/status") &
	done
	wait
done
sort -k2 -n "$work/status" >"$out/status.txt"
crashes=$(grep -vc "status [01]$" "$out/status.txt")
echo "exit_hunt: $(wc -l <"$out/status.txt") processes in $((SECONDS - start)) s, $crashes with another status"
for run in $(grep -v "status [01]$" "$out/status.txt" | awk '{print $2}'); do
	{
		grep "^run $run " "$out/status.txt"
		grep -v "^ab_" "$work/e$run" | tail -120
		ls -la "$work/d$run"
		for db in "$work/d$run"/*.sqlite "$work/d$run"/*.sqlite.partial; do
			[ -f "$db" ] || continue
			mkdir -p "$work/copy" && rm -f "$work/copy"/* && cp "$db"* "$work/copy/"
			python3 - "$work/copy/$(basename "$db")" <<'PY'
import sqlite3, sys
try:
    db = sqlite3.connect(sys.argv[1])
    for key, value in db.execute("SELECT key, value FROM meta WHERE key LIKE 'cupti%' ORDER BY key"):
        print("meta", key, value)
except sqlite3.Error as e:
    print("meta:", e)
PY
		done
	} >>"$out/crashes.txt"
done
[ "$crashes" = 0 ]
