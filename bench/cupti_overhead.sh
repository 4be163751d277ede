#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/cupti_overhead.sh [RESULT_FILE]: what syncspy adds to a torch training step, on a GPU,
# with and without its CUPTI module, beside what torch.profiler adds (issue 3: at most 3% with
# CUPTI on, on the torch reference loop).
#
# Runs bench/torch_step.py (the reference loop at two sizes) ROUNDS times (default 3) in each of
# six configurations, interleaved so that drift hits them alike (each round starting one
# configuration further on):
#   plain       no shim
#   disabled    LD_PRELOAD=libsyncspy.so, SYNCSPY_DISABLE=1 (interposition alone, nothing recorded)
#   nostack     LD_PRELOAD=libsyncspy.so, SYNCSPY_STACK_DEPTH=0 (host side, no stacks)
#   shim        LD_PRELOAD=libsyncspy.so, SYNCSPY_CUPTI=0 (host side only)
#   base        as shim, with the shim at BASE_SHIM (another build: an A/B of a change)
#   shim+cupti  LD_PRELOAD=libsyncspy.so, SYNCSPY_CUPTI=1: the default, SYNCSPY_CUPTI_SAMPLE=auto
#               (CUPTI-5); meta says per round whether it sampled and how much it traced
#   all         shim+cupti with SYNCSPY_CUPTI_SAMPLE=all (every call traced, continuously)
#   profiler    no shim, torch.profiler with CPU and CUDA activities around the timed steps
#   cupti:LIST  shim+cupti with SYNCSPY_CUPTI_KINDS=LIST (what each CUPTI kind costs; CONFIGS
#               names them, e.g. CONFIGS="plain shim+cupti cupti:kernel cupti:kernel,api")
#   all:LIST    all (traced whole) with SYNCSPY_CUPTI_KINDS=LIST
#   sample:S    shim+cupti with SYNCSPY_CUPTI_SAMPLE=S (sample:1/600000: traced only in the
#               first ms, paused for the rest: what CUPTI costs while paused)
#   detach      shim+cupti (the default sampler, auto) with SYNCSPY_CUPTI_PAUSE=detach: CUPTI
#               detached (cuptiFinalize) between windows instead of its kinds disabled, and
#               attached again for each window (CUPTI-8); the default since session 10
#   disable     shim+cupti with SYNCSPY_CUPTI_PAUSE=disable: the kinds disabled between
#               windows, CUPTI staying attached (the default before session 10)
#   detach:S    detach with SYNCSPY_CUPTI_SAMPLE=S (detach:1/600000: traced in the first ms,
#               detached for the rest: sample:1/600000's twin, what a detached CUPTI costs)
# and writes, per size, the median step time of each configuration and its overhead against
# plain: the median over rounds of (config / plain of the same round - 1), which cancels the
# drift between rounds, beside the ratio of the medians. SIZES="small" times one size only;
# PIN=CPU runs every configuration on that core (taskset), which takes the scheduler's moves
# out of a launch-bound loop's step time. Then once more: the shim with CUPTI on while torch.profiler runs (CUPTI has one
# activity client: one of the two gets it), to show the program still runs and what meta.cupti
# records. PARTIAL=FILE keeps the raw lines so far in FILE after every process (a run cut short
# by a time limit keeps what it measured). Exit 0 when shim+cupti is within 3% on every size, 1 otherwise, 2 when it cannot run.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
shim=${SYNCSPY_SHIM:-$root/.carry/lib/libsyncspy.so}
out=${1:-/dev/stdout}
rounds=${ROUNDS:-3}   # CONFIGS="plain shim ..." runs a subset of the configurations
steps=${STEPS:-300}
export LD_LIBRARY_PATH="$root/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
python3 -c 'import torch' 2>/dev/null ||
	{ echo "cupti_overhead.sh: needs python3 with torch and a GPU (tests/gpu/README.md)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -f "$shim" ] || { echo "cupti_overhead.sh: no shim at $shim" >&2; exit 2; }

run_config() { # CONFIG ROUND
	local config=$1 round=$2 cmd=(${PIN:+taskset -c "$PIN"} python3 "$root/bench/torch_step.py" "$steps")
	local db=$tmp/db-$config-$round
	case $config in
	plain) "${cmd[@]}" ;;
	disabled) SYNCSPY_DISABLE=1 SYNCSPY_QUIET=1 SYNCSPY_OUTPUT=$db LD_PRELOAD=$shim "${cmd[@]}" ;;
	nostack) SYNCSPY_STACK_DEPTH=0 SYNCSPY_CUPTI=0 SYNCSPY_QUIET=1 SYNCSPY_OUTPUT=$db \
		LD_PRELOAD=$shim "${cmd[@]}" ;;
	shim) SYNCSPY_CUPTI=0 SYNCSPY_QUIET=1 SYNCSPY_OUTPUT=$db LD_PRELOAD=$shim "${cmd[@]}" ;;
	base) SYNCSPY_CUPTI=0 SYNCSPY_QUIET=1 SYNCSPY_OUTPUT=$db LD_PRELOAD=${BASE_SHIM:?base needs BASE_SHIM} "${cmd[@]}" ;;
	shim+cupti) SYNCSPY_CUPTI=1 SYNCSPY_QUIET=1 SYNCSPY_OUTPUT=$db LD_PRELOAD=$shim "${cmd[@]}" ;;
	all) SYNCSPY_CUPTI=1 SYNCSPY_CUPTI_SAMPLE=all SYNCSPY_QUIET=1 SYNCSPY_OUTPUT=$db \
		LD_PRELOAD=$shim "${cmd[@]}" ;;
	profiler) "${cmd[@]}" --profiler ;;
	cupti:*) SYNCSPY_CUPTI=1 SYNCSPY_CUPTI_KINDS=${config#cupti:} SYNCSPY_QUIET=1 \
		SYNCSPY_OUTPUT=$db LD_PRELOAD=$shim "${cmd[@]}" ;;
	all:*) SYNCSPY_CUPTI=1 SYNCSPY_CUPTI_SAMPLE=all SYNCSPY_CUPTI_KINDS=${config#all:} SYNCSPY_QUIET=1 \
		SYNCSPY_OUTPUT=$db LD_PRELOAD=$shim "${cmd[@]}" ;;
	sample:*) SYNCSPY_CUPTI=1 SYNCSPY_CUPTI_SAMPLE=${config#sample:} SYNCSPY_QUIET=1 \
		SYNCSPY_OUTPUT=$db LD_PRELOAD=$shim "${cmd[@]}" ;;
	detach) SYNCSPY_CUPTI=1 SYNCSPY_CUPTI_PAUSE=detach SYNCSPY_QUIET=1 SYNCSPY_OUTPUT=$db \
		LD_PRELOAD=$shim "${cmd[@]}" ;;
	disable) SYNCSPY_CUPTI=1 SYNCSPY_CUPTI_PAUSE=disable SYNCSPY_QUIET=1 SYNCSPY_OUTPUT=$db \
		LD_PRELOAD=$shim "${cmd[@]}" ;;
	detach:*) SYNCSPY_CUPTI=1 SYNCSPY_CUPTI_PAUSE=detach SYNCSPY_CUPTI_SAMPLE=${config#detach:} \
		SYNCSPY_QUIET=1 SYNCSPY_OUTPUT=$db LD_PRELOAD=$shim "${cmd[@]}" ;;
	esac 2>>"$tmp/stderr" | sed -n "s|^step_us |$config |p"
}

for config in ${CONFIGS:-}; do
	case $config in
	plain | disabled | nostack | shim | base | shim+cupti | all | profiler | cupti:?* | all:?* | sample:?* | detach | disable | detach:?*) ;;
	*) echo "cupti_overhead.sh: unknown configuration $config (see the top of this file)" >&2; exit 2 ;;
	esac
done
read -r -a all_configs <<<"${CONFIGS:-plain disabled nostack shim shim+cupti profiler}"
for round in $(seq "$rounds"); do
	# each round starts one configuration further on: none always runs first, or right after
	# another (session 25's mlp8 rounds ran the default after plain every time)
	first=$(((round - 1) % ${#all_configs[@]}))
	for config in "${all_configs[@]:first}" "${all_configs[@]:0:first}"; do
		run_config "$config" "$round" >>"$tmp/results"
		# what the shim measured of itself (its meta): the default's sampler (CUPTI-5) and the
		# enqueue paths walked (NATIVE-1), one line per round and configuration
		if [ -d "$tmp/db-$config-$round" ]; then
			python3 - "$tmp/db-$config-$round" "$round" "$config" >>"$tmp/meta" 2>&1 <<'PY'
import glob, sqlite3, sys
for path in glob.glob(sys.argv[1] + "/*.sqlite"):
    meta = dict(sqlite3.connect(path).execute("SELECT key, value FROM meta"))
    wall = (int(meta.get("end_mono_ns", 0)) - int(meta.get("start_mono_ns", 0))) / 1e9
    traced = int(meta.get("cupti_traced_ns", 0)) / 1e9 if "cupti_traced_ns" in meta else wall
    # CUPTI-8 (detach, detach:S): how often CUPTI was detached and attached, what that took
    detach = ("; detached %s times in %.2f ms, attached %s times in %.2f ms%s"
              % (meta.get("cupti_detaches", "-"), int(meta.get("cupti_detach_ns", 0)) / 1e6,
                 meta.get("cupti_attaches", "-"), int(meta.get("cupti_attach_ns", 0)) / 1e6,
                 " (fell back: %s)" % meta["cupti_detach_fallback"]
                 if "cupti_detach_fallback" in meta else "")
              if "cupti_pause" in meta else "")
    print("round %s %s: cupti_sample=%s windows=%s estimate=%s permille (measured %s, syncs"
          " on/off %s) traced %.2f s of %.2f s; enqueue paths walked %s in %.1f ms, %s frames"
          " looked up%s"
          % (sys.argv[2], sys.argv[3], meta.get("cupti_sample", "-"),
             meta.get("cupti_windows", "-"), meta.get("cupti_auto_permille", "-"),
             meta.get("cupti_auto_measured_permille", "-"),
             meta.get("cupti_auto_measured_syncs", "-"), traced, wall,
             meta.get("enqueue_path_walks", "-"), int(meta.get("enqueue_path_walk_ns", 0)) / 1e6,
             meta.get("enqueue_path_lookups", "-"), detach))
PY
		fi
		rm -rf "$tmp/db-$config-$round" # only its meta was needed
		# PARTIAL=FILE: the rounds so far, for a run cut short
		[ -z "${PARTIAL:-}" ] || cat "$tmp/results" "$tmp/meta" >"$PARTIAL" 2>/dev/null
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
	# medians in Python: the GPU machine's awk (mawk) has no sort
	python3 - "$tmp/results" <<'PY'
import statistics, sys
runs, order = {}, []
for line in open(sys.argv[1]):
    config, size, us = line.split()
    runs.setdefault((size, config), []).append(float(us))
    if config not in order:
        order.append(config)
fail = False
print("%-6s %-42s %10s %9s %9s" % ("size", "config", "median_us", "overhead", "paired"))
for size in sorted({size for size, _ in runs}):
    plain = runs.get((size, "plain"), [])
    base = statistics.median(plain) if plain else None
    for config in order:
        if (size, config) not in runs:
            continue
        times = runs[(size, config)]
        m = statistics.median(times)
        over = (m - base) / base * 100 if base else float("nan")
        # round r of every configuration ran back to back: compare within the round
        pairs = [t / p - 1 for t, p in zip(times, plain)]
        paired = statistics.median(pairs) * 100 if pairs else float("nan")
        print("%-6s %-42s %10.1f %8.2f%% %8.2f%%" % (size, config, m, over, paired))
        if config == "shim+cupti" and not paired <= 3:
            fail = True
if any(config == "shim+cupti" for _, config in runs):
    print("shim+cupti within 3%% of plain on every size (paired): %s" % ("FAIL" if fail else "PASS"))
else:
    print("shim+cupti (the default) not among the configurations: no verdict")
sys.exit(1 if fail else 0)
PY
	status=$?
	echo
	echo "# the shim's meta per round and configuration (the default's sampler: shim+cupti):"
	sed 's/^/#   /' "$tmp/meta" 2>/dev/null
	echo "both at once (shim with CUPTI on, torch.profiler on): exit $both_rc, $(grep -c '^step_us' "$tmp/both.out") sizes timed; meta.cupti: ${both_meta:-no database}"
	grep -v '^step_us' "$tmp/stderr" "$tmp/both.err" 2>/dev/null | sort | uniq -c | sort -rn | head -n 8 | sed 's/^/# stderr: /'
	exit $status
} >"$out"
