#!/bin/sh
# SPDX-License-Identifier: MIT
# t256: an engine's kernels in a context of its own (examples/corpus d49: cuCtxCreate before the
# loop, pushed and popped every step) beside the program's in the primary context; the fix (the
# engine retains the primary context, d51); and a context made and destroyed every step. The
# context calls are recorded (X1: the context in aux, the device in ptr) and the output is the
# same as without the shim. The report's private-context names the creation and the destroy of
# the private context and of the per-step one, steady, and nothing in the fix.
. "$E2E_DIR/lib.sh"
driver=$TOP_SRCDIR/tests/progs/driver_loop.c
mark() { grep -n "MARK:$2 " "$1" | cut -d: -f1; }
# rule, site, phase, severity above info, count
findings() {
	q "SELECT json_extract(value, '\$.rule'), json_extract(value, '\$.site'), json_extract(value, '\$.phase'),
		json_extract(value, '\$.severity') <> 'info', json_extract(value, '\$.count')
		FROM json_each(json_extract(readfile('$1'), '\$.findings'))
		WHERE json_extract(value, '\$.rule') = 'private-context'
		ORDER BY 2"
}
cd "$PROGS" || fail "no $PROGS"
run_mode() { # MODE: runs it without and under the shim, leaves $db and $tmp/MODE.json
	rm -rf "$out"
	"$PROGS/driver_loop" 20 "$1" >"$tmp/$1-plain.out" 2>&1 || fail "driver_loop $1: $(cat "$tmp/$1-plain.out")"
	under_shim "$PROGS/driver_loop" 20 "$1" >"$tmp/$1.out" 2>"$tmp/$1.err" ||
		fail "driver_loop $1 under the shim: $(cat "$tmp/$1.out" "$tmp/$1.err")"
	[ "$(cat "$tmp/$1.out")" = "$1 ok" ] || fail "$1 printed: $(cat "$tmp/$1.out")"
	cmp -s "$tmp/$1-plain.out" "$tmp/$1.out" || fail "$1: output differs under the shim"
	one_db
	"$SYNCSPY" report --format json "$db" >"$tmp/$1.json" 2>"$tmp/err" || fail "report exited $?: $(cat "$tmp/err")"
}

run_mode private-context
# every context call, with its context (aux) and device (ptr: device 0 stored, not NULL)
golden "SELECT api, layer, class, count(*), sum(aux IS NOT NULL), sum(ptr IS NOT NULL)
	FROM api_calls WHERE api LIKE 'cuCtx%' OR api LIKE 'cuDevicePrimaryCtx%' GROUP BY 1, 2, 3 ORDER BY 1" <<'END'
cuCtxCreate_v4|driver|X1|1|1|1
cuCtxDestroy_v2|driver|X1|1|1|0
cuCtxPopCurrent_v2|driver|X1|21|0|0
cuCtxPushCurrent_v2|driver|X1|21|21|0
cuCtxSetCurrent|driver|X1|1|1|0
cuDevicePrimaryCtxRelease_v2|driver|X1|1|0|1
cuDevicePrimaryCtxRetain|driver|X1|1|1|1
END
# the context created is the one pushed every step and destroyed; the primary one is another
golden "SELECT count(DISTINCT aux) FROM api_calls WHERE api IN ('cuCtxCreate_v4', 'cuCtxPushCurrent_v2', 'cuCtxDestroy_v2')
	UNION ALL SELECT count(*) FROM api_calls p, api_calls c WHERE p.api = 'cuDevicePrimaryCtxRetain'
	AND c.api = 'cuCtxCreate_v4' AND p.aux <> c.aux" <<'END'
1
1
END
findings "$tmp/private-context.json" >"$tmp/private.findings"
cat >"$tmp/expected" <<END
private-context|$driver:$(mark "$driver" ctx-create) in contexts|steady|1|1
private-context|$driver:$(mark "$driver" ctx-destroy) in contexts|steady|1|1
END
diff -u "$tmp/expected" "$tmp/private.findings" >&2 || fail "private-context findings"
q "SELECT json_extract(value, '\$.detail') FROM json_each(json_extract(readfile('$tmp/private-context.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'private-context'" >"$tmp/details"
grep -q "beside the device's primary context, both given work in the steady state" "$tmp/details" ||
	fail "detail: $(cat "$tmp/details")"
q "SELECT json_extract(value, '\$.advice') FROM json_each(json_extract(readfile('$tmp/private-context.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'private-context'" | grep -q '^Share one context per device' ||
	fail "no advice"

# the fix: the engine's kernels in the primary context, retained twice
run_mode primary-context
golden "SELECT count(*), count(DISTINCT aux) FROM api_calls WHERE api = 'cuDevicePrimaryCtxRetain'" <<'END'
2|1
END
[ -z "$(findings "$tmp/primary-context.json")" ] || fail "findings of the fix: $(findings "$tmp/primary-context.json")"

# a context made and destroyed every step: both lines, every step
run_mode context-per-step
findings "$tmp/context-per-step.json" >"$tmp/per-step.findings"
steady=$(sed -n 's/^private-context|[^|]*|steady|1|\([0-9]*\)$/\1/p' "$tmp/per-step.findings" | sort -u)
[ -n "$steady" ] && [ "$steady" -ge 15 ] || fail "per-step counts: $(cat "$tmp/per-step.findings")"
cat >"$tmp/expected" <<END
private-context|$driver:$(mark "$driver" ctx-create-step) in contexts|steady|1|$steady
private-context|$driver:$(mark "$driver" ctx-destroy-step) in contexts|steady|1|$steady
END
diff -u "$tmp/expected" "$tmp/per-step.findings" >&2 || fail "per-step findings"
finish
