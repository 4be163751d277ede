#!/usr/bin/env bash
# bench/stack_cost.sh [RESULT_FILE]: the cost of a sync point's stacks on a GPU machine.
# Runs bench/stack_cost.py under the shim (.carry/lib/libsyncspy.so) with stacks off
# (SYNCSPY_STACK_DEPTH=0) and on (32), alternating, 3 rounds, and prints the medians and the
# added cost per sync call (target: at most 2000 ns). CUPTI off (SYNCSPY_CUPTI=0): the stacks'
# cost alone.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
shim=$root/.carry/lib/libsyncspy.so
out=${1:-/dev/stdout}
export LD_LIBRARY_PATH="$root/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for round in 1 2 3; do
	for depth in 0 32; do
		SYNCSPY_STACK_DEPTH=$depth SYNCSPY_CUPTI=0 SYNCSPY_QUIET=1 SYNCSPY_OUTPUT="$tmp/db-$depth-$round" \
			LD_PRELOAD="$shim" python3 "$root/bench/stack_cost.py" 2000 |
			sed -n "s/^item_ns median /$depth /p" >>"$tmp/results"
	done
done
{
	echo "# bench/stack_cost.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) $(nvidia-smi -L 2>/dev/null | head -n1)"
	echo "# depth median_item_ns (3 rounds each)"
	cat "$tmp/results"
	# medians in Python: the GPU machine's awk (mawk) has no sort
	python3 - "$tmp/results" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    depth, ns = line.split()
    runs.setdefault(depth, []).append(float(ns))
added = statistics.median(runs["32"]) - statistics.median(runs["0"])
print("added per sync with native+Python stacks: %d ns (target 2000): %s"
      % (added, "PASS" if added <= 2000 else "FAIL"))
PY
} >"$out"
