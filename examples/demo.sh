#!/bin/sh
# SPDX-License-Identifier: MIT
# examples/demo.sh: what `make demo` runs (and tests/e2e/t700-demo.sh checks): records a few
# workloads under the shim, then prints, short, what syncspy found in them and in a PyTorch loop
# recorded on an H200 (examples/traces), each report's findings first, and ends with the top
# finding of each and where the HTML report of the H200 reference traces is. It is a script rather than a Makefile recipe so that the test runs
# the very commands a new user sees, and so the output can be kept to what matters: the
# findings, not every database's metadata (`syncspy info DIR` has that).
#
# Usage: demo.sh OUTDIR, with SHIM (libsyncspy.so), SYNCSPY (the command), SCENARIOS
# (tests/progs/scenarios), STEADY (tests/progs/steady) and STANDIN_DIR (tests/standin) set to built files. DEMO_GPU=0 skips
# the GPU workload even where a GPU and nvcc are found (the test's output must not depend on
# the machine). SANITIZER_PRELOAD, set by a sanitizer build's tests (tests/sanitize.sh), is
# preloaded before the shim.
set -u
preload=${SANITIZER_PRELOAD:+$SANITIZER_PRELOAD:}$SHIM
out=${1:?usage: demo.sh OUTDIR}
srcdir=$(cd "$(dirname "$0")/.." && pwd)
trace=examples/traces/08_item_per_step-bad-shared.sqlite

# The workloads of tests/progs/scenarios the demo records, with what each does.
workloads='s5 async copies from pageable, pinned and registered host memory
e123 streams ordered by events, then one stream synchronize
s7 polling loops: cudaStreamQuery and cudaEventQuery until done
s6 implicit syncs: allocations, frees, a memset of pinned memory'

gpu=no
if [ "${DEMO_GPU:-auto}" != 0 ] && nvidia-smi -L >/dev/null 2>&1 && command -v nvcc >/dev/null 2>&1; then
	gpu=yes
fi

# report_findings_first DB|DIR...: `syncspy report`, its paragraphs reordered so the findings
# come right after the title line, before the per-rank table and the notes. The per-database
# "GPU timeline not recorded" notes of the stand-in runs are dropped: said once, above.
report_findings_first() {
	"$SYNCSPY" report "$@" >"$out/report.txt" || return 1
	grep -v 'GPU timeline not recorded: off (SYNCSPY_CUPTI=0)' "$out/report.txt" |
		awk 'BEGIN { RS = ""; ORS = "\n\n" }
		     { p[NR] = $0 } /^findings/ { f = NR }
		     END { print p[1]; if (f) print p[f]; for (i = 2; i <= NR; i++) if (i != f) print p[i] }'
}

# top_finding: the first finding line of the report just made, its leading blanks removed.
top_finding() {
	sed -n 's/^  \(\[[a-z]*\]\)/\1/p' "$out/report.txt" | head -n 1
}

rm -rf "$out" && mkdir -p "$out" || exit 1

echo "syncspy demo"
echo
if [ "$gpu" = yes ]; then
	echo "The first workloads run on syncspy's CPU stand-ins for libcudart, libcuda and libnccl"
	echo "(tests/standin, host-side calls only); examples/cuda/copies_syncs runs on this GPU."
else
	echo "No GPU here (or no nvcc): the workloads run on syncspy's CPU stand-ins for libcudart,"
	echo "libcuda and libnccl (tests/standin). syncspy records their host-side calls only: with"
	echo "no GPU timeline (CUPTI needs a GPU), GPU idle time behind a sync is not measured."
fi
echo
echo "1. Recording workloads under LD_PRELOAD=libsyncspy.so into $out/:"
echo "$workloads" | while read -r name what; do
	printf '   %-5s %s\n' "$name" "$what"
	# The workload's own output goes to a log; the shim's one line per process is shown.
	LD_LIBRARY_PATH=$STANDIN_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} SYNCSPY_OUTPUT=$out \
		SYNCSPY_CUPTI=0 LD_PRELOAD=$preload "$SCENARIOS" "$name" >"$out/$name.log" 2>&1
	status=$?
	sed -n 's/^syncspy: /         syncspy: /p' "$out/$name.log"
	[ "$status" -eq 0 ] || {
		cat "$out/$name.log" >&2
		echo "demo: workload $name failed (exit $status)" >&2
		exit 1
	}
done || exit 1
# A loop: what the report is about (its steady state, docs/rules.md).
echo "   steady a training-like loop: setup, 20 steps that each wait for their kernel, a final read"
LD_LIBRARY_PATH=$STANDIN_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} SYNCSPY_OUTPUT=$out \
	SYNCSPY_CUPTI=0 LD_PRELOAD=$preload "$STEADY" >"$out/steady.log" 2>&1 || {
	cat "$out/steady.log" >&2
	echo "demo: workload steady failed" >&2
	exit 1
}
sed -n 's/^syncspy: /         syncspy: /p' "$out/steady.log"
if [ "$gpu" = yes ]; then
	echo "   copies_syncs (examples/cuda/copies_syncs.cu, on the GPU, CUPTI on)"
	nvcc -O2 -arch=sm_90 -cudart shared -o "$out/copies_syncs" "$srcdir/examples/cuda/copies_syncs.cu" &&
		SYNCSPY_OUTPUT=$out LD_PRELOAD=$preload "$out/copies_syncs" >"$out/copies_syncs.log" 2>&1 || {
		cat "$out/copies_syncs.log" >&2
		echo "demo: examples/cuda/copies_syncs failed" >&2
		exit 1
	}
	sed -n 's/^syncspy: /         syncspy: /p' "$out/copies_syncs.log"
fi
echo

echo "2. What syncspy found in them: syncspy report $out"
echo
report_findings_first "$out" || exit 1
top_mine=$(top_finding)

echo "3. A PyTorch training loop recorded on an H200 (GPU timeline included):"
echo "   syncspy report $trace"
echo
report_findings_first "$srcdir/$trace" || exit 1
top_h200=$(top_finding)
rm -f "$out/report.txt"

"$SYNCSPY" report --format html -o "$out/report.html" "$srcdir/examples/traces" || exit 1
ntraces=$(ls "$srcdir"/examples/traces/*.sqlite | wc -l)

echo "Top findings (the full list of each is above; syncspy info $out has the metadata):"
echo "  your recordings: ${top_mine:-none}"
echo "  the H200 trace:  ${top_h200:-none}"
echo "HTML report of the $ntraces H200 reference traces (open it in a browser): $out/report.html"
