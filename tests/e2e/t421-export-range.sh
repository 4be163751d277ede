#!/bin/sh
# SPDX-License-Identifier: MIT
# t421: `syncspy export --start S --end S` and `--syncs-only` (docs/export.md, "Part of a
# recording"), so that a long run's trace opens in Perfetto: the trace is valid JSON; with a
# range, every call and GPU event starts inside it (seconds from the recording's start,
# meta.start_mono_ns) and every call that starts there is in it, on the same time axis as the
# whole trace (EXPORT-1); with --syncs-only only S1-S7 slices, no flows, no GPU work. Bad values
# are usage errors (exit 2).
. "$E2E_DIR/lib.sh"
LD_LIBRARY_PATH=$STANDIN_DIR/cupti:$LD_LIBRARY_PATH
export LD_LIBRARY_PATH SYNCSPY_CUPTI=1
# the whole run traced: the range's GPU work must be there to be kept (the default would sample
# this loop, its first gap, 1.6 s, past the range: CUPTI-5)
SYNCSPY_CUPTI_SAMPLE=all under_shim "$PROGS/capture" time 300 >/dev/null 2>&1 || fail "capture time failed"
one_db
start=$(q "SELECT value FROM meta WHERE key = 'start_mono_ns'")
first=$(q "SELECT min(start_ns) FROM calls")
lo=$((start + 100000000))
hi=$((start + 200000000))

"$SYNCSPY" export --start 0.1 --end 0.2 -o "$tmp/part.json" "$db" 2>"$tmp/err" || fail "export --start --end: $(cat "$tmp/err")"
"$SYNCSPY" export -o "$tmp/all.json" "$db" 2>"$tmp/err" || fail "export: $(cat "$tmp/err")"
ev() { # ev TRACE SELECT [WHERE]: SQL over the events of TRACE (value: one event)
	rq "SELECT $2 FROM json_each(json_extract(readfile('$1'), '\$.traceEvents')) ${3:+WHERE $3}"
}
[ "$(rq "SELECT json_valid(readfile('$tmp/part.json'))")" = 1 ] || fail "not valid JSON"
# host calls on thread tracks (tid < 2^30) and GPU slices, in microseconds from the first call
[ "$(ev "$tmp/part.json" "count(*) FILTER (WHERE json_extract(value, '\$.ph') = 'X'
	AND (json_extract(value, '\$.ts') * 1000 < $lo - $first - 1
	  OR json_extract(value, '\$.ts') * 1000 >= $hi - $first))")" = 0 ] ||
	fail "events outside the range"
want=$(q "SELECT count(*) FROM calls WHERE start_ns >= $lo AND start_ns < $hi")
[ "$want" -gt 0 ] || fail "no call in the range: the test needs some"
[ "$(ev "$tmp/part.json" "count(*) FILTER (WHERE json_extract(value, '\$.ph') = 'X'
	AND json_extract(value, '\$.tid') < 1073741824)")" = "$want" ] ||
	fail "not the $want calls of the range on the thread track"
[ "$(ev "$tmp/part.json" "count(*) FILTER (WHERE json_extract(value, '\$.cat') = 'gpu kernel')")" -gt 0 ] ||
	fail "no GPU work in the range"
# the same events as in the whole trace, at the same times
ev "$tmp/part.json" "json_extract(value, '\$.ts') || ' ' || json_extract(value, '\$.name')" "json_extract(value, '\$.ph') = 'X'" | sort >"$tmp/part.ts"
ev "$tmp/all.json" "json_extract(value, '\$.ts') || ' ' || json_extract(value, '\$.name')" "json_extract(value, '\$.ph') = 'X'" | sort >"$tmp/all.ts"
[ -z "$(comm -23 "$tmp/part.ts" "$tmp/all.ts")" ] || fail "events the whole trace does not have"
[ "$(wc -l <"$tmp/part.ts")" -lt "$(wc -l <"$tmp/all.ts")" ] || fail "the range kept everything"

"$SYNCSPY" export --syncs-only -o "$tmp/syncs.json" "$db" 2>"$tmp/err" || fail "export --syncs-only: $(cat "$tmp/err")"
[ "$(rq "SELECT json_valid(readfile('$tmp/syncs.json'))")" = 1 ] || fail "--syncs-only: not valid JSON"
[ "$(ev "$tmp/syncs.json" "count(*) FILTER (WHERE json_extract(value, '\$.ph') IN ('X', 's', 'f')
	AND coalesce(json_extract(value, '\$.cat'), '') NOT GLOB 'S[1-7]')")" = 0 ] ||
	fail "--syncs-only kept other events: $(ev "$tmp/syncs.json" "DISTINCT json_extract(value, '\$.cat')")"
[ "$(ev "$tmp/syncs.json" "count(*) FILTER (WHERE json_extract(value, '\$.ph') = 'X'
	AND json_extract(value, '\$.tid') < 1073741824)")" = "$(q "SELECT count(*) FROM calls WHERE class GLOB 'S[1-7]'")" ] ||
	fail "--syncs-only lost sync points"

usage() {
	expected=$1
	shift
	usage_error "syncspy: export: $expected" "$tmp/bad.json" "$SYNCSPY" export "$@" -o "$tmp/bad.json" "$db"
}
usage "--start soon: not a number of seconds >= 0" --start soon
usage "--end -2: not a number of seconds >= 0" --end -2
usage "--end must be after --start" --start 2 --end 1
finish
