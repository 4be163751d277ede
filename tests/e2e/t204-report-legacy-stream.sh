#!/bin/sh
# SPDX-License-Identifier: MIT
# t204: rule legacy-stream flags work on the legacy default stream only when the process also
# used a blocking stream (the legacy stream serializes with those), not when its other streams
# are non-blocking (torch's side streams, for one). An event record on the legacy stream beside
# work there is the work's finding (one per site of work: the record's fix is the work's); event
# records alone there are a finding of their own.
. "$E2E_DIR/lib.sh"
under_shim "$PROGS/scenarios" legacy-blocking >/dev/null || fail "scenario failed"
"$SYNCSPY" report --format json "$out" >"$tmp/blocking.json" || fail "report failed"
rm -rf "$out"
under_shim "$PROGS/scenarios" legacy-nonblocking >/dev/null || fail "scenario failed"
"$SYNCSPY" report --format json "$out" >"$tmp/nonblocking.json" || fail "report failed"
rm -rf "$out"
under_shim "$PROGS/scenarios" legacy-records >/dev/null || fail "scenario failed"
"$SYNCSPY" report --format json "$out" >"$tmp/records.json" || fail "report failed"
for kind in blocking nonblocking records; do
	"$SQLITE3" :memory: "SELECT '$kind', count(*), coalesce(sum(json_extract(f.value, '\$.count')), 0) FROM json_each(readfile('$tmp/$kind.json'), '\$.findings') f WHERE json_extract(f.value, '\$.rule') = 'legacy-stream'"
done >"$tmp/actual"
# count: the steady state's launches, the 4 iterations after the first (warm-up)
cat >"$tmp/expected" <<'END'
blocking|1|4
nonblocking|0|0
records|1|4
END
diff -u "$tmp/expected" "$tmp/actual" >&2 || fail "legacy-stream findings"
