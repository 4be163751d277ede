#!/bin/sh
# SPDX-License-Identifier: MIT
# t025: syncspy as an NVTX injection library (NVTX_INJECTION64_PATH): push/pop and start/end
# ranges become rows of `ranges`, and so do steps marked with syncspy_step (no NVTX needed);
# sync points can be counted per range. Without the injection variable the program's NVTX calls
# stay no-ops and its syncs are recorded all the same.
. "$E2E_DIR/lib.sh"
NVTX_INJECTION64_PATH="$SHIM" under_shim "$PROGS/nvtx_steps" >"$tmp/stdout" || fail "program failed"
grep -q 'syncspy_step found' "$tmp/stdout" || fail "syncspy_step not found: $(cat "$tmp/stdout")"
one_db
golden "SELECT kind, name, depth, end_ns > start_ns FROM ranges ORDER BY start_ns, kind" <<'END'
startend|epoch||1
push|step|0|1
push|step|0|1
push|step|0|1
step|train||1
step|train||1
END
golden "SELECT r.kind, r.name, count(c.id) FROM ranges r LEFT JOIN calls c ON c.tid = r.tid AND c.start_ns >= r.start_ns AND c.end_ns <= r.end_ns AND c.class LIKE 'S%' GROUP BY r.id ORDER BY r.start_ns, r.kind" <<'END'
startend|epoch|6
push|step|2
push|step|2
push|step|2
step|train|1
step|train|1
END
rm -rf "$out"
under_shim "$PROGS/nvtx_steps" >/dev/null || fail "program failed without injection"
one_db
golden "SELECT (SELECT count(*) FROM calls), (SELECT count(*) FROM ranges WHERE kind <> 'step')" <<'END'
8|0
END

# A fork inside open ranges: the child's database holds only the child's own range (the parent's
# push and start/end ranges stay the parent's, closed there); the child's pop and end of the
# parent's ranges, which its code still makes, add nothing.
rm -rf "$out"
NVTX_INJECTION64_PATH="$SHIM" under_shim "$PROGS/nvtx_steps" fork >"$tmp/stdout" || fail "fork program failed"
grep -q 'child ok' "$tmp/stdout" || fail "child failed: $(cat "$tmp/stdout")"
# the parent is the process whose pid is the other's ppid
parent_pid=$(
	for f in "$out"/*.sqlite; do
		"$SQLITE3" -batch "$f" "SELECT value FROM meta WHERE key = 'ppid'"
	done | while read -r ppid; do
		for f in "$out"/*.sqlite; do
			[ "$("$SQLITE3" -batch "$f" "SELECT value FROM meta WHERE key = 'pid'")" = "$ppid" ] && echo "$ppid"
		done
	done
)
[ -n "$parent_pid" ] || fail "no database of the parent"
for f in "$out"/*.sqlite; do
	db=$f
	if [ "$(q "SELECT value FROM meta WHERE key = 'pid'")" = "$parent_pid" ]; then
		golden "SELECT kind, name, end_ns > start_ns FROM ranges ORDER BY start_ns" <<'END'
startend|parent-startend|1
push|parent-push|1
END
	else
		golden "SELECT kind, name, end_ns > start_ns, (SELECT count(*) FROM calls) FROM ranges" <<'END'
push|child-push|1|2
END
	fi
done
[ "$(ls "$out"/*.sqlite | wc -l)" -eq 2 ] || fail "two databases expected: $(ls "$out")"
