#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/e2e/t102-info-partial.sh: a `.partial` database in WAL mode reads while its writer still
# holds it (committed rows only), and after the writer is killed (-wal and -shm left behind),
# and reading it changes none of its files: syncspy opens recordings read-only.
#
# The writer is the sqlite3 shell reading a FIFO: it commits, opens a second transaction and
# waits in it for more input, until the test kills it.
# env: SYNCSPY (default ../report/syncspy, from the tests build directory), SQLITE3 (default
# sqlite3). Exit 0 pass, 1 fail, 77 skip.

SYNCSPY=${SYNCSPY:-../report/syncspy}
SQLITE3=${SQLITE3:-sqlite3}

command -v "$SQLITE3" >/dev/null 2>&1 || { echo "SKIP: no $SQLITE3 command"; exit 77; }
[ -x "$SYNCSPY" ] || { echo "FAIL: $SYNCSPY is not built"; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/t102.XXXXXX") || exit 1
writer=
cleanup() {
	[ -n "$writer" ] && kill -9 "$writer" 2>/dev/null
	exec 3>&-
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

db="$tmp/rank0.sqlite.partial"
{
	echo "PRAGMA journal_mode=WAL;"
	"$SYNCSPY" schema --lookups || exit 1
	cat <<'SQL'
;
INSERT INTO meta VALUES('schema_version', 2);
INSERT INTO meta VALUES('file_final', 0);
INSERT INTO apis VALUES(1, 'cudaStreamSynchronize', 'runtime', 'S2');
INSERT INTO calls(tid, api_id, class, start_ns, end_ns, stream, ret)
	VALUES(7, 1, 'S2', 1000, 3000, 1, 0);
BEGIN;
INSERT INTO calls(tid, api_id, class, start_ns, end_ns, stream, ret)
	VALUES(7, 1, 'S2', 5000, 9000, 1, 0);
SQL
} >"$tmp/writer.sql" || fail "syncspy schema"

mkfifo "$tmp/input" || exit 1
"$SQLITE3" -batch "$db" <"$tmp/input" >/dev/null 2>&1 &
writer=$!
exec 3>"$tmp/input"
cat "$tmp/writer.sql" >&3

# Wait (at most ~10 s) for the first commit to be readable: the schema's own commit comes first
# (a read then sees no call yet), the first call's right after it.
i=0
until "$SYNCSPY" info "$db" >"$tmp/live.out" 2>"$tmp/err" &&
	grep -q '^  cudaStreamSynchronize ' "$tmp/live.out"; do
	i=$((i + 1))
	[ $i -lt 100 ] || fail "the live database never became readable: $(cat "$tmp/err")"
	sleep 0.1
done
[ -f "$db-wal" ] || fail "the writer is not in WAL mode (no $db-wal)"
# One committed call of 2000 ns; the open transaction's call is not visible.
grep -q '^  cudaStreamSynchronize  S2         1      2000$' "$tmp/live.out" ||
	fail "live read: $(cat "$tmp/live.out")"

kill -9 "$writer" || fail "cannot kill the writer"
wait "$writer" 2>/dev/null
writer=
exec 3>&-
[ -f "$db-wal" ] || fail "no -wal left by the killed writer"

sums_before=$(cksum "$db" "$db-wal")
"$SYNCSPY" info "$db" >"$tmp/killed.out" 2>"$tmp/err" || fail "killed read: $(cat "$tmp/err")"
grep -q '^  cudaStreamSynchronize  S2         1      2000$' "$tmp/killed.out" ||
	fail "killed read: $(cat "$tmp/killed.out")"
grep -q '^  sync points: 1 calls, 2000 ns blocked$' "$tmp/killed.out" ||
	fail "killed read, sync total: $(cat "$tmp/killed.out")"
# Through the directory too (the .partial is listed), and nothing was checkpointed or changed.
"$SYNCSPY" info "$tmp" >/dev/null 2>"$tmp/err" || fail "directory read: $(cat "$tmp/err")"
sums_after=$(cksum "$db" "$db-wal")
[ "$sums_before" = "$sums_after" ] || fail "reading changed the recording"

# Only the database and its -wal (a copy without -shm): still readable.
mkdir "$tmp/copy" && cp "$db" "$db-wal" "$tmp/copy/" || exit 1
"$SYNCSPY" info "$tmp/copy/rank0.sqlite.partial" >"$tmp/copy.out" 2>"$tmp/err" ||
	fail "copy without -shm: $(cat "$tmp/err")"
grep -q '^  sync points: 1 calls, 2000 ns blocked$' "$tmp/copy.out" ||
	fail "copy without -shm: $(cat "$tmp/copy.out")"

echo "PASS"
exit 0
