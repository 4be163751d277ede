#!/bin/sh
# t602: the corpus scorer (examples/corpus/score.py, issue 13 item 4). On a synthetic case (a
# marked source and hand-made reports) it must print the counts worked out by hand below; and
# the score of `syncspy report` on the committed corpus traces (examples/corpus/traces) must not
# fall below examples/corpus/score-floor.txt.
. "$E2E_DIR/lib.sh"
[ -n "${PYTHON3:-}" ] || skip "no python3"
score=$TOP_SRCDIR/examples/corpus/score.py
mkdir -p "$tmp/src"
# w1.cu: problems on lines 3 and 5, clean lines 2 and 4; w2.py: clean only (line 2).
cat >"$tmp/src/w1.cu" <<'END'
int main(void) {
	cudaMalloc(&p, 4); // SYNCSPY-CLEAN: setup
	cudaMemcpy(h, p, 4, D2H); // SYNCSPY-PROBLEM: per step
	cudaFree(p); // SYNCSPY-CLEAN
	cudaDeviceSynchronize(); // SYNCSPY-PROBLEM
}
END
cat >"$tmp/src/w2.py" <<'END'
import torch
x = torch.ones(3).cuda()  # SYNCSPY-CLEAN: setup
END
f() { # RULE SEVERITY SITE
	printf '{"rule": "%s", "severity": "%s", "site": %s}' "$1" "$2" "$3"
}
{
	# w1-shared: the first finding names problem line 5; an info finding on problem line 3 does
	# not count; one finding on a clean line; two naming no marked line (another file; no line).
	printf '{"trace": "w1-shared", "report": {"findings": [%s, %s, %s, %s, %s]}}\n' \
		"$(f host-sync high '"/build/dir/w1.cu:5 in main"')" \
		"$(f sync-copy info '"w1.cu:3 in main"')" \
		"$(f alloc-in-loop medium '"/x/w1.cu:4 in main"')" \
		"$(f host-sync low '"/x/other.cu:3 in main"')" \
		"$(f alloc-in-loop low '"libcudart.so.13+0x1234"')"
	# w1-static: first finding unmarked (line 1), then both problem lines (one without " in").
	printf '{"trace": "w1-static", "report": {"findings": [%s, %s, %s]}}\n' \
		"$(f host-sync medium '"w1.cu:1 in main"')" \
		"$(f sync-copy low '"w1.cu:3 in main"')" \
		"$(f host-sync low '"w1.cu:5"')"
	# w2: clean, and only an info finding and a null site at info: counts as silent.
	printf '{"trace": "w2", "report": {"findings": [%s, %s]}}\n' \
		"$(f alloc-in-loop info '"w2.py:2 in <module>"')" "$(f rank-imbalance info null)"
	# w3 would be w2 again (a Python source for a -shared name is found too)
} >"$tmp/reports.json"
"$PYTHON3" "$score" --reports "$tmp/reports.json" --sources "$tmp/src" >"$tmp/score.out" 2>"$tmp/score.err" ||
	fail "score.py failed: $(cat "$tmp/score.err")"
cat "$tmp/score.out" >&2
# recall: w1-shared 1/2 (5), w1-static 2/2, w2 0/0 -> 3/4; clean-line findings: 1 (w1-shared
# line 4); first: w1-shared yes, w1-static no, w2 yes (silent) -> 2/3; unmarked: w1-shared 2,
# w1-static 1 -> 3/3.
[ "$(tail -n 1 "$tmp/score.out")" = "score: recall 3/4, clean-line findings 1, first 2/3, unmarked 3/3" ] ||
	fail "score line: $(tail -n 1 "$tmp/score.out")"
[ "$(grep -c '^score:' "$tmp/score.out")" -eq 1 ] || fail "not exactly one score line"
grep -Eq '^w1-shared +1/2 +1 +yes +2 +4$' "$tmp/score.out" || fail "w1-shared row"
grep -Eq '^w1-static +2/2 +0 +no +1 +3$' "$tmp/score.out" || fail "w1-static row"
grep -Eq '^w2 +0/0 +0 +yes +0 +0$' "$tmp/score.out" || fail "w2 row"
grep -q '^  missed: w1.cu:3$' "$tmp/score.out" || fail "the missed line is not named"
grep -q '^  on a clean line: alloc-in-loop \[medium\] /x/w1.cu:4 in main$' "$tmp/score.out" ||
	fail "the clean-line finding is not named"
# The floor: met, then not met (exit 1, saying which).
printf 'recall 0.75\nclean-line-findings 1\nfirst 0.6  # comment\nunmarked-per-workload 1\n' >"$tmp/floor-ok"
"$PYTHON3" "$score" --reports "$tmp/reports.json" --sources "$tmp/src" --floor "$tmp/floor-ok" >/dev/null 2>&1 ||
	fail "a floor the score meets failed"
printf 'recall 0.8\nclean-line-findings 0\n' >"$tmp/floor-high"
"$PYTHON3" "$score" --reports "$tmp/reports.json" --sources "$tmp/src" --floor "$tmp/floor-high" >/dev/null 2>"$tmp/floor.err"
[ $? -eq 1 ] || fail "a floor the score misses did not exit 1"
grep -q 'recall 0.750 below the floor 0.800' "$tmp/floor.err" || fail "floor message: $(cat "$tmp/floor.err")"
grep -q '1 clean-line findings, the floor allows 0' "$tmp/floor.err" || fail "floor message: $(cat "$tmp/floor.err")"
# A trace without its source is bad input (exit 2).
printf '{"trace": "w9-shared", "report": {"findings": []}}\n' >"$tmp/orphan.json"
"$PYTHON3" "$score" --reports "$tmp/orphan.json" --sources "$tmp/src" >/dev/null 2>&1
[ $? -eq 2 ] || fail "a trace without a source: not exit 2"
# The committed traces, against the committed floor (the sources' markers are read as they are).
set -- "$TOP_SRCDIR"/examples/corpus/traces/*.sqlite
if [ -f "$1" ]; then
	"$PYTHON3" "$score" --syncspy "$SYNCSPY" --floor "$TOP_SRCDIR/examples/corpus/score-floor.txt" \
		"$TOP_SRCDIR/examples/corpus/traces" >"$tmp/corpus.out" 2>"$tmp/corpus.err"
	rc=$?
	cat "$tmp/corpus.out" "$tmp/corpus.err" >&2
	[ $rc -eq 0 ] || fail "the corpus score is below examples/corpus/score-floor.txt (exit $rc)"
else
	echo "no corpus traces committed yet: only the synthetic case was scored" >&2
fi
# Every workload source parses: the corpus's markers are where score.py reads them.
for src in "$TOP_SRCDIR"/examples/corpus/[cdnt][0-9]*; do
	grep -Eq '(//|#).*SYNCSPY-(PROBLEM|CLEAN)' "$src" || fail "$src has no marker"
done
