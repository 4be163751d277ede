#!/bin/sh
# SPDX-License-Identifier: MIT
# t017: E1-E3. Ten rounds of: kernel on stream A, event record on A, stream B waits for the
# event, kernel on B (launched through __cudaLaunchKernel, as nvcc's <<<>>> does in CUDA 13).
. "$E2E_DIR/lib.sh"
under_shim "$PROGS/scenarios" e123 || fail "scenario failed"
one_db
golden "SELECT api, class, count(*), count(DISTINCT stream) FROM api_calls GROUP BY api, class ORDER BY api" <<'END'
__cudaLaunchKernel|E1|10|1
cudaEventCreate|X1|1|0
cudaEventDestroy|X1|1|0
cudaEventRecord|E2|10|1
cudaLaunchKernel|E1|10|1
cudaStreamCreateWithFlags|X1|1|1
cudaStreamCreateWithPriority|X1|1|1
cudaStreamDestroy|X1|2|2
cudaStreamSynchronize|S2|1|1
cudaStreamWaitEvent|E3|10|1
END
# the record is on A, the wait on B, and both name the one event
golden "SELECT count(DISTINCT r.stream), count(DISTINCT w.stream), r.stream <> w.stream, r.event = w.event FROM api_calls r, api_calls w WHERE r.api = 'cudaEventRecord' AND w.api = 'cudaStreamWaitEvent'" <<'END'
1|1|1|1
END
golden "SELECT flags, priority FROM streams ORDER BY created_ns" <<'END'
1|-1
1|0
END
