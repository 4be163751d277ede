#!/bin/sh
# SPDX-License-Identifier: MIT
# t301: `syncspy check` over budget: exit 1; each kind of limit (class, api, site, rank,
# per_rank, range, a rank with no recording); every breach lists its call sites, the worst
# first; --top limits them; --junit writes well-formed JUnit XML with one testcase per check;
# GITHUB_ACTIONS=true adds ::error:: workflow commands, with file= and line= for file:line
# sites only, paths made relative to $GITHUB_WORKSPACE.
. "$E2E_DIR/lib.sh"
sh "$TOP_SRCDIR/tests/fixtures/make-db.sh" "$tmp/rank0.sqlite" || fail "make-db.sh"
cd "$tmp" || fail "cd"
# A site text with XML's special characters and a control character, and one with a path.
"$SQLITE3" rank0.sqlite "UPDATE sites SET text = 'x<y>&\"z'' ' || char(1) || ' (mod)' WHERE id = 4;
	UPDATE sites SET text = '/ws/src/train.py:50 torch.cuda.synchronize()' WHERE id = 3;" ||
	fail "sqlite3"

cat >budget.json <<'END'
{
  "version": 1,
  "limits": [
    {"class": "sync", "max_count": 40},
    {"class": "S2", "max_blocked_ms": 0.05},
    {"api": "cudaMemcpy", "max_count": 1},
    {"name": "no item() in the loop", "site": "*train.py:42*", "max_count": 0},
    {"rank": 0, "class": "S5", "max_blocked_ms": 1.5},
    {"per_rank": true, "class": "S7", "max_count": 10},
    {"range": "step", "class": "sync", "max_count_per_range": 2},
    {"rank": 3, "max_count": 1}
  ]
}
END
"$SYNCSPY" check --budget budget.json --top 2 --junit junit.xml rank0.sqlite >out 2>err
code=$?
[ $code -eq 1 ] || fail "exit $code, want 1: $(cat out err)"
[ -s err ] && fail "stderr: $(cat err)"
cat >expected <<'END'
budget budget.json: 1 recording, 46 sync points (0 in warm-up, 0 on allowed sites)
WARN rank0.sqlite: 3 events dropped while recording; its counts are lower bounds
FAIL limits[0] class=sync: count 46 > 40
  39 calls, 0.332 ms: (unknown site) [cudaEventSynchronize, cudaStreamQuery, cudaStreamSynchronize]
  2 calls, 4 ms: train.py:42 loss.item() [cudaMemcpy]
  ... and 3 more sites
FAIL limits[1] class=S2: blocked 0.102 ms > 0.05 ms
  1 call, 0.1 ms: x<y>&"z' \x01 (mod) [cuStreamSynchronize]
  1 call, 0.002 ms: (unknown site) [cudaStreamSynchronize]
FAIL limits[2] class=sync api=cudaMemcpy: count 2 > 1
  2 calls, 4 ms: train.py:42 loss.item() [cudaMemcpy]
FAIL limits[3] "no item() in the loop" class=sync site=*train.py:42*: count 2 > 0
  2 calls, 4 ms: train.py:42 loss.item() [cudaMemcpy]
FAIL limits[4] class=S5 rank=0: blocked 3.35 ms > 1.5 ms
  2 calls, 3.35 ms: train.py:37 x.to(device, non_blocking=True) [cudaMemcpyAsync]
FAIL limits[5] class=S7 per_rank [rank 0]: count 37 > 10
  37 calls, 0.18 ms: (unknown site) [cudaStreamQuery]
WARN limits[6] class=sync range=step: no NVTX ranges recorded; limit not checked
WARN limits[7] class=sync rank=3: no recording of rank 3; limit not checked
syncspy check: 8 limits, 8 checks: 0 passed, 6 breached, 2 not checked
END
diff -u expected out >&2 || fail "output differs from the golden text"

# JUnit: well-formed (escaped site text included), one testcase per check, 6 failures, 2 skipped.
[ -s junit.xml ] || fail "no junit.xml"
if [ -n "${PYTHON3:-}" ] && command -v "$PYTHON3" >/dev/null 2>&1; then
	"$PYTHON3" -c "import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])" junit.xml ||
		fail "junit.xml is not well-formed: $(cat junit.xml)"
	"$PYTHON3" - junit.xml >junit.summary <<'PY' || fail "junit.xml: python"
import sys, xml.dom.minidom
doc = xml.dom.minidom.parse(sys.argv[1])
suite = doc.getElementsByTagName("testsuite")[0]
print(suite.getAttribute("tests"), suite.getAttribute("failures"), suite.getAttribute("skipped"))
for case in doc.getElementsByTagName("testcase"):
    kind = "pass"
    if case.getElementsByTagName("failure"):
        kind = "failure: " + case.getElementsByTagName("failure")[0].getAttribute("message")
    elif case.getElementsByTagName("skipped"):
        kind = "skipped: " + case.getElementsByTagName("skipped")[0].getAttribute("message")
    print(case.getAttribute("name"), "|", kind)
PY
	cat >junit.expected <<'END'
8 6 2
limits[0] class=sync | failure: count 46 > 40
limits[1] class=S2 | failure: blocked 0.102 ms > 0.05 ms
limits[2] class=sync api=cudaMemcpy | failure: count 2 > 1
limits[3] "no item() in the loop" class=sync site=*train.py:42* | failure: count 2 > 0
limits[4] class=S5 rank=0 | failure: blocked 3.35 ms > 1.5 ms
limits[5] class=S7 per_rank [rank 0] | failure: count 37 > 10
limits[6] class=sync range=step | skipped: no NVTX ranges recorded; limit not checked
limits[7] class=sync rank=3 | skipped: no recording of rank 3; limit not checked
END
	diff -u junit.expected junit.summary >&2 || fail "junit.xml content"
fi
grep -qF 'x&lt;y&gt;&amp;&quot;z&apos; \x01 (mod)' junit.xml || fail "site text not escaped in junit.xml"

# GitHub Actions: one ::error per breach, at FILE:LINE where the site has one ($GITHUB_WORKSPACE
# stripped), without file= for native or unknown sites. Without GITHUB_ACTIONS, none.
cat >gh.json <<'END'
{"version": 1, "limits": [
  {"site": "*train.py:50*", "max_count": 0},
  {"class": "S2", "max_count": 1},
  {"class": "S5", "max_count": 5}
]}
END
GITHUB_ACTIONS=true GITHUB_WORKSPACE=/ws "$SYNCSPY" check --budget gh.json rank0.sqlite >out 2>err
[ $? -eq 1 ] || fail "github: exit, want 1: $(cat out err)"
grep '^::' out >annotations
cat >expected <<'END'
::error file=src/train.py,line=50,title=syncspy check::limits[0] class=sync site=*train.py:50*: count 1 > 0; /ws/src/train.py:50 torch.cuda.synchronize(): 1 call, 5 ms
::error title=syncspy check::limits[1] class=S2: count 2 > 1; x<y>&"z' \x01 (mod): 1 call, 0.1 ms
END
diff -u expected annotations >&2 || fail "GitHub annotations"
env -u GITHUB_ACTIONS "$SYNCSPY" check --budget gh.json rank0.sqlite >out 2>err
grep -q '^::' out && fail "annotations without GITHUB_ACTIONS"
exit 0
