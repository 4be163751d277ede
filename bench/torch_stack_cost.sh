#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/torch_stack_cost.sh [RESULT_FILE]: what a sync point's stacks cost inside a real step,
# on a GPU machine. RESULT_FILE is appended to (default: standard output).
#
# bench/stack_cost.sh times stacks in a tight loop of syncs, where the unwinders' tables and
# Python's objects stay in the caches. Here the sync point is the torch reference loop's
# `.item()` (bench/torch_step.py, small: about 0.9 ms a step, 19 kernels), whose step evicts
# them first. One process per depth (SYNCSPY_STACK_DEPTH, default "32 8"), STEPS steps (default
# 2000), CUPTI off; from each database's meta (docs/schema.md), as the shim timed them: native
# and Python per stack on average (the first stacks included: the first unwinding of torch's
# libraries costs about a millisecond), and both together once the thread had taken that stack
# before (the steady state). A report, not a check: it exits 0 when it ran, 2 when it cannot.
set -u
. "$(dirname "$0")/torch-lib.sh"
{
	echo "# bench/torch_stack_cost.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) $(nvidia-smi -L 2>/dev/null | head -n1)"
	for depth in ${DEPTHS:-32 8}; do
		SYNCSPY_STACK_DEPTH=$depth SYNCSPY_CUPTI=0 SYNCSPY_QUIET=1 SYNCSPY_OUTPUT="$tmp/db-$depth" \
			LD_PRELOAD="$shim" SIZES=small python3 "$root/bench/torch_step.py" "${STEPS:-2000}" |
			sed "s/^/depth $depth: /"
		python3 - "$depth" "$tmp/db-$depth" <<'PY' || exit 2
import glob, sqlite3, sys
depth, folder = sys.argv[1], sys.argv[2]
paths = glob.glob(folder + "/*.sqlite")
if not paths:
    sys.exit("depth %s: no database" % depth)
meta = dict(sqlite3.connect(paths[0]).execute("SELECT key, value FROM meta"))
taken = int(meta.get("stacks_taken", 0)) or 1
repeated = int(meta.get("stacks_repeated", 0)) or 1
print("depth %s: %s stacks (%s repeated); per stack on average: native %d ns, Python %d ns; "
      "steady state, both: %d ns; meta.native_stacks %s, native_stacks_libgcc_sites %s" % (
          depth, meta.get("stacks_taken"), meta.get("stacks_repeated"),
          int(meta.get("stack_cost_native_ns", 0)) // taken,
          int(meta.get("stack_cost_python_ns", 0)) // taken,
          int(meta.get("stack_cost_repeated_ns", 0)) // repeated,
          meta.get("native_stacks"), meta.get("native_stacks_libgcc_sites")))
PY
	done
} >>"$out"
