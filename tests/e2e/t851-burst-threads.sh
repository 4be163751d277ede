#!/bin/sh
# SPDX-License-Identifier: MIT
# t851: 16 threads make 100,000 cudaEventRecord calls each, all at once (issue 18 item 1). With
# the default cap the rings hold what the writer has not written yet (1.6 M records fit in it,
# however the writer is scheduled on a loaded machine): every call of every thread has its row.
. "$E2E_DIR/lib.sh"
SYNCSPY_QUIET=1 under_shim "$PROGS/burst" 16 100000 1000 live >"$tmp/stdout" || fail "burst failed"
grep -q 'burst: 1601664 calls' "$tmp/stdout" || fail "wrong output: $(cat "$tmp/stdout")"
one_db
golden "SELECT count(*), count(DISTINCT tid) FROM calls" <<'END'
1601664|16
END
golden "SELECT count(*), min(n), max(n) FROM (SELECT tid, count(*) AS n FROM calls WHERE api_id = (SELECT id FROM apis WHERE name = 'cudaEventRecord') GROUP BY tid)" <<'END'
16|100000|100000
END
golden "SELECT key, value FROM meta WHERE key IN ('dropped_events', 'dropped_calls', 'threads') ORDER BY key" <<'END'
dropped_calls|0
dropped_events|0
threads|16
END
