#!/bin/sh
# SPDX-License-Identifier: MIT
# t250: a library object made every step (object_per_step per-step; examples/corpus c92, a cuRAND
# generator made per frame): making it allocates (alloc-in-loop at the make line, its calls
# through standinCreateGenerator of libcurand_standin.so), its first use allocates its state and
# synchronizes the device (on the use line, through the library, no maker), destroying it frees.
# The first use's allocations and device syncs are folded into the make line's finding
# (rules/alloc_in_loop.c ss_library_object_setup): `info` at the use line, named in the make
# line's detail (naming the maker), with the library advice, in a summary's report too; the
# destroy's frees keep their own finding. The fix
# (once: made before the loop) has no steady alloc-in-loop finding. (The step's own stream sync
# is left out.)
. "$E2E_DIR/lib.sh"
src=$TOP_SRCDIR/tests/progs/object_per_step.c
mark() { grep -n "MARK:$1 " "$src" | cut -d: -f1; }
make=$(mark make) use=$(mark use) destroy=$(mark destroy) sync=$(mark sync)
for mode in per-step once; do
	rm -rf "$out"
	under_shim "$PROGS/object_per_step" 20 $mode >"$tmp/$mode.out" 2>"$tmp/$mode.err" ||
		fail "object_per_step $mode: $(cat "$tmp/$mode.out" "$tmp/$mode.err")"
	[ "$(cat "$tmp/$mode.out")" = "object_per_step $mode 20" ] || fail "object_per_step $mode printed: $(cat "$tmp/$mode.out")"
	one_db
	mkdir "$tmp/$mode" && cp "$db" "$tmp/$mode/" || fail "copy $mode"
	"$SYNCSPY" report --format json "$tmp/$mode" >"$tmp/$mode.json" 2>"$tmp/err" || fail "report $mode exited $?: $(cat "$tmp/err")"
done
# a summary's report is the database's, the library's advice included (summary.c asks
# advice_for with the detail's opening)
"$SYNCSPY" summarize -o "$tmp/per-step.summary" "$tmp/per-step" 2>/dev/null || fail "summarize"
"$SYNCSPY" report --format json "$tmp/per-step.summary" >"$tmp/summary.json" || fail "report of the summary"
cmp "$tmp/per-step.json" "$tmp/summary.json" >/dev/null ||
	fail "the summary's report differs: $(diff "$tmp/per-step.json" "$tmp/summary.json" | head -5)"
# rule, line, phase, severity above info, folded into the make line
rq "SELECT json_extract(value, '\$.rule'), replace(json_extract(value, '\$.site'), '$src:', ''),
	json_extract(value, '\$.phase'), json_extract(value, '\$.severity') <> 'info',
	json_extract(value, '\$.detail') LIKE '%the first use of a library object made every step%'
	FROM json_each(json_extract(readfile('$tmp/per-step.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') IN ('alloc-in-loop', 'host-sync') AND json_extract(value, '\$.site') LIKE '%object_per_step.c:%'
	AND json_extract(value, '\$.site') <> '$src:$sync in main'
	ORDER BY 1, 2" >"$tmp/actual"
cat >"$tmp/expected" <<END
alloc-in-loop|$make in main|steady|1|0
alloc-in-loop|$use in main|steady|0|1
alloc-in-loop|$destroy in main|steady|1|0
host-sync|$use in main|steady|0|1
END
diff -u "$tmp/expected" "$tmp/actual" >&2 || fail "per-step findings"
rq "SELECT json_extract(value, '\$.detail'), json_extract(value, '\$.advice')
	FROM json_each(json_extract(readfile('$tmp/per-step.json'), '\$.findings'))
	WHERE json_extract(value, '\$.site') = '$src:$make in main'" >"$tmp/make"
grep -q "in standinCreateGenerator (libcurand_standin.so): a library object made every step; .*device syncs ([0-9.]* ms) by the library at the new object's first use, at $src:$use in main" "$tmp/make" ||
	fail "the make line's detail: $(cat "$tmp/make")"
grep -q "Make the library's object" "$tmp/make" || fail "the make line's advice: $(cat "$tmp/make")"
n=$(rq "SELECT count(*) FROM json_each(json_extract(readfile('$tmp/once.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'alloc-in-loop' AND json_extract(value, '\$.phase') = 'steady'")
[ "$n" = 0 ] || fail "the fix: $n steady alloc-in-loop findings"
finish
