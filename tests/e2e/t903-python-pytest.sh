#!/bin/sh
# SPDX-License-Identifier: MIT
# t903: the pytest plugin (syncspy.pytest_plugin, registered by the package's entry point;
# docs/python.md): @pytest.mark.no_sync and sync_budget hold a test's call (not its fixtures)
# to its sync points, and a failing test names them with their lines; --syncspy-budget FILE
# holds every test to a budget file's limits, and a limit that cannot be checked per test is a
# usage error naming it; without the shim, guarded tests fail saying how to start pytest (never
# skipped), and the header says so. Debian's pytest (python3-pytest), in a venv that sees it.
. "$E2E_DIR/lib.sh"
. "$E2E_DIR/python-lib.sh"
need_module "$pybase" pytest
stand_in_env
make_wheel
make_venv "$tmp/venv" --system-site-packages
py=$tmp/venv/bin/python
mkdir -p "$tmp/cases"
cases=$tmp/cases/test_syncs.py
cp "$TOP_SRCDIR/tests/progs/py_pytest_cases.py" "$cases"
mark() { grep -n "MARK:$1\$" "$cases" | cut -d: -f1; }
pytest_run() { # pytest_run NAME ARGS...: pytest under the shim, its verdicts in $tmp/NAME.verdicts
	name=$1
	shift
	(cd "$tmp/cases" && "$py" -m syncspy run -o "$tmp/rec-$name" -- "$py" -m pytest -p no:cacheprovider \
		-rA "$@" test_syncs.py >"$tmp/$name.out" 2>&1)
	status=$?
	sed -n 's/^\(PASSED\|FAILED\|ERROR\) test_syncs.py::\([a-z_0-9]*\).*/\2 \1/p' "$tmp/$name.out" | sort >"$tmp/$name.verdicts"
}
expect_verdicts() {
	cat >"$tmp/expected"
	diff -u "$tmp/expected" "$tmp/$1.verdicts" >&2 || fail "pytest $1: unexpected verdicts ($(tail -30 "$tmp/$1.out"))"
}

pytest_run markers
[ $status -eq 1 ] || fail "pytest with failing tests: exit $status"
expect_verdicts markers <<'END'
test_fail_budget_s1 FAILED
test_fail_own_assertion FAILED
test_fail_two_syncs FAILED
test_pass_budget_of_two PASSED
test_pass_enqueues_only PASSED
test_pass_fixture_syncs PASSED
test_pass_other_class PASSED
test_pass_unmarked PASSED
END
grep -q '^syncspy: recording; sync guards count$' "$tmp/markers.out" || fail "no header line"
# a failure is its sync points, without the plugin's traceback
cat >"$tmp/expected" <<END
_____________________________ test_fail_two_syncs ______________________________
syncspy: no_sync: 2 sync points in the test's call (allowed: 0):
  $cases:$(mark two_a) in test_fail_two_syncs: cudaDeviceSynchronize S1 (device synchronize) x1
  $cases:$(mark two_b) in test_fail_two_syncs: cudaStreamSynchronize S2 (stream synchronize) x1
_____________________________ test_fail_budget_s1 ______________________________
syncspy: sync_budget(max=1): 2 sync points in the test's call (allowed: 1):
  $cases:$(mark budget_s1) in test_fail_budget_s1: cudaDeviceSynchronize S1 (device synchronize) x2
END
sed -n '/_ test_fail_two_syncs _/,/_ test_fail_own_assertion _/p' "$tmp/markers.out" | sed '$d' >"$tmp/named"
diff -u "$tmp/expected" "$tmp/named" >&2 || fail "failing tests do not name their sync points"
grep -q "AssertionError: the test's own failure" "$tmp/markers.out" || fail "a test's own failure is not its own"

# a budget file for every test: one S1 allowed per test, none from the unmarked test's line
cat >"$tmp/budget.json" <<END
{"version": 1, "allow": ["*in test_pass_budget_of_two"],
 "limits": [{"name": "one device sync", "class": "S1", "max_count": 1},
            {"name": "unmarked line", "site": "*test_syncs.py:$(mark unmarked) in *", "max_count": 0}]}
END
pytest_run budget --syncspy-budget "$tmp/budget.json"
[ $status -eq 1 ] || fail "pytest with a budget: exit $status"
# the same verdicts as the markers', but for the unmarked test the budget holds to its line
sed 's/^test_pass_unmarked PASSED$/test_pass_unmarked FAILED/' "$tmp/markers.verdicts" | expect_verdicts budget
grep -q "^syncspy: unmarked line: 1 sync point in the test's call (allowed: 0):" "$tmp/budget.out" ||
	fail "the budget's site limit: $(cat "$tmp/budget.out")"

# what a budget file cannot say of one test: a usage error naming it
echo '{"version": 1, "limits": [{"class": "sync", "max_blocked_ms": 5}]}' >"$tmp/blocked.json"
pytest_run blocked --syncspy-budget "$tmp/blocked.json"
[ $status -eq 4 ] || fail "pytest with a bad budget: exit $status, not pytest's usage error 4"
grep -q 'syncspy: .*blocked.json: \$.limits\[0\].max_blocked_ms: not checkable per test' "$tmp/blocked.out" ||
	fail "bad budget: $(cat "$tmp/blocked.out")"

# without the shim: the guarded tests fail, saying how to start; none is skipped
(cd "$tmp/cases" && "$py" -m pytest -p no:cacheprovider -rA test_syncs.py >"$tmp/bare.out" 2>&1)
[ $? -eq 1 ] || fail "pytest without the shim did not fail"
grep -q '^syncspy: not recording: tests marked no_sync/sync_budget fail. To record, .*python -m syncspy -m pytest ARGS' "$tmp/bare.out" ||
	fail "no header saying how to start: $(head -20 "$tmp/bare.out")"
grep -q 'NotRecording: syncspy: libsyncspy.so is not loaded in this process' "$tmp/bare.out" || fail "no NotRecording"
grep -q ' 7 failed, 1 passed' "$tmp/bare.out" || fail "without the shim: $(tail -3 "$tmp/bare.out")"
grep -qi 'skipped' "$tmp/bare.out" && fail "tests skipped without the shim"
exit 0
