# SPDX-License-Identifier: MIT
# bench/torch-lib.sh: sourced by the benchmarks that run torch under the carried shim
# (stack_cost.sh, torch_stack_cost.sh, cupti_ab.sh). Sets root (the checkout), shim
# (SYNCSPY_SHIM, default .carry/lib/libsyncspy.so: tests/gpu/carry.sh fills it), out (the
# result file, $1, default standard output) and tmp (removed at exit), puts .carry/lib on the
# library path (libunwind.so.8), and exits 2, saying why, where the benchmark cannot run.
root=$(cd "$(dirname "$0")/.." && pwd)
shim=${SYNCSPY_SHIM:-$root/.carry/lib/libsyncspy.so}
out=${1:-/dev/stdout}
export LD_LIBRARY_PATH="$root/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -f "$shim" ] || { echo "$(basename "$0"): no shim at $shim (build it and fill .carry/)" >&2; exit 2; }
python3 -c 'import torch' 2>/dev/null ||
	{ echo "$(basename "$0"): needs python3 with torch and a GPU (tests/gpu/README.md)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
