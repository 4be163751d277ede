#!/bin/sh
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
# The pageable copy blocked for the copy (4 MiB at the stand-in's pageable rate); the pinned
# one returned at once.
golden "SELECT (SELECT max(end_ns - start_ns) FROM calls WHERE class = 'S5') > 10 * (SELECT max(end_ns - start_ns) FROM api_calls WHERE api = 'cudaMemcpyAsync' AND class = 'E1')" <<'END'
1
END
