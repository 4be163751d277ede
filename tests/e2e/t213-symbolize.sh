#!/bin/sh
# t213: `syncspy symbolize` writes the file:line of native sites into the database, so that a
# recording read on a machine without the binary (a trace committed from the GPU machine and
# read in CI) still names its lines; --restore gives back the recorded texts (docs/cli.md).
# The program runs from a copy that is deleted after symbolize, as the binary is absent there.
. "$E2E_DIR/lib.sh"
cp "$PROGS/scenarios" "$tmp/scenarios" || fail "copy"
under_shim "$tmp/scenarios" s5 >/dev/null 2>&1 || fail "scenario failed"
one_db
"$SYNCSPY" report "$db" >"$tmp/before.txt" || fail "report failed"
grep -q '\[[a-z]*\] pageable-async-copy  rank -  .*/progs/scenarios.c:[0-9]* in s5_async_copies$' "$tmp/before.txt" ||
	fail "no file:line while the binary is there: $(grep pageable "$tmp/before.txt")"
cp "$db" "$tmp/kept.sqlite"
"$SYNCSPY" symbolize "$tmp/kept.sqlite" >"$tmp/sym.out" 2>"$tmp/sym.err" || fail "symbolize: $(cat "$tmp/sym.err")"
grep -Eq '^.*/kept.sqlite: [1-9][0-9]* of [0-9]+ native sites with file:line$' "$tmp/sym.out" ||
	fail "symbolize said: $(cat "$tmp/sym.out")"
# Now the binary is gone: the unsymbolized copy loses its lines, the symbolized one keeps them,
# and its report is the one made beside the binary.
rm -f "$tmp/scenarios"
"$SYNCSPY" report "$db" | grep -q 'pageable-async-copy  rank -  .*scenarios+0x[0-9a-f]*$' ||
	fail "the unsymbolized database kept lines without the binary"
"$SYNCSPY" report "$tmp/kept.sqlite" >"$tmp/after.txt" || fail "report of the symbolized copy"
grep '^ *\[' "$tmp/before.txt" >"$tmp/before.findings"
grep '^ *\[' "$tmp/after.txt" >"$tmp/after.findings"
[ -s "$tmp/before.findings" ] || fail "no findings to compare"
diff -u "$tmp/before.findings" "$tmp/after.findings" >&2 || fail "the symbolized report names other sites"
"$SYNCSPY" report --format json "$db" >"$tmp/before.json" || fail "json"
"$SYNCSPY" report --format json "$tmp/kept.sqlite" >"$tmp/after.json" || fail "json"
[ "$(rq "SELECT count(*) FROM json_each(json_extract(readfile('$tmp/after.json'), '\$.findings')) WHERE json_extract(value, '\$.site') LIKE '%scenarios.c:%'")" -ge 2 ] ||
	fail "the JSON report of the symbolized copy has no file:line sites"
# The recorded texts are kept, one per site changed; symbolizing again changes nothing.
db=$tmp/kept.sqlite
golden "SELECT count(*) = (SELECT count(*) FROM sites WHERE text LIKE '%scenarios.c:%'), count(*) > 0,
	sum(r.text LIKE 'scenarios+0x%' OR r.text LIKE '%(%scenarios)') = count(*)
	FROM sites_recorded r" <<'END'
1|1|1
END
q "SELECT id, text FROM sites ORDER BY id" >"$tmp/sites1"
q "SELECT id, text FROM sites_recorded ORDER BY id" >"$tmp/recorded1"
"$SYNCSPY" symbolize "$db" >/dev/null 2>&1 || fail "second symbolize"
q "SELECT id, text FROM sites ORDER BY id" | cmp -s - "$tmp/sites1" || fail "second symbolize changed sites"
q "SELECT id, text FROM sites_recorded ORDER BY id" | cmp -s - "$tmp/recorded1" || fail "second symbolize changed sites_recorded"
# --restore: the database as recorded.
"$SYNCSPY" symbolize --restore "$db" >/dev/null || fail "restore"
golden "SELECT count(*) FROM sqlite_master WHERE name = 'sites_recorded'" <<'END'
0
END
q "SELECT id, text FROM sites ORDER BY id" >"$tmp/restored"
"$SQLITE3" -batch "$out"/*.sqlite "SELECT id, text FROM sites ORDER BY id" | cmp -s - "$tmp/restored" ||
	fail "restore did not give back the recorded texts"
# Errors: no argument, a file that is not a database.
"$SYNCSPY" symbolize >/dev/null 2>&1
[ $? -eq 2 ] || fail "symbolize without a database: not exit 2"
echo "not a database" >"$tmp/junk.sqlite"
"$SYNCSPY" symbolize "$tmp/junk.sqlite" >/dev/null 2>"$tmp/junk.err"
[ $? -eq 2 ] || fail "symbolize of junk: not exit 2"
