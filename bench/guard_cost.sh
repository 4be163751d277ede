#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench/guard_cost.sh: the sync guard's cost (GUARD-1, interpose/guard.c), in-process: an
# enqueue (cudaEventRecord) and a sync on an idle stream (cudaStreamSynchronize), ns per call
# (median of 31 batches of 1000), alternating ROUNDS times between
#   bare       no shim
#   base       the shim built without the guard (BASE_SHIM: main's build before the guard)
#   shim       this shim, no guard open (GUARD-1: nothing measurable added to base)
#   guarded    this shim, inside an open guard (each sync point counted and named)
# and writes one line per round and run, then the medians over the rounds.
#
#   bench/guard_cost.sh [RESULT_FILE]
#
# The real numbers need the GPU (run it on the H200 with the carried build: SHIM=.carry/lib/
# libsyncspy.so, CUDART_DIR the toolkit's lib64); on the development machine it runs on the CPU
# stand-ins (tests/standin), whose calls cost what their queues do, not a GPU's: there it shows
# the shape only. Environment: SHIM (default interpose/libsyncspy.so), BASE_SHIM (optional),
# CUDA_HOME (headers, default /usr/local/cuda), CUDART_DIR (the libcudart to link and run:
# default the stand-ins), ROUNDS (5). Exit 0, or 2 when it cannot run.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
result=${1:-/dev/stdout}
shim=${SHIM:-$root/interpose/libsyncspy.so}
base=${BASE_SHIM:-}
cuda=${CUDA_HOME:-/usr/local/cuda}
cudart_dir=${CUDART_DIR:-$root/tests/standin}
rounds=${ROUNDS:-5}
work=$(mktemp -d "${TMPDIR:-/tmp}/syncspy-guard-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
[ -f "$shim" ] || { echo "guard_cost.sh: no shim at $shim (make)" >&2; exit 2; }
[ -e "$cudart_dir/libcudart.so" ] || { echo "guard_cost.sh: no libcudart.so in $cudart_dir" >&2; exit 2; }
${CC:-cc} -O2 -D_GNU_SOURCE -I"$root/include" -I"$cuda/include" -o "$work/guard_cost" \
	"$root/bench/guard_cost.c" -L"$cudart_dir" -Wl,-rpath,"$cudart_dir" -lcudart -ldl ||
	{ echo "guard_cost.sh: build failed" >&2; exit 2; }
export LD_LIBRARY_PATH="$cudart_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
run() { # NAME PRELOAD MODE
	if [ -n "$2" ]; then
		env LD_PRELOAD="$2" SYNCSPY_OUTPUT="$work/out" SYNCSPY_CUPTI=0 "$work/guard_cost" "$3" 2>/dev/null
	else
		"$work/guard_cost" "$3"
	fi | sed "s/^[a-z]*/$1/"
}
{
	echo "# bench/guard_cost.sh $(date -u +%Y-%m-%dT%H:%MZ) on $(hostname -s), commit $(git -C "$root" describe --always --dirty 2>/dev/null)"
	echo "# libcudart: $cudart_dir; ns per call, median of 31 batches of 1000; $rounds rounds"
	for r in $(seq "$rounds"); do
		run bare "" none
		[ -n "$base" ] && run base "$base" none
		run shim "$shim" none
		run guarded "$shim" open
	done >"$work/rounds"
	cat "$work/rounds"
	echo "# medians over the rounds: run, enqueue ns, sync ns"
	for name in bare base shim guarded; do
		grep "^$name " "$work/rounds" >"$work/$name" || continue
		printf '%s %s %s\n' "$name" \
			"$(awk '{print $3}' "$work/$name" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')" \
			"$(awk '{print $5}' "$work/$name" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')"
	done
} >"$result"
