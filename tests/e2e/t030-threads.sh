#!/bin/sh
# SPDX-License-Identifier: MIT
# t030: 16 threads, each 5000 event records and 5000 stream waits on its own stream: no event
# lost, each thread's calls under its own tid, nothing dropped.
. "$E2E_DIR/lib.sh"
under_shim "$PROGS/scenarios" threads || fail "scenario failed"
one_db
golden "SELECT api, count(*) FROM api_calls GROUP BY api ORDER BY api" <<'END'
cudaEventCreate|16
cudaEventDestroy|16
cudaEventRecord|80000
cudaStreamCreateWithFlags|16
cudaStreamDestroy|16
cudaStreamSynchronize|16
cudaStreamWaitEvent|80000
END
golden "SELECT count(DISTINCT tid), min(n), max(n) FROM (SELECT tid, count(*) AS n FROM calls GROUP BY tid)" <<'END'
16|10005|10005
END
golden "SELECT value FROM meta WHERE key = 'dropped_events'" <<'END'
0
END
golden "SELECT count(*) FROM threads" <<'END'
16
END
