#!/bin/sh
# SPDX-License-Identifier: MIT
# t201: every rule of docs/rules.md fires on a database built to trigger it, and not on a clean
# one. Single-rank rules: make-db.sh's fixture plus tests/fixtures/report-rules.sql (fixed times:
# exact findings), then recordings of the scenarios under the shim (stand-ins: times vary, so
# only rule, site and count are compared). Cross-rank rules: two copies of the fixture as ranks
# 0 and 1 of 2, rank 1 late at its collectives and blocked 20 ms more.
. "$E2E_DIR/lib.sh"

# findings JSON: rule|rank|count|blocked_ns|site, in report order
findings() {
	"$SYNCSPY" report --format json "$@" >"$tmp/report.json" || fail "report $* exited $?"
	"$SQLITE3" -batch :memory: "SELECT json_extract(value, '\$.rule'), json_extract(value, '\$.rank'),
		json_extract(value, '\$.count'), json_extract(value, '\$.blocked_ns'), json_extract(value, '\$.site')
		FROM json_each(json_extract(readfile('$tmp/report.json'), '\$.findings'))"
}

make_db() {
	SYNCSPY=$SYNCSPY sh "$TOP_SRCDIR/tests/fixtures/make-db.sh" "$1" || fail "make-db.sh $1"
}

make_db "$tmp/rules.sqlite"
"$SQLITE3" -batch "$tmp/rules.sqlite" <"$TOP_SRCDIR/tests/fixtures/report-rules.sql" || fail "report-rules.sql"
findings "$tmp/rules.sqlite" >"$tmp/actual"
# The fixture has no loop: no steps, so the sites with 3 calls or more between the first and the
# last GPU work (the cudaMalloc site, the copy before a kernel) are judged first, by cost over the wall time; the others are `info`, by
# blocked time (docs/rules.md, "Steady state").
cat >"$tmp/expected" <<'END'
alloc-in-loop|0|4|1500000|libtorch_cuda.so+0x1234
copy-on-compute-stream|0|3|9000|train.py:62 batch.cuda(non_blocking=True)
host-sync|0|1|5000000|train.py:50 torch.cuda.synchronize()
sync-copy|0|2|4000000|train.py:42 loss.item()
pageable-async-copy|0|2|3350000|train.py:37 x.to(device, non_blocking=True)
memset-pinned|0|1|300000|train.py:60 torch.zeros(pin_memory=True)
polling|0|37|180000|(no call site)
host-sync|0|2|151500|(no call site)
host-sync|0|1|100000|libtorch_cuda.so+0x1234
legacy-stream|0|1|4000|train.py:61 legacy_kernel()
END
diff -u "$tmp/expected" "$tmp/actual" >&2 || fail "findings of the rules fixture"

# copy-on-compute-stream when one site shows two copy APIs (a Python line whose copies reach
# CUDA through the runtime and through the driver): the rule's SQL form, one finding for the
# site, its count the sum, both APIs named.
cp "$tmp/rules.sqlite" "$tmp/two-apis.sqlite"
"$SQLITE3" -batch "$tmp/two-apis.sqlite" "INSERT INTO apis(id, name, layer, class)
	VALUES (30, 'cuMemcpyHtoDAsync_v2', 'driver', 'E1');
	INSERT INTO calls(tid, api_id, class, start_ns, end_ns, stream, bytes, dir, host_mem, ret,
	                  site_id, count) VALUES
	 (4242, 30, 'E1', 1000072000000, 1000072003000, 139637976731648, 1048576, 1, 2, 0, 7, 1),
	 (4242, 9, 'E1', 1000072004000, 1000072008000, 139637976731648, NULL, NULL, NULL, 0, NULL, 1);" ||
	fail "two-apis fixture"
"$SYNCSPY" report --format json "$tmp/two-apis.sqlite" >"$tmp/two.json" || fail "report of two APIs"
"$SQLITE3" -batch :memory: "SELECT json_extract(value, '\$.count'), json_extract(value, '\$.site'),
	json_extract(value, '\$.detail') LIKE '%cudaMemcpyAsync%' AND json_extract(value, '\$.detail') LIKE '%cuMemcpyHtoDAsync_v2%'
	FROM json_each(json_extract(readfile('$tmp/two.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'copy-on-compute-stream'" >"$tmp/actual"
echo "4|train.py:62 batch.cuda(non_blocking=True)|1" | diff -u - "$tmp/actual" >&2 ||
	fail "copy-on-compute-stream with two APIs at one site"

# The pageable copy's estimate: blocked time minus 64 MiB at the default 45 GB/s, per call.
"$SQLITE3" -batch :memory: "SELECT json_extract(value, '\$.estimate_ns'), json_extract(value, '\$.bytes')
	FROM json_each(json_extract(readfile('$tmp/report.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'pageable-async-copy'" >"$tmp/actual"
echo "367384|134217728" | diff -u - "$tmp/actual" >&2 || fail "pageable copy estimate"

# The fixture alone: its one cudaMalloc is not repeated, no loop, no legacy work.
make_db "$tmp/base.sqlite"
findings "$tmp/base.sqlite" | cut -d'|' -f1 | sort -u >"$tmp/actual"
printf '%s\n' host-sync pageable-async-copy polling sync-copy | diff -u - "$tmp/actual" >&2 ||
	fail "rules on the plain fixture"

# Recorded scenarios: the rule each one is built to trigger, and nothing about copies where there
# are none (e123 is clean of copies; s7 only polls).
scenario() {
	rm -rf "$out"
	under_shim env SYNCSPY_QUIET=1 "$PROGS/scenarios" "$1" >/dev/null || fail "scenario $1"
	findings "$out" | cut -d'|' -f1,3 | sort >"$tmp/$1.rules"
}
expect_rules() {
	cut -d'|' -f1 "$tmp/$1.rules" | sort -u | tr '\n' ' ' >"$tmp/actual"
	echo "$2" | tr -d '\n' | diff -u - "$tmp/actual" >&2 || fail "rules of scenario $1"
}
scenario s4
expect_rules s4 "sync-copy "
scenario s5
expect_rules s5 "host-sync pageable-async-copy "
scenario s6
expect_rules s6 "host-sync legacy-stream memset-pinned "
scenario s7
expect_rules s7 "polling "
[ "$(wc -l <"$tmp/s7.rules")" -eq 2 ] || fail "s7: two polling sites expected: $(cat "$tmp/s7.rules")"
scenario e123
expect_rules e123 "host-sync "

# Two ranks: rank 1 starts its collectives 3 ms after rank 0 (same clocks) and blocks 20 ms more
# in one more device sync: nccl-straggler and rank-imbalance name rank 1, not rank 0.
make_db "$tmp/r0.sqlite"
make_db "$tmp/r1.sqlite"
"$SQLITE3" -batch "$tmp/r1.sqlite" "UPDATE meta SET value = 1 WHERE key = 'rank';
	UPDATE meta SET value = 4243 WHERE key = 'pid';
	UPDATE calls SET start_ns = start_ns + 3000000 WHERE api_id IN (14, 17);
	INSERT INTO calls(tid, api_id, class, start_ns, end_ns, ret, site_id, count)
	VALUES (4242, 1, 'S1', 1000070000000, 1000090000000, 0, 3, 1);" || fail "rank 1 fixture"
findings "$tmp/r0.sqlite" "$tmp/r1.sqlite" | grep -E '^(nccl-straggler|rank-imbalance)' >"$tmp/actual"
cat >"$tmp/expected" <<'END'
rank-imbalance|1|47|20000000|(whole rank)
nccl-straggler|1|2|6000000|communicator 5a3c9e0f12b4d677
END
diff -u "$tmp/expected" "$tmp/actual" >&2 || fail "cross-rank findings"
"$SQLITE3" -batch :memory: "SELECT json_extract(value, '\$.rank'), json_extract(value, '\$.deviates')
	FROM json_each(json_extract(readfile('$tmp/report.json'), '\$.ranks'))" >"$tmp/actual"
printf '0|[]\n1|["blocked_ns"]\n' | diff -u - "$tmp/actual" >&2 || fail "deviates"

# The same two recordings without a rank (meta.rank absent: two separate programs, say a
# directory of unrelated runs) are not ranks of one job: no rank-imbalance, no deviates marks.
cp "$tmp/r0.sqlite" "$tmp/p0.sqlite"
cp "$tmp/r1.sqlite" "$tmp/p1.sqlite"
"$SQLITE3" -batch "$tmp/p0.sqlite" "DELETE FROM meta WHERE key = 'rank'" || fail "rank-less 0"
"$SQLITE3" -batch "$tmp/p1.sqlite" "DELETE FROM meta WHERE key = 'rank'" || fail "rank-less 1"
findings "$tmp/p0.sqlite" "$tmp/p1.sqlite" | grep -c '^rank-imbalance' >"$tmp/actual"
echo 0 | diff -u - "$tmp/actual" >&2 || fail "rank-imbalance between rank-less recordings"
"$SQLITE3" -batch :memory: "SELECT count(*) FROM json_each(json_extract(readfile('$tmp/report.json'), '\$.ranks'))
	WHERE json_array_length(json_extract(value, '\$.deviates')) > 0" >"$tmp/actual"
echo 0 | diff -u - "$tmp/actual" >&2 || fail "deviates between rank-less recordings"
exit 0
