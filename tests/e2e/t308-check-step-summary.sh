#!/bin/sh
# SPDX-License-Identifier: MIT
# t308: `syncspy check` with $GITHUB_STEP_SUMMARY (docs/budget.md, "GitHub step summary"): a
# Markdown section appended per run (heading naming the budget and the result, one table row
# per check, Markdown's punctuation escaped so that a site glob is no emphasis and a `|` no
# cell border, the summary line); a second run appends, the stdout and the exit status are
# those without it, an empty value writes nothing, an unwritable file is a note on stderr only.
. "$E2E_DIR/lib.sh"
sh "$TOP_SRCDIR/tests/fixtures/make-db.sh" "$tmp/rank0.sqlite" || fail "make-db.sh"
cat >"$tmp/budget.json" <<'END'
{
  "version": 1,
  "limits": [
    {"class": "sync", "max_count": 46, "max_blocked_ms": 20},
    {"name": "a|b", "site": "*train.py:50*", "max_count": 0},
    {"rank": 3, "class": "S1", "max_count": 0}
  ]
}
END
cd "$tmp" || fail "cd"
"$SYNCSPY" check --budget budget.json rank0.sqlite >plain.out 2>&1
want=$?
[ $want -eq 1 ] || fail "without a summary: exit $want, want 1: $(cat plain.out)"
GITHUB_STEP_SUMMARY=$tmp/summary.md "$SYNCSPY" check --budget budget.json rank0.sqlite >out 2>err
code=$?
[ $code -eq $want ] || fail "exit $code, want $want"
[ -s err ] && fail "stderr: $(cat err)"
cmp -s out plain.out || fail "stdout differs with GITHUB_STEP_SUMMARY set"
cat >expected <<'END'
### syncspy check: budget.json failed

| result | limit | measured |
| --- | --- | --- |
| PASS | limits\[0\] class=sync | count 46 \<= 46, blocked 13.031 ms \<= 20 ms |
| FAIL | limits\[1\] "a\|b" class=sync site=\*train.py:50\* | count 1 \> 0 |
| WARN | limits\[2\] class=S1 rank=3 | no recording of rank 3; limit not checked |

3 limits, 3 checks: 1 passed, 1 breached, 1 not checked

END
diff -u expected summary.md >&2 || fail "summary differs from the golden text"
GITHUB_STEP_SUMMARY=$tmp/summary.md "$SYNCSPY" check --budget budget.json rank0.sqlite >/dev/null 2>&1
cat expected expected >twice
cmp -s twice summary.md || fail "a second run did not append"
GITHUB_STEP_SUMMARY= "$SYNCSPY" check --budget budget.json rank0.sqlite >/dev/null 2>&1
[ $? -eq $want ] || fail "empty GITHUB_STEP_SUMMARY: exit changed"
GITHUB_STEP_SUMMARY=$tmp/no/such/dir/s.md "$SYNCSPY" check --budget budget.json rank0.sqlite >out 2>err
code=$?
[ $code -eq $want ] || fail "unwritable summary: exit $code, want $want"
grep -q '^syncspy: note: check: \$GITHUB_STEP_SUMMARY .*: No such file or directory: no summary written$' err ||
	fail "unwritable summary: stderr: $(cat err)"
exit 0
