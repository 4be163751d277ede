#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/launch_site_ab.sh: what naming an enqueue's user line costs (docs/attribution.md,
# "The site of an enqueue"), measured as the difference between two builds of libsyncspy.so,
# BEFORE (without it) and AFTER (with it), in one interleaved run.
#
# bench/calls.cu is built twice: -cudart shared (its <<<>>> launch goes through the shim's
# __cudaPushCallConfiguration/__cudaPopCallConfiguration and __cudaLaunchKernel wrappers) and
# -cudart static, nvcc's default (the launch and the event record reach the shim as driver
# calls from inside the static runtime: the learnt path of native.c). Each round runs both
# binaries without the shim, with BEFORE and with AFTER, in a rotating order, so that the
# three see the same machine state; the table gives, per binary and call, the median over the
# rounds of each run's median ns per call, and AFTER - BEFORE (the target: the shim's whole
# cost, AFTER - none, within 25 ns for enqueues: docs/architecture.md).
#
#   bench/launch_site_ab.sh BEFORE.so AFTER.so [RESULT_FILE]
#   BENCH_ROUNDS (default 7), BENCH_CALLS (default 200000 per call and run), NVCC, PIN (cores)
#
# Exit: 0 done, 2 the benchmark could not run.
set -u
if [ $# -lt 2 ]; then
	echo "usage: bench/launch_site_ab.sh BEFORE.so AFTER.so [RESULT_FILE]" >&2
	exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
before=$(realpath "$1")
after=$(realpath "$2")
result_file=${3:-/dev/stdout}
rounds=${BENCH_ROUNDS:-7}
calls=${BENCH_CALLS:-200000}
nvcc=${NVCC:-nvcc}
export LD_LIBRARY_PATH="$root/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
work=$(mktemp -d "${TMPDIR:-/tmp}/syncspy-launch-site.XXXXXX")
trap 'rm -rf "$work"' EXIT
log() { echo "bench/launch_site_ab.sh: $*" >&2; }

for cudart in shared static; do
	log "+ $nvcc -O2 -arch=sm_90 -cudart $cudart -o $work/calls-$cudart bench/calls.cu"
	"$nvcc" -O2 -arch=sm_90 -cudart "$cudart" -o "$work/calls-$cudart" "$root/bench/calls.cu" ||
		{ log "build failed"; exit 2; }
done

# pinned cores (PIN, default 2-5): the three configurations run on the same cores
pin=()
command -v taskset >/dev/null 2>&1 && pin=(taskset -c "${PIN:-2-5}")

run() { # cudart shim round
	local out="$work/$1.$2.$3" shim=
	[ "$2" = before ] && shim=$before
	[ "$2" = after ] && shim=$after
	if [ -n "$shim" ]; then
		LD_PRELOAD="$shim" SYNCSPY_CUPTI=0 SYNCSPY_QUIET=1 SYNCSPY_OUTPUT="$work/db" \
			"${pin[@]}" "$work/calls-$1" "$calls" >"$out" || { log "run $1 $2 failed"; exit 2; }
		rm -rf "$work/db"
	else
		"${pin[@]}" "$work/calls-$1" "$calls" >"$out" || { log "run $1 none failed"; exit 2; }
	fi
}

orders=("none before after" "before after none" "after none before")
for round in $(seq 1 "$rounds"); do
	for kind in ${orders[$((round % 3))]}; do
		for cudart in shared static; do
			log "round $round: $cudart $kind"
			run "$cudart" "$kind" "$round"
		done
	done
done

{
	echo "# bench/launch_site_ab.sh: ns per call, median over $rounds rounds of each run's median"
	echo "date:    $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "commit:  $(git -C "$root" rev-parse --verify -q HEAD 2>/dev/null || echo unknown)"
	echo "before:  $before"
	echo "after:   $after"
	echo "gpu:     $(nvidia-smi -L 2>/dev/null | head -n1)"
	python3 - "$work" "$rounds" <<'PY'
import statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
def medians(cudart, kind):
    per = {}
    for r in range(1, rounds + 1):
        for line in open("%s/%s.%s.%d" % (work, cudart, kind, r)):
            if line.startswith("#"):
                continue
            name, median = line.split()[:2]
            per.setdefault(name, []).append(float(median))
    return {k: (statistics.median(v), max(v) - min(v)) for k, v in per.items()}
print("%-8s %-28s %9s %9s %9s %13s %12s %s" % ("cudart", "call", "none", "before", "after",
      "after-before", "after-none", "spread none/before/after"))
for cudart in ("shared", "static"):
    m = {k: medians(cudart, k) for k in ("none", "before", "after")}
    for name in m["none"]:
        n, b, a = (m[k][name][0] for k in ("none", "before", "after"))
        spread = "/".join("%.1f" % m[k][name][1] for k in ("none", "before", "after"))
        print("%-8s %-28s %9.1f %9.1f %9.1f %13.1f %12.1f %s" % (cudart, name, n, b, a, a - b,
              a - n, spread))
PY
} >"$result_file"
