#!/bin/sh
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
