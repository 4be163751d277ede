#!/bin/sh
# SPDX-License-Identifier: MIT
# t204: rule legacy-stream flags work on the legacy default stream only when the process also
# used a blocking stream (the legacy stream serializes with those), not when its other streams
# are non-blocking (torch's side streams, for one). An event record on the legacy stream beside
# work there is the work's finding (one per site of work: the record's fix is the work's); event
# records alone there are a finding of their own. A device-to-device cudaMemcpy, which returns at
# once with its copy queued on the legacy stream, is work there too (d29 of examples/corpus).
# Threads that share the legacy stream (c64: stream 0 in every worker) serialize on it whatever
# other streams exist: their launches and their syncs of stream 0 are findings, not when each
# thread has a stream of its own.
. "$E2E_DIR/lib.sh"
under_shim "$PROGS/scenarios" legacy-blocking >/dev/null || fail "scenario failed"
"$SYNCSPY" report --format json "$out" >"$tmp/blocking.json" || fail "report failed"
rm -rf "$out"
under_shim "$PROGS/scenarios" legacy-nonblocking >/dev/null || fail "scenario failed"
"$SYNCSPY" report --format json "$out" >"$tmp/nonblocking.json" || fail "report failed"
rm -rf "$out"
under_shim "$PROGS/scenarios" legacy-records >/dev/null || fail "scenario failed"
"$SYNCSPY" report --format json "$out" >"$tmp/records.json" || fail "report failed"
for kind in legacy-dtod legacy-dtod-nonblocking legacy-threads legacy-threads-own; do
	rm -rf "$out"
	under_shim "$PROGS/scenarios" $kind >/dev/null || fail "scenario $kind failed"
	"$SYNCSPY" report --format json "$out" >"$tmp/$kind.json" || fail "report failed"
done
for kind in legacy-dtod legacy-dtod-nonblocking legacy-threads legacy-threads-own; do
	"$SQLITE3" :memory: "SELECT '$kind', substr(site, instr(site, ' in ') + 4), substr(detail, 1, instr(detail, ' x') - 1) FROM (SELECT json_extract(f.value, '\$.site') AS site, json_extract(f.value, '\$.detail') AS detail FROM json_each(readfile('$tmp/$kind.json'), '\$.findings') f WHERE json_extract(f.value, '\$.rule') = 'legacy-stream') ORDER BY 2"
done >"$tmp/actual-sites"
cat >"$tmp/expected-sites" <<'END'
legacy-dtod|legacy_dtod|cudaMemcpy
legacy-threads|launch_sleep|cudaLaunchKernel
legacy-threads|legacy_worker|cudaStreamSynchronize
END
diff -u "$tmp/expected-sites" "$tmp/actual-sites" >&2 || fail "legacy-stream: D2D copies, shared legacy stream"
# The threads' calls interleave: a site's steps are counted once each, never more than the rank's
# steady steps ("in 9 of 4 steady steps" before).
over=$("$SQLITE3" :memory: "SELECT count(*) FROM json_each(readfile('$tmp/legacy-threads.json'), '\$.findings') f WHERE json_extract(f.value, '\$.steps') > json_extract(readfile('$tmp/legacy-threads.json'), '\$.ranks[0].steps.steady')")
[ "$over" = 0 ] || fail "$over findings count more steps than the steady state has"
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
