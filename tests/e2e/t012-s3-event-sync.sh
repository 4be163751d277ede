#!/bin/sh
# SPDX-License-Identifier: MIT
# t012: S3. cudaEventSynchronize waits for an event recorded after a 30 ms kernel; the record
# (E2) and the sync (S3) name the same event.
. "$E2E_DIR/lib.sh"
under_shim "$PROGS/scenarios" s3 || fail "scenario failed"
one_db
golden "SELECT api, class FROM api_calls ORDER BY start_ns" <<'END'
cudaStreamCreate|X1
cudaEventCreateWithFlags|X1
cudaLaunchKernel|E1
cudaEventRecord|E2
cudaEventSynchronize|S3
cudaEventDestroy|X1
cudaStreamDestroy|X1
END
golden "SELECT count(DISTINCT event), count(event) FROM api_calls" <<'END'
1|4
END
golden "SELECT aux FROM api_calls WHERE api = 'cudaEventCreateWithFlags'" <<'END'
2
END
golden "SELECT (end_ns - start_ns) BETWEEN 20e6 AND 2e9 FROM api_calls WHERE class = 'S3'" <<'END'
1
END
