#!/bin/sh
# SPDX-License-Identifier: MIT
# t248: the stack size changed around a launch every step (examples/corpus c90 through the
# runtime, d42 through the driver). cudaDeviceSetLimit and cuCtxSetLimit are recorded with the
# limit (calls.aux) and the value (calls.bytes); a change of the stack size waits for the device
# (S6: the stand-in waits as the driver documents, so each one takes the queued kernel's time),
# another limit (the printf FIFO) does not (X1). The output is the same as without the shim. The
# report's stack-limit-in-loop names the raise and the restore as steady findings, alloc-in-loop
# none of them; the fix (the stack raised once before the loop) has no such finding.
. "$E2E_DIR/lib.sh"
scenarios=$TOP_SRCDIR/tests/progs/scenarios.c
driver=$TOP_SRCDIR/tests/progs/driver_loop.c
mark() { grep -n "MARK:$2 " "$1" | cut -d: -f1; }
# rule, site, phase, severity above info, count
findings() {
	q "SELECT json_extract(value, '\$.rule'), json_extract(value, '\$.site'), json_extract(value, '\$.phase'),
		json_extract(value, '\$.severity') <> 'info', json_extract(value, '\$.count')
		FROM json_each(json_extract(readfile('$1'), '\$.findings'))
		WHERE json_extract(value, '\$.rule') IN ('stack-limit-in-loop', 'alloc-in-loop')
		ORDER BY 1, length(json_extract(value, '\$.site')), 2"
}

"$PROGS/scenarios" stack-limit 20 >"$tmp/plain.out" 2>&1 || fail "stack-limit without the shim: $(cat "$tmp/plain.out")"
under_shim "$PROGS/scenarios" stack-limit 20 >"$tmp/shim.out" 2>"$tmp/shim.err" ||
	fail "stack-limit under the shim: $(cat "$tmp/shim.out" "$tmp/shim.err")"
[ "$(cat "$tmp/plain.out")" = "stack-limit per step 1024" ] || fail "stack-limit printed: $(cat "$tmp/plain.out")"
cmp -s "$tmp/plain.out" "$tmp/shim.out" || fail "output differs under the shim: $(cat "$tmp/shim.out")"
one_db
# each stack change waited for the 2 ms kernel queued before it (>= 1 ms; 30 of the 40 at least:
# a host descheduled between the launch and the set waits less), the FIFO's did not
golden "SELECT api, class, aux, min(bytes), max(bytes), count(*), sum(end_ns - start_ns >= 1000000) >= 30
	FROM api_calls WHERE api = 'cudaDeviceSetLimit' GROUP BY 1, 2, 3 ORDER BY 3" <<'END'
cudaDeviceSetLimit|S6|0|1024|16384|40|1
cudaDeviceSetLimit|X1|1|1048576|1048576|20|0
END
"$SYNCSPY" report --format json "$db" >"$tmp/runtime.json" 2>"$tmp/err" || fail "report exited $?: $(cat "$tmp/err")"
findings "$tmp/runtime.json" >"$tmp/runtime.findings"
steady=$(sed -n 's/^stack-limit-in-loop|[^|]*|steady|1|\([0-9]*\)$/\1/p' "$tmp/runtime.findings" | sort -u)
[ -n "$steady" ] && [ "$steady" -ge 15 ] || fail "steady counts: $(cat "$tmp/runtime.findings")"
cat >"$tmp/expected" <<END
stack-limit-in-loop|$scenarios:$(mark "$scenarios" stack-raise) in stack_limit|steady|1|$steady
stack-limit-in-loop|$scenarios:$(mark "$scenarios" stack-restore) in stack_limit|steady|1|$steady
END
diff -u "$tmp/expected" "$tmp/runtime.findings" >&2 || fail "runtime findings"
q "SELECT json_extract(value, '\$.advice') FROM json_each(json_extract(readfile('$tmp/runtime.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'stack-limit-in-loop'" | grep -q '^Set the stack size once before the loop' ||
	fail "no advice"

# the fix: one raise before the loop
rm -rf "$out"
under_shim "$PROGS/scenarios" stack-limit-once 20 >"$tmp/once.out" 2>"$tmp/once.err" ||
	fail "stack-limit-once: $(cat "$tmp/once.out" "$tmp/once.err")"
[ "$(cat "$tmp/once.out")" = "stack-limit once 16384" ] || fail "stack-limit-once printed: $(cat "$tmp/once.out")"
one_db
golden "SELECT class, count(*) FROM api_calls WHERE api = 'cudaDeviceSetLimit' GROUP BY 1 ORDER BY 1" <<'END'
S6|1
X1|20
END
"$SYNCSPY" report --format json "$db" >"$tmp/once.json" 2>"$tmp/err" || fail "report exited $?: $(cat "$tmp/err")"
[ -z "$(findings "$tmp/once.json")" ] || fail "findings of the fix: $(findings "$tmp/once.json")"

# through the driver
rm -rf "$out"
cd "$PROGS" || fail "no $PROGS"
"$PROGS/driver_loop" 20 stack-limit >"$tmp/cu-plain.out" 2>&1 || fail "driver_loop stack-limit: $(cat "$tmp/cu-plain.out")"
under_shim "$PROGS/driver_loop" 20 stack-limit >"$tmp/cu.out" 2>"$tmp/cu.err" ||
	fail "driver_loop stack-limit under the shim: $(cat "$tmp/cu.out" "$tmp/cu.err")"
cmp -s "$tmp/cu-plain.out" "$tmp/cu.out" || fail "driver output differs under the shim: $(cat "$tmp/cu.out")"
one_db
golden "SELECT api, layer, class, aux, count(*) FROM api_calls WHERE api LIKE 'cuCtx%Limit' GROUP BY 1, 2, 3, 4" <<'END'
cuCtxSetLimit|driver|S6|0|40
END
"$SYNCSPY" report --format json "$db" >"$tmp/driver.json" 2>"$tmp/err" || fail "report exited $?: $(cat "$tmp/err")"
findings "$tmp/driver.json" >"$tmp/driver.findings"
steady=$(sed -n 's/^stack-limit-in-loop|[^|]*|steady|1|\([0-9]*\)$/\1/p' "$tmp/driver.findings" | sort -u)
[ -n "$steady" ] && [ "$steady" -ge 15 ] || fail "driver steady counts: $(cat "$tmp/driver.findings")"
cat >"$tmp/expected" <<END
stack-limit-in-loop|$driver:$(mark "$driver" cu-stack-raise) in stack_limit|steady|1|$steady
stack-limit-in-loop|$driver:$(mark "$driver" cu-stack-restore) in stack_limit|steady|1|$steady
END
diff -u "$tmp/expected" "$tmp/driver.findings" >&2 || fail "driver findings"
finish
