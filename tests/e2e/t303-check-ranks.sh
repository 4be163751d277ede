#!/bin/sh
# SPDX-License-Identifier: MIT
# t303: `syncspy check` on the four ranks of the NCCL scenario, recorded under the shim: a
# per_rank limit gives one check per rank (in rank order) with the sites of each breach; a
# limit without it sums all ranks; "rank" picks one. Times vary, so they are masked.
. "$E2E_DIR/lib.sh"
under_shim "$PROGS/scenarios" nccl 4 >"$tmp/stdout" 2>"$tmp/stderr" || fail "scenario failed: $(cat "$tmp/stderr")"
cd "$tmp" || fail "cd"
cat >budget.json <<'END'
{
  "version": 1,
  "limits": [
    {"per_rank": true, "class": "S4", "max_count": 1},
    {"per_rank": true, "class": "S2", "max_count": 1},
    {"class": "S4", "max_count": 8},
    {"rank": 2, "api": "cudaMalloc", "max_count": 0}
  ]
}
END
"$SYNCSPY" check --budget budget.json --junit junit.xml out >raw 2>err
code=$?
[ $code -eq 1 ] || fail "exit $code, want 1: $(cat raw err)"
[ -s err ] && fail "stderr: $(cat err)"
# Mask times and the sites' lines (the two copies of each breach have equal counts: their order
# follows time); the sites are file:line (report/lines.c), checked below.
sed -E -e 's/[0-9.]* ms/T ms/g' -e 's#/[^ ]*/tests/progs/scenarios.c:[0-9]+ in nccl_ranks#scenarios.c:N#' \
	raw >out.masked
cat >expected <<'END'
budget budget.json: 4 recordings, 16 sync points (0 in warm-up, 0 on allowed sites)
FAIL limits[0] class=S4 per_rank [rank 0]: count 2 > 1
  1 call, T ms: scenarios.c:N [cudaMemcpy]
  1 call, T ms: scenarios.c:N [cudaMemcpy]
FAIL limits[0] class=S4 per_rank [rank 1]: count 2 > 1
  1 call, T ms: scenarios.c:N [cudaMemcpy]
  1 call, T ms: scenarios.c:N [cudaMemcpy]
FAIL limits[0] class=S4 per_rank [rank 2]: count 2 > 1
  1 call, T ms: scenarios.c:N [cudaMemcpy]
  1 call, T ms: scenarios.c:N [cudaMemcpy]
FAIL limits[0] class=S4 per_rank [rank 3]: count 2 > 1
  1 call, T ms: scenarios.c:N [cudaMemcpy]
  1 call, T ms: scenarios.c:N [cudaMemcpy]
PASS limits[1] class=S2 per_rank [rank 0]: count 1 <= 1
PASS limits[1] class=S2 per_rank [rank 1]: count 1 <= 1
PASS limits[1] class=S2 per_rank [rank 2]: count 1 <= 1
PASS limits[1] class=S2 per_rank [rank 3]: count 1 <= 1
PASS limits[2] class=S4: count 8 <= 8
FAIL limits[3] class=sync api=cudaMalloc rank=2: count 1 > 0
  1 call, T ms: scenarios.c:N [cudaMalloc]
syncspy check: 4 limits, 10 checks: 5 passed, 5 breached, 0 not checked
END
diff -u expected out.masked >&2 || fail "output differs from the golden text"
# Each rank's two copies at their lines of tests/progs/scenarios.c (nccl_ranks), the malloc at its.
for want in "$(grep -n 'cudaMemcpy(buf, host' "$TOP_SRCDIR/tests/progs/scenarios.c" | cut -d: -f1) [cudaMemcpy]" \
	"$(grep -n 'cudaMemcpy(host, buf' "$TOP_SRCDIR/tests/progs/scenarios.c" | cut -d: -f1) [cudaMemcpy]" \
	"$(grep -n 'cudaMalloc((void \*\*)&buf, 1024' "$TOP_SRCDIR/tests/progs/scenarios.c" | cut -d: -f1) [cudaMalloc]"; do
	grep -qF "tests/progs/scenarios.c:${want% *} in nccl_ranks ${want#* }" raw || fail "no site at line $want: $(cat raw)"
done
if [ -n "${PYTHON3:-}" ] && command -v "$PYTHON3" >/dev/null 2>&1; then
	"$PYTHON3" -c "
import sys, xml.dom.minidom
doc = xml.dom.minidom.parse(sys.argv[1])
cases = doc.getElementsByTagName('testcase')
fails = [c for c in cases if c.getElementsByTagName('failure')]
assert len(cases) == 10 and len(fails) == 5, (len(cases), len(fails))
" junit.xml || fail "junit.xml: $(cat junit.xml)"
fi
exit 0
