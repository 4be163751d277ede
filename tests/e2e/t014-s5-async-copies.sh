#!/bin/sh
# SPDX-License-Identifier: MIT
# t014: S5. cudaMemcpyAsync from pageable memory is a degraded, blocking copy (S5); from
# cudaHostAlloc'd or cudaHostRegister'ed memory it is an enqueue (E1); a cudaMemcpyDefault copy
# into pageable memory is found D2H and pageable by itself. Memory kinds decided at call time.
. "$E2E_DIR/lib.sh"
under_shim "$PROGS/scenarios" s5 || fail "scenario failed"
one_db
golden "SELECT api, class, dir, bytes, host_mem FROM api_calls WHERE api LIKE 'cudaMemcpy%' ORDER BY start_ns" <<'END'
cudaMemcpyAsync|S5|H2D|4194304|pageable
cudaMemcpyAsync|E1|H2D|4194304|pinned
cudaMemcpyAsync|E1|H2D|4194304|pinned
cudaMemcpyAsync|S5|D2H|4194304|pageable
END
golden "SELECT api, class, bytes, host_mem FROM api_calls WHERE api LIKE 'cudaHost%' OR api LIKE 'cudaFreeHost' ORDER BY start_ns" <<'END'
cudaHostAlloc|S6|4194304|pinned
cudaHostRegister|S6|4194304|pinned
cudaHostUnregister|S6|4194304|pinned
cudaFreeHost|S6|4194304|pinned
END
# The pageable copies blocked for the copy: 4 MiB at the stand-in's pageable rate (0.5 GB/s by
# default) is 8 ms. Enqueues carry their start time only (SYNCSPY_ENQUEUE_TIMING=0).
golden "SELECT class, min(end_ns - start_ns) >= 4e6, max(end_ns - start_ns) = 0 FROM api_calls WHERE api = 'cudaMemcpyAsync' GROUP BY class ORDER BY class" <<'END'
E1|0|1
S5|1|0
END
# With SYNCSPY_ENQUEUE_TIMING=1 the enqueues are timed too, and the pinned copies return before
# a pageable copy could (they do not wait for the copy).
rm -rf "$out"
SYNCSPY_ENQUEUE_TIMING=1 under_shim "$PROGS/scenarios" s5 || fail "scenario failed"
one_db
golden "SELECT (SELECT min(end_ns - start_ns) FROM calls WHERE class = 'E1') > 0, (SELECT max(end_ns - start_ns) FROM api_calls WHERE api = 'cudaMemcpyAsync' AND class = 'E1') < (SELECT min(end_ns - start_ns) FROM calls WHERE class = 'S5')" <<'END'
1|1
END
