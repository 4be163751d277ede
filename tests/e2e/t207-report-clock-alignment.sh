#!/bin/sh
# SPDX-License-Identifier: MIT
# t207: clock alignment across ranks (docs/rules.md and docs/export.md, "Clock alignment").
# Two ranks on different hosts, built from make-db.sh's fixture: rank 1's CLOCK_MONOTONIC is
# 5.000 s ahead of rank 0's and its wall-clock mapping (start_realtime_ns) 2 ms wrong; both make
# 20 blocking allreduces that end together (+-10 us of noise). The report estimates rank 1's
# offset from the collectives within 50 us of the truth (2 ms after the wall clock), the aligned
# end times agree within 50 us in the report's terms and on the export's time axis, and the
# straggler rule no longer sees the 2 ms. Ranks of one host get offset 0 by method same-host
# (fixture copies, and the 4-rank stand-in NCCL run recorded under the shim); a rank of another
# host without blocking collectives keeps the wall clock; one rank has no clock fields.
. "$E2E_DIR/lib.sh"

make_db() {
	SYNCSPY=$SYNCSPY sh "$TOP_SRCDIR/tests/fixtures/make-db.sh" "$1" || fail "make-db.sh $1"
}
# report JSON of the arguments into $tmp/report.json
report() {
	"$SYNCSPY" report --format json "$@" >"$tmp/report.json" 2>"$tmp/err" ||
		fail "report $* exited $?: $(cat "$tmp/err")"
}
# rank|clock_offset_ns|clock_offset_method|clock_offset_spread_ns (or null) per rank
clocks() {
	"$SQLITE3" -batch :memory: "SELECT json_extract(value, '\$.rank'),
		json_extract(value, '\$.clock_offset_ns'), json_extract(value, '\$.clock_offset_method'),
		coalesce(json_extract(value, '\$.clock_offset_spread_ns'), 'null')
		FROM json_each(json_extract(readfile('$tmp/report.json'), '\$.ranks'))"
}

# 20 allreduces on the fixture's communicator: true end E_k = 61 ms + k ms after rank 0's start;
# rank 0 waits 500 us in each, rank 1 200 us; each end has its own noise in [-10, +10] us.
# $1: the database, $2: its clock's shift (ns), $3: wait (ns), $4: noise seed.
add_allreduces() {
	"$SQLITE3" -batch "$1" "WITH RECURSIVE k(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM k WHERE n < 19)
	INSERT INTO calls(tid, api_id, class, start_ns, end_ns, stream, event, comm, bytes, dir,
	                  host_mem, ret, site_id, count, aux)
	SELECT 4242, 14, 'N2', 1000061000000 + n * 1000000 + $2 - $3,
	       1000061000000 + n * 1000000 + $2 + ((n * $4 + 3) % 21 - 10) * 1000,
	       139637976731648, NULL, 93825010000000, 4096, NULL, NULL, 0, NULL, 1, NULL FROM k" ||
		fail "allreduces in $1"
}

shift=5000000000   # rank 1's CLOCK_MONOTONIC is 5 s ahead
wrong=2000000      # and its wall-clock mapping 2 ms off: the truth of its clock_offset_ns
make_db "$tmp/r0.sqlite"
make_db "$tmp/r1.sqlite"
"$SQLITE3" -batch "$tmp/r0.sqlite" "UPDATE meta SET value = 'host-a' WHERE key = 'host'" || fail "r0"
add_allreduces "$tmp/r0.sqlite" 0 500000 7
"$SQLITE3" -batch "$tmp/r1.sqlite" "UPDATE meta SET value = 'host-b' WHERE key = 'host';
	UPDATE meta SET value = 1 WHERE key = 'rank';
	UPDATE meta SET value = 4243 WHERE key = 'pid';
	UPDATE meta SET value = value + $shift WHERE key IN ('start_mono_ns', 'end_mono_ns');
	UPDATE meta SET value = value + $wrong WHERE key = 'start_realtime_ns';
	UPDATE calls SET start_ns = start_ns + $shift, end_ns = end_ns + $shift;
	UPDATE threads SET first_ns = first_ns + $shift;
	UPDATE streams SET created_ns = created_ns + $shift;
	UPDATE comms SET created_ns = created_ns + $shift, rank = 1;" || fail "r1"
add_allreduces "$tmp/r1.sqlite" $shift 200000 13

report "$tmp/r0.sqlite" "$tmp/r1.sqlite"
clocks >"$tmp/actual"
[ "$(head -1 "$tmp/actual")" = "0|0|same-host|0" ] || fail "rank 0 (reference): $(head -1 "$tmp/actual")"
IFS='|' read -r r1 off1 method1 spread1 <<END
$(sed -n 2p "$tmp/actual")
END
[ "$r1|$method1" = "1|collectives" ] || fail "rank 1: $(cat "$tmp/actual")"
err=$((off1 - wrong)); [ $err -lt 0 ] && err=$((-err))
[ $err -le 50000 ] || fail "rank 1's offset $off1 ns, truth $wrong ns: off by $err ns"
[ "$spread1" -ge 0 ] && [ "$spread1" -le 20000 ] || fail "rank 1's spread $spread1 ns"

# Aligned end times (ANALYSIS-4: t - start_mono_ns + start_realtime_ns - clock_offset_ns) of the
# 20 blocking allreduces agree within 50 us.
aligned_ends() { # DB OFFSET: k|aligned end, of the allreduces that waited
	"$SQLITE3" -batch "$1" "SELECT row_number() OVER (ORDER BY start_ns), end_ns
		- (SELECT value FROM meta WHERE key = 'start_mono_ns')
		+ (SELECT value FROM meta WHERE key = 'start_realtime_ns') - $2
		FROM calls WHERE api_id = 14 AND end_ns - start_ns >= 100000 ORDER BY start_ns"
}
aligned_ends "$tmp/r0.sqlite" 0 >"$tmp/e0"
aligned_ends "$tmp/r1.sqlite" "$off1" >"$tmp/e1"
[ "$(wc -l <"$tmp/e0")" -eq 20 ] && [ "$(wc -l <"$tmp/e1")" -eq 20 ] || fail "20 allreduces each"
worst=$(join -t '|' "$tmp/e0" "$tmp/e1" | awk -F'|' '{d = $2 - $3; if (d < 0) d = -d; if (d > w) w = d} END {print w + 0}')
[ "$worst" -le 50000 ] || fail "aligned end times differ by up to $worst ns"
# Before alignment (the wall clock alone) they differ by about 2 ms: the fixture is meaningful.
unaligned=$(aligned_ends "$tmp/r1.sqlite" 0 | join -t '|' "$tmp/e0" - | awk -F'|' '{d = $3 - $2; if (d > w) w = d} END {print w + 0}')
[ "$unaligned" -ge 1900000 ] || fail "fixture: unaligned ends differ by only $unaligned ns"

# nccl-straggler: rank 1 starts 300 us after rank 0 once aligned (2.3 ms by wall clock alone).
"$SQLITE3" -batch :memory: "SELECT count(*) FROM json_each(json_extract(readfile('$tmp/report.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'nccl-straggler'" >"$tmp/actual"
echo 0 | diff -u - "$tmp/actual" >&2 || fail "nccl-straggler fired on aligned clocks"
# The note and the text report's section.
"$SQLITE3" -batch :memory: "SELECT value FROM json_each(json_extract(readfile('$tmp/report.json'), '\$.notes'))" |
	grep -q 'clocks aligned by the end times of blocking collectives' || fail "note: $(cat "$tmp/report.json")"
"$SYNCSPY" report "$tmp/r0.sqlite" "$tmp/r1.sqlite" >"$tmp/text" || fail "text report"
grep -q '^clock alignment ' "$tmp/text" || fail "text: no clock alignment section"
grep -Eq '^ +1  host-b +[0-9.]+  collectives ' "$tmp/text" || fail "text: rank 1 line: $(cat "$tmp/text")"

# The export: rank 1 moved by its offset; the allreduces' ends (ts + dur, us) agree within 50 us.
"$SYNCSPY" export -o "$tmp/trace.json" "$tmp/r0.sqlite" "$tmp/r1.sqlite" 2>"$tmp/err" ||
	fail "export exited $?: $(cat "$tmp/err")"
"$SQLITE3" -batch :memory: "WITH e AS (SELECT json_extract(value, '\$.pid') AS pid,
	json_extract(value, '\$.ts') + json_extract(value, '\$.dur') AS t,
	row_number() OVER (PARTITION BY json_extract(value, '\$.pid') ORDER BY json_extract(value, '\$.ts')) AS k
	FROM json_each(json_extract(readfile('$tmp/trace.json'), '\$.traceEvents'))
	WHERE json_extract(value, '\$.name') = 'ncclAllReduce' AND json_extract(value, '\$.tid') = 4242
	AND json_extract(value, '\$.dur') >= 100)
	SELECT count(*), max(abs(a.t - b.t)) <= 50 FROM e a JOIN e b ON a.k = b.k AND a.pid = 0 AND b.pid = 1" >"$tmp/actual"
echo "20|1" | diff -u - "$tmp/actual" >&2 || fail "export: aligned allreduce ends"
grep -q '"process_labels".*clock offset +2\.0[0-9][0-9] ms against .* by collectives' "$tmp/trace.json" ||
	fail "export: no clock label for rank 1"

# Same host: offset 0 exactly, even with a wrong-looking wall-clock mapping.
make_db "$tmp/s0.sqlite"
make_db "$tmp/s1.sqlite"
add_allreduces "$tmp/s0.sqlite" 0 500000 7
"$SQLITE3" -batch "$tmp/s1.sqlite" "UPDATE meta SET value = 1 WHERE key = 'rank';
	UPDATE meta SET value = 4243 WHERE key = 'pid';" || fail "s1"
add_allreduces "$tmp/s1.sqlite" 0 200000 13
report "$tmp/s0.sqlite" "$tmp/s1.sqlite"
clocks >"$tmp/actual"
printf '0|0|same-host|0\n1|0|same-host|0\n' | diff -u - "$tmp/actual" >&2 || fail "same host"
"$SYNCSPY" report "$tmp/s0.sqlite" "$tmp/s1.sqlite" | grep -q '^clock alignment' &&
	fail "text: a clock alignment section for one host"

# Another host without blocking collectives: the wall clock alone, spread unknown.
make_db "$tmp/w1.sqlite"
"$SQLITE3" -batch "$tmp/w1.sqlite" "UPDATE meta SET value = 'host-c' WHERE key = 'host';
	UPDATE meta SET value = 1 WHERE key = 'rank'; UPDATE meta SET value = 4243 WHERE key = 'pid';" || fail "w1"
make_db "$tmp/w0.sqlite"
report "$tmp/w0.sqlite" "$tmp/w1.sqlite"
clocks >"$tmp/actual"
printf '0|0|same-host|0\n1|0|wall-clock|null\n' | diff -u - "$tmp/actual" >&2 || fail "wall clock"

# One rank: no clock fields (the document is as before).
report "$tmp/r0.sqlite"
"$SQLITE3" -batch :memory: "SELECT count(*) FROM json_each(json_extract(readfile('$tmp/report.json'), '\$.ranks[0]'))
	WHERE key GLOB 'clock_*'" >"$tmp/actual"
echo 0 | diff -u - "$tmp/actual" >&2 || fail "one rank has clock fields"

# The 4-rank stand-in NCCL run, recorded under the shim: one host, same-host everywhere.
under_shim env SYNCSPY_QUIET=1 "$PROGS/scenarios" nccl 4 >/dev/null || fail "scenario nccl 4"
report "$out"
clocks >"$tmp/actual"
printf '0|0|same-host|0\n1|0|same-host|0\n2|0|same-host|0\n3|0|same-host|0\n' | diff -u - "$tmp/actual" >&2 ||
	fail "nccl 4: not same-host"
exit 0
