#!/bin/sh
# SPDX-License-Identifier: MIT
# t601: the GPU suite's checkers (check_expect.py, check_coverage.py, check_cupti.py,
# check_clock.py) pass their own tests, which need no
# GPU: hand-made databases and reports, right and wrong, against expectation files.
. "$E2E_DIR/lib.sh"
[ -n "${PYTHON3:-}" ] || skip "no python3"
cd "$TOP_SRCDIR" || fail "no source tree"
"$PYTHON3" tests/gpu/test_check_expect.py >"$tmp/a.out" 2>&1 || fail "test_check_expect: $(tail -5 "$tmp/a.out")"
"$PYTHON3" tests/gpu/test_check_findings.py >"$tmp/b.out" 2>&1 || fail "test_check_findings: $(tail -5 "$tmp/b.out")"
"$PYTHON3" tests/gpu/test_check_coverage.py >"$tmp/c.out" 2>&1 || fail "test_check_coverage: $(grep WRONG "$tmp/c.out")"
"$PYTHON3" tests/gpu/test_check_cupti.py >"$tmp/d.out" 2>&1 || fail "test_check_cupti: $(grep WRONG "$tmp/d.out")"
"$PYTHON3" tests/gpu/test_check_clock.py >"$tmp/e.out" 2>&1 || fail "test_check_clock: $(grep WRONG "$tmp/e.out")"
