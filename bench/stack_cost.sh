#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/stack_cost.sh [RESULT_FILE]: the cost of a sync point's stacks on a GPU machine.
# RESULT_FILE is appended to (default: standard output), so that runs can share one file.
# PIN=CPU runs every process on that core (taskset); CALLS calls per measure (default 5000).
# Runs bench/stack_cost.py under the shim (.carry/lib/libsyncspy.so) with stacks off
# (SYNCSPY_STACK_DEPTH=0) and on (32), alternating, ROUNDS rounds (default 7), and prints each
# process's median and the added cost per sync call (target: at most 2000 ns): the median over
# rounds of (on - off) within a round, the two runs of a round being next to each other in time
# (between processes the H200 machine's figures drift by microseconds), with the rounds' spread. CUPTI off (SYNCSPY_CUPTI=0): the stacks'
# cost alone.
set -u
. "$(dirname "$0")/torch-lib.sh"
rounds=${ROUNDS:-7}
# "32py": Python frames alone, native stacks off because libunwind.so.8 is not found (the
# library path without .carry/lib; on a machine with a system libunwind, meta.native_stacks of
# its databases says "libunwind" and the line is marked so below).
nolib=$(printf '%s' "$LD_LIBRARY_PATH" | tr ':' '\n' | grep -vxF "$root/.carry/lib" | paste -sd: -)
for round in $(seq "$rounds"); do
	for depth in 0 32 32py; do
		SYNCSPY_STACK_DEPTH=${depth%py} SYNCSPY_CUPTI=0 SYNCSPY_QUIET=1 SYNCSPY_OUTPUT="$tmp/db-$depth-$round" \
			LD_LIBRARY_PATH=$([ "$depth" = 32py ] && echo "$nolib" || echo "$LD_LIBRARY_PATH") \
			LD_PRELOAD="$shim" ${PIN:+taskset -c "$PIN"} python3 "$root/bench/stack_cost.py" "${CALLS:-5000}" |
			sed -n "s/^\([a-z]*\)_ns median /\1 $round $depth /p" >>"$tmp/results"
	done
done
native_py=$(python3 -c "
import sqlite3, sys
print(sqlite3.connect(sys.argv[1]).execute(\"SELECT value FROM meta WHERE key = 'native_stacks'\").fetchone()[0])" \
	"$(ls "$tmp"/db-32py-1/*.sqlite | head -n1)" 2>&1)
# The shim's own timing of the same stacks (meta.stack_cost_*_ns / meta.stacks_taken), per
# process with stacks on: no noise between processes, but only the work inside the shim.
self_timed=$(python3 - "$tmp" <<'PY'
import glob, sqlite3, statistics, sys
per_sync, python, steady = [], [], []
for path in glob.glob(sys.argv[1] + "/db-32-*/*.sqlite"):
    meta = dict(sqlite3.connect(path).execute("SELECT key, value FROM meta"))
    taken = int(meta.get("stacks_taken", 0))
    if taken:
        per_sync.append((int(meta["stack_cost_native_ns"]) + int(meta["stack_cost_python_ns"])) / taken)
        python.append(int(meta["stack_cost_python_ns"]) / taken)
    repeated = int(meta.get("stacks_repeated", 0))
    if repeated:  # a stack the thread had taken before: the loop's steady state
        steady.append(int(meta["stack_cost_repeated_ns"]) / repeated)
if per_sync:
    print("as the shim timed them (meta.stack_cost_*_ns): %d ns per sync point on average, Python %d "
          "of it (median of %d processes, %d..%d)" % (statistics.median(per_sync),
                                                     statistics.median(python), len(per_sync),
                                                     min(per_sync), max(per_sync)))
if steady:
    print("as the shim timed them, once a stack was known (meta.stack_cost_repeated_ns): %d ns per sync point "
          "(median of %d processes, %d..%d)" % (statistics.median(steady), len(steady),
                                                min(steady), max(steady)))
else:
    print("as the shim timed them: no database with stacks")
PY
)
{
	echo "# bench/stack_cost.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) $(nvidia-smi -L 2>/dev/null | head -n1)"
	echo "# measure round depth median_ns (depth 32py: Python frames only, meta.native_stacks: $native_py)"
	cat "$tmp/results"
	# medians in Python: the GPU machine's awk (mawk) has no sort
	python3 - "$tmp/results" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    measure, rnd, depth, ns = line.split()
    runs.setdefault(measure, {}).setdefault(rnd, {})[depth] = float(ns)
status = 0
for measure, label in (("sync", "an idle stream sync (the target's)"), ("item", "an .item()")):
    diffs = [r["32"] - r["0"] for r in runs.get(measure, {}).values() if "0" in r and "32" in r]
    if not diffs:
        print("%s: no complete round: FAIL" % label)
        status = 1
        continue
    added = statistics.median(diffs)
    alone = statistics.median(r["0"] for r in runs[measure].values() if "0" in r)
    print("%s per-round added ns: %s" % (measure, " ".join("%d" % d for d in diffs)))
    py = [r["32py"] - r["0"] for r in runs[measure].values() if "0" in r and "32py" in r]
    if py:
        print("  of which Python frames alone (32py - 0): %d ns (median of %d rounds, spread %d..%d)"
              % (statistics.median(py), len(py), min(py), max(py)))
    verdict = ""
    if measure == "sync":
        verdict = ": PASS" if added <= 2000 else ": FAIL"
        status |= added > 2000
    print("added to %s by native+Python stacks: %d ns (median of %d rounds, spread %d..%d; the "
          "call alone %d ns; target 2000)%s" % (label, added, len(diffs), min(diffs),
                                                 max(diffs), alone, verdict))
sys.exit(status)
PY
	status=$?
	echo "$self_timed"
	exit $status
} >>"$out"
