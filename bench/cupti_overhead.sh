#!/usr/bin/env bash
# bench/cupti_overhead.sh [RESULT_FILE]: what syncspy adds to a torch training step, on a GPU,
# with and without its CUPTI module, beside what torch.profiler adds (issue 3: at most 3% with
# CUPTI on, on the torch reference loop).
#
# Runs bench/torch_step.py (the reference loop at two sizes) ROUNDS times (default 3) in each of
# four configurations, interleaved so that drift hits them alike:
#   plain       no shim
#   shim        LD_PRELOAD=libsyncspy.so, SYNCSPY_CUPTI=0 (host side only)
#   shim+cupti  LD_PRELOAD=libsyncspy.so, SYNCSPY_CUPTI=1
#   profiler    no shim, torch.profiler with CPU and CUDA activities around the timed steps
# and writes, per size, the median step time of each configuration and its overhead against
# plain. Then once more: the shim with CUPTI on while torch.profiler runs (CUPTI has one
# activity client: one of the two gets it), to show the program still runs and what meta.cupti
# records. Exit 0 when shim+cupti is within 3% on every size, 1 otherwise, 2 when it cannot run.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
shim=${SYNCSPY_SHIM:-$root/.carry/lib/libsyncspy.so}
out=${1:-/dev/stdout}
rounds=${ROUNDS:-3}
steps=${STEPS:-300}
export LD_LIBRARY_PATH="$root/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -f "$shim" ] || { echo "cupti_overhead.sh: no shim at $shim" >&2; exit 2; }

run_config() { # CONFIG ROUND
	local config=$1 round=$2 cmd=(python3 "$root/bench/torch_step.py" "$steps")
	local db=$tmp/db-$config-$round
	case $config in
	plain) "${cmd[@]}" ;;
	shim) SYNCSPY_CUPTI=0 SYNCSPY_QUIET=1 SYNCSPY_OUTPUT=$db LD_PRELOAD=$shim "${cmd[@]}" ;;
	shim+cupti) SYNCSPY_CUPTI=1 SYNCSPY_QUIET=1 SYNCSPY_OUTPUT=$db LD_PRELOAD=$shim "${cmd[@]}" ;;
	profiler) "${cmd[@]}" --profiler ;;
	esac 2>>"$tmp/stderr" | sed -n "s/^step_us /$config /p"
}

for round in $(seq "$rounds"); do
	for config in plain shim shim+cupti profiler; do
		run_config "$config" "$round" >>"$tmp/results"
	done
done
# the conflict: both clients at once
SYNCSPY_CUPTI=1 SYNCSPY_QUIET=1 SYNCSPY_OUTPUT=$tmp/db-both LD_PRELOAD=$shim \
	python3 "$root/bench/torch_step.py" --profiler 50 >"$tmp/both.out" 2>"$tmp/both.err"
both_rc=$?
both_db=$(ls "$tmp"/db-both/*.sqlite 2>/dev/null | head -n1)
both_meta=$([ -n "$both_db" ] && python3 -c "
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print(db.execute(\"SELECT value FROM meta WHERE key = 'cupti'\").fetchone()[0],
      '| gpu rows:', db.execute(\"SELECT count(*) FROM sqlite_master WHERE name = 'gpu_activity'\").fetchone()[0]
      and db.execute('SELECT count(*) FROM gpu_activity').fetchone()[0])" "$both_db" 2>&1)
{
	echo "# bench/cupti_overhead.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) $(nvidia-smi -L 2>/dev/null | head -n1)"
	echo "# torch $(python3 -c 'import torch; print(torch.__version__)' 2>/dev/null); $rounds rounds x $steps steps per configuration; step time in us"
	echo "# config size step_us (one line per round)"
	cat "$tmp/results"
	echo
	awk '
	{ v[$1 " " $2] = v[$1 " " $2] " " $3; sizes[$2] = 1 }
	function median(list,   a, n) { n = split(list, a); asort(a); return n ? (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2) : -1 }
	END {
		fail = 0
		printf "%-6s %-11s %10s %9s\n", "size", "config", "median_us", "overhead"
		for (s in sizes) {
			base = median(v["plain " s])
			split("plain shim shim+cupti profiler", configs, " ")
			for (i = 1; i <= 4; i++) {
				m = median(v[configs[i] " " s])
				over = base > 0 && m > 0 ? (m - base) / base * 100 : -1
				printf "%-6s %-11s %10.1f %8.2f%%\n", s, configs[i], m, over
				if (configs[i] == "shim+cupti" && (m <= 0 || over > 3)) fail = 1
			}
		}
		printf "shim+cupti within 3%% of plain on every size: %s\n", fail ? "FAIL" : "PASS"
		exit fail
	}' "$tmp/results"
	status=$?
	echo
	echo "both at once (shim with CUPTI on, torch.profiler on): exit $both_rc, $(grep -c '^step_us' "$tmp/both.out") sizes timed; meta.cupti: ${both_meta:-no database}"
	grep -v '^step_us' "$tmp/stderr" "$tmp/both.err" 2>/dev/null | sort | uniq -c | sort -rn | head -n 8 | sed 's/^/# stderr: /'
	exit $status
} >"$out"
