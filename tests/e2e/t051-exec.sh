#!/bin/sh
# SPDX-License-Identifier: MIT
# t051: exec. The database is finished before the image is replaced (exit_reason 'exec'); the
# new image inherits LD_PRELOAD and writes its own database, under a distinct name although
# the pid is the same.
. "$E2E_DIR/lib.sh"
under_shim "$PROGS/scenarios" exec >"$tmp/stdout" || fail "scenario failed"
grep -q 'after exec' "$tmp/stdout" || fail "exec'd image did not run"
ls "$out"/*.sqlite >"$tmp/files"
[ "$(wc -l <"$tmp/files")" -eq 2 ] || fail "expected 2 databases: $(cat "$tmp/files")"
for f in $(cat "$tmp/files"); do
	db=$f
	q "SELECT (SELECT value FROM meta WHERE key = 'exit_reason') || ' ' || count(*) || ' ' || (SELECT value FROM meta WHERE key = 'pid') FROM calls" >>"$tmp/rows"
done
[ "$(awk '{print $3}' "$tmp/rows" | sort -u | wc -l)" -eq 1 ] || fail "not the same pid: $(cat "$tmp/rows")"
awk '{print $1, $2}' "$tmp/rows" | sort >"$tmp/actual"
printf 'exec 1\nexit 3\n' >"$tmp/expected"
diff -u "$tmp/expected" "$tmp/actual" >&2 || fail "unexpected databases"
