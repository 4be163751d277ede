#!/bin/sh
# SPDX-License-Identifier: MIT
# t208: native call sites get their file:line after the run (report/lines.c). The recording
# keeps each module's path and GNU build id (the modules table); `syncspy report` reads the
# line from the debug information of that very file (the test programs are built with -g) and
# names the site "FILE:LINE in FUNCTION". A file that is gone, or rebuilt since (another build
# id), gives no line: the site keeps its module+offset text.
. "$E2E_DIR/lib.sh"
under_shim "$PROGS/scenarios" s5 >/dev/null 2>&1 || fail "scenario failed"
one_db
# the build id recorded is the program's own
want=$(readelf -n "$PROGS/scenarios" 2>/dev/null | sed -n 's/^ *Build ID: *//p')
[ -n "$want" ] || skip "no readelf, or the test program has no build id"
golden "SELECT build_id, file FROM modules WHERE path LIKE '%scenarios'" <<END
$want|$(cd "$PROGS" && pwd -P)/scenarios
END
# The two pageable async copies of s5 (H2D, and D2H through cudaMemcpyDefault): their sites
# name scenarios.c, a line that holds a cudaMemcpyAsync call, and the function s5_async_copies.
"$SYNCSPY" report --format json "$out" >"$tmp/r.json" || fail "report failed"
"$SQLITE3" -batch :memory: "SELECT json_extract(value, '\$.site') FROM
	json_each(json_extract(readfile('$tmp/r.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'pageable-async-copy' ORDER BY 1" >"$tmp/sites"
[ "$(wc -l <"$tmp/sites")" -eq 2 ] || fail "pageable-async-copy sites: $(cat "$tmp/sites")"
while IFS= read -r site; do
	case $site in
	*/progs/scenarios.c:*" in s5_async_copies") ;;
	*) fail "site without file:line: $site" ;;
	esac
	line=${site##*scenarios.c:}
	line=${line%% *}
	sed -n "${line}p" "$TOP_SRCDIR/tests/progs/scenarios.c" | grep -q 'cudaMemcpyAsync(' ||
		fail "$site: line $line is not a cudaMemcpyAsync call"
done <"$tmp/sites"
# The text report and the HTML report's call-site table say the same.
"$SYNCSPY" report "$out" | grep -q '\[[a-z]*\] pageable-async-copy  rank -  .*/progs/scenarios.c:[0-9]* in s5_async_copies$' ||
	fail "text report without file:line"
# Another build id (the file was rebuilt since the run): no line, the recorded text stays.
cp "$db" "$tmp/rebuilt.sqlite"
"$SQLITE3" -batch "$tmp/rebuilt.sqlite" "UPDATE modules SET build_id = '00'" || fail "update"
"$SYNCSPY" report "$tmp/rebuilt.sqlite" >"$tmp/rebuilt.txt" || fail "report of the rebuilt"
grep -q 'pageable-async-copy  rank -  .*scenarios+0x[0-9a-f]*$' "$tmp/rebuilt.txt" ||
	fail "a rebuilt module still gave lines: $(grep pageable "$tmp/rebuilt.txt")"
# The file is gone: likewise.
cp "$db" "$tmp/gone.sqlite"
"$SQLITE3" -batch "$tmp/gone.sqlite" "UPDATE modules SET file = '/nonexistent/scenarios'" || fail "update"
"$SYNCSPY" report "$tmp/gone.sqlite" | grep -q 'pageable-async-copy  rank -  .*scenarios+0x[0-9a-f]*$' ||
	fail "a missing module gave lines"
# The database itself is unchanged by reading it (its sites keep the recorded text).
golden "SELECT count(*) FROM sites WHERE text LIKE '%scenarios.c:%'" <<'END'
0
END
# `syncspy schema --extensions` prints the modules table the recording library created.
"$SYNCSPY" schema --extensions | "$SQLITE3" -batch "$tmp/schema.sqlite" || fail "schema --extensions is not valid SQL"
"$SQLITE3" -batch "$tmp/schema.sqlite" "SELECT group_concat(name) FROM pragma_table_info('modules')" >"$tmp/want"
golden "SELECT group_concat(name) FROM pragma_table_info('modules')" <"$tmp/want"
[ "$("$SQLITE3" -batch "$tmp/schema.sqlite" "SELECT count(*) FROM sqlite_master WHERE name IN ('gpu_activity', 'gpu_api')")" = 2 ] ||
	fail "schema --extensions lacks the GPU tables"
# Native stacks start at the program's frame: none holds a frame of the shim (its wrapper and
# stack functions are dropped by address, interpose/native.c), and each starts in scenarios.
golden "SELECT count(*), sum(frames NOT LIKE '%libsyncspy%'), sum(frames LIKE 'scenarios+%' OR frames LIKE '% (scenarios)%')
	FROM stacks WHERE kind = 'native'" <<END
$(q "SELECT count(*) FROM stacks WHERE kind = 'native'")|$(q "SELECT count(*) FROM stacks WHERE kind = 'native'")|$(q "SELECT count(*) FROM stacks WHERE kind = 'native'")
END
[ "$(q "SELECT count(*) FROM stacks WHERE kind = 'native'")" -gt 0 ] || fail "no native stack recorded"
