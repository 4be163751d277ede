#!/bin/sh
# SPDX-License-Identifier: MIT
# t011: S2. cudaStreamSynchronize on a created non-blocking stream waits for its 30 ms kernel;
# the stream is named by its handle, and the streams table knows its flags.
. "$E2E_DIR/lib.sh"
under_shim "$PROGS/scenarios" s2 || fail "scenario failed"
one_db
golden "SELECT api, class, stream IS NOT NULL, stream NOT IN ('legacy', 'per-thread') FROM api_calls ORDER BY start_ns" <<'END'
cudaStreamCreateWithFlags|X1|1|1
cudaLaunchKernel|E1|1|1
cudaStreamSynchronize|S2|1|1
cudaStreamDestroy|X1|1|1
END
golden "SELECT count(DISTINCT stream) FROM api_calls" <<'END'
1
END
golden "SELECT (end_ns - start_ns) BETWEEN 20e6 AND 2e9 FROM api_calls WHERE class = 'S2'" <<'END'
1
END
golden "SELECT flags, priority, destroyed_ns > created_ns FROM streams" <<'END'
1|0|1
END
