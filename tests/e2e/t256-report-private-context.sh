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
# every context call, with its context (aux) and device (ptr: device 0 stored, not NULL); the
# primary context's retain and cuCtxSetCurrent come first, before any other call the shim wraps,
# and pass through unrecorded (SHIM-9: a context call never starts the recording)
golden "SELECT api, layer, class, count(*), sum(aux IS NOT NULL), sum(ptr IS NOT NULL)
	FROM api_calls WHERE api LIKE 'cuCtx%' OR api LIKE 'cuDevicePrimaryCtx%' GROUP BY 1, 2, 3 ORDER BY 1" <<'END'
cuCtxCreate_v4|driver|X1|1|1|1
cuCtxDestroy_v2|driver|X1|1|1|0
cuCtxPopCurrent_v2|driver|X1|21|0|0
cuCtxPushCurrent_v2|driver|X1|21|21|0
cuDevicePrimaryCtxRelease_v2|driver|X1|1|0|1
END
# the context created is the one pushed every step and destroyed
golden "SELECT count(DISTINCT aux) FROM api_calls WHERE api IN ('cuCtxCreate_v4', 'cuCtxPushCurrent_v2', 'cuCtxDestroy_v2')" <<'END'
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
grep -q "beside another context (the device's primary one, or one made current before the recording started), both given work in the steady state" "$tmp/details" ||
	fail "detail: $(cat "$tmp/details")"
q "SELECT json_extract(value, '\$.advice') FROM json_each(json_extract(readfile('$tmp/private-context.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'private-context'" | grep -q '^Share one context per device' ||
	fail "no advice"

# one context per GPU is no finding: the same recording with the engine's context said to be on
# device 1 and another thread's context made on device 0 (the main thread's, made current before
# the recording started, is then of no known device, and not taken for device 1's)
cp "$db" "$tmp/devices.sqlite"
"$SQLITE3" -batch "$tmp/devices.sqlite" "UPDATE calls SET ptr = 1 WHERE api_id = (SELECT id FROM apis WHERE name = 'cuCtxCreate_v4');
	INSERT INTO calls(tid, api_id, class, start_ns, end_ns, ret, aux, ptr)
	SELECT tid + 1, api_id, class, start_ns - 1, start_ns - 1, 0, 4242, 0 FROM calls
	WHERE api_id = (SELECT id FROM apis WHERE name = 'cuCtxCreate_v4')" || fail "devices.sqlite"
"$SYNCSPY" report --format json "$tmp/devices.sqlite" >"$tmp/devices.json" 2>"$tmp/err" || fail "report exited $?: $(cat "$tmp/err")"
[ -z "$(findings "$tmp/devices.json")" ] || fail "findings with a context per device: $(findings "$tmp/devices.json")"

# the fix: the engine's kernels in the primary context, retained again (recorded: the recording
# had started)
run_mode primary-context
golden "SELECT count(*), count(DISTINCT aux) FROM api_calls WHERE api = 'cuDevicePrimaryCtxRetain'" <<'END'
1|1
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
