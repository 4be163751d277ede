#!/bin/sh
# SPDX-License-Identifier: MIT
# t700: the shape of `make demo` (examples/demo.sh, the README's first command), so it cannot
# drift unseen: it records its five workloads (four scenarios and a loop), says once that there is no GPU timeline (no
# per-database CUPTI error, no metadata dump), prints each report with its findings first, and
# ends with the top finding of its recordings and of the H200 trace and the HTML file's path.
# (.ci/run runs `make demo` itself too; this test checks what it prints.)
. "$E2E_DIR/lib.sh"
demo=$tmp/demo
trace=$TOP_SRCDIR/examples/traces/08_item_per_step-bad-shared.sqlite
DEMO_GPU=0 SHIM=$SHIM SYNCSPY=$SYNCSPY SCENARIOS=$PROGS/scenarios STEADY=$PROGS/steady STANDIN_DIR=$STANDIN_DIR \
	sh "$TOP_SRCDIR/examples/demo.sh" "$demo" >"$tmp/log" 2>&1 || {
	cat "$tmp/log" >&2
	fail "demo.sh failed"
}
lines=$(wc -l <"$tmp/log")
[ "$lines" -le 120 ] || fail "demo prints $lines lines (more than 120: keep it short)"

# Its recordings: one database per workload, one shim line each.
set -- "$demo"/*.sqlite
[ $# -eq 5 ] || fail "expected 5 databases in $demo, found: $*"
[ "$(grep -c "^ *syncspy: rank -: .* -> $demo/syncspy-.*\.sqlite$" "$tmp/log")" -eq 5 ] ||
	fail "not one shim line per workload"

# No GPU here: said once, plainly; never CUPTI's error code, never the metadata of `syncspy info`.
[ "$(grep -c 'no GPU timeline' "$tmp/log")" -eq 1 ] || fail "the no-GPU statement is not there once"
! grep -q 'CUPTI_ERROR\|GPU timeline not recorded\|^meta:\|cmdline *=' "$tmp/log" ||
	fail "CUPTI errors or metadata in the demo: $(grep -m1 'CUPTI_ERROR\|GPU timeline not recorded\|^meta:\|cmdline *=' "$tmp/log")"

# Each report shows its findings right after its title line.
grep -A2 '^syncspy report: ' "$tmp/log" | grep -c '^findings' >"$tmp/nf"
[ "$(cat "$tmp/nf")" -eq 2 ] || fail "the findings do not come first in both reports"

# The top findings named at the end are the first findings of the reports themselves.
top() { "$SYNCSPY" report "$@" | sed -n 's/^  \(\[[a-z]*\]\)/\1/p' | head -n 1; }
mine=$(top "$demo"/*.sqlite)
h200=$(top "$trace")
# the loop's stream sync, every step: a steady-state finding above info, on its line
case $mine in "[high] host-sync "*steady.c:[0-9]*) ;; *) fail "top finding of the recordings: $mine" ;; esac
case $h200 in *08_item_per_step.py:[0-9]*) ;; *) fail "top finding of the H200 trace: $h200" ;; esac
tail -n 4 "$tmp/log" >"$tmp/end"
grep -qxF "  your recordings: $mine" "$tmp/end" || fail "recordings' top finding not at the end: $(cat "$tmp/end")"
grep -qxF "  the H200 trace:  $h200" "$tmp/end" || fail "H200 top finding not at the end: $(cat "$tmp/end")"

# The last line names the HTML report, which is there.
last=$(tail -n 1 "$tmp/log")
case $last in "HTML report of "*": $demo/report.html") ;; *) fail "last line: $last" ;; esac
grep -q '<html' "$demo/report.html" || fail "no HTML report in $demo/report.html"
