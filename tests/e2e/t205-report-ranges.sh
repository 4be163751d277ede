#!/bin/sh
# SPDX-License-Identifier: MIT
# t205: `syncspy report` has a per-range section: per rank and range name (and kind), the
# instances and the sync points and blocked time per instance, in the text report and as the
# JSON's top-level ranges[] (docs/report-json.md). A recording without ranges has no section
# in text and an empty ranges[] in JSON.
. "$E2E_DIR/lib.sh"
NVTX_INJECTION64_PATH="$SHIM" under_shim "$PROGS/nvtx_steps" >/dev/null || fail "program failed"
one_db
"$SYNCSPY" report "$out" >"$tmp/report.txt" 2>"$tmp/err" || fail "report exited $?: $(cat "$tmp/err")"
"$SYNCSPY" report --format json "$out" >"$tmp/report.json" 2>"$tmp/err" || fail "json exited $?: $(cat "$tmp/err")"

# Text: the section, its blocked times (the last two columns) made constant.
sed -n '/^ranges/,/^$/p' "$tmp/report.txt" |
	sed -E 's/[0-9]+\.[0-9]{3}( +)[0-9]+\.[0-9]{3}$/T.TTT\1T.TTT/' >"$tmp/actual"
cat >"$tmp/expected" <<'END'
ranges (sync points and blocked ms per instance; top 10 names per rank):
   rank  name   kind      instances  sync_min  sync_median  sync_max  blocked_median_ms  blocked_max_ms
      -  step   push              3         2            2         2              T.TTT           T.TTT
      -  epoch  startend          1         6            6         6              T.TTT           T.TTT
      -  train  step              2         1            1         1              T.TTT           T.TTT

END
diff -u "$tmp/expected" "$tmp/actual" >&2 || fail "text range section"

# JSON: the documented keys in order, the counts; blocked times integers, median <= max.
"$SQLITE3" -batch :memory: "SELECT (SELECT group_concat(k.key, ',') FROM json_each(r.value) AS k),
	json_type(value, '\$.rank'), json_extract(value, '\$.name'), json_extract(value, '\$.kind'),
	json_extract(value, '\$.instances'), json_extract(value, '\$.sync_points_min'),
	json_extract(value, '\$.sync_points_median'), json_extract(value, '\$.sync_points_max'),
	json_type(value, '\$.blocked_ns_median') || ' ' || json_type(value, '\$.blocked_ns_max'),
	json_extract(value, '\$.blocked_ns_median') <= json_extract(value, '\$.blocked_ns_max')
	FROM json_each(json_extract(readfile('$tmp/report.json'), '\$.ranges')) AS r" >"$tmp/actual"
keys=rank,name,kind,instances,sync_points_min,sync_points_median,sync_points_max,blocked_ns_median,blocked_ns_max
cat >"$tmp/expected" <<END
$keys|null|step|push|3|2|2|2|integer integer|1
$keys|null|epoch|startend|1|6|6|6|integer integer|1
$keys|null|train|step|2|1|1|1|integer integer|1
END
diff -u "$tmp/expected" "$tmp/actual" >&2 || fail "JSON ranges[]"

# Without ranges: no text section, an empty array.
sh "$TOP_SRCDIR/tests/fixtures/make-db.sh" "$tmp/plain.sqlite" || fail "make-db.sh"
"$SYNCSPY" report "$tmp/plain.sqlite" >"$tmp/plain.txt" || fail "report of plain"
grep -q '^ranges' "$tmp/plain.txt" && fail "range section without ranges"
"$SYNCSPY" report --format json "$tmp/plain.sqlite" >"$tmp/plain.json" || fail "json of plain"
[ "$("$SQLITE3" -batch :memory: "SELECT json_extract(readfile('$tmp/plain.json'), '\$.ranges')")" = "[]" ] ||
	fail "ranges[] not empty without ranges"
exit 0
