#!/bin/sh
# SPDX-License-Identifier: MIT
# t010: S1. A 30 ms kernel on the legacy stream, then cudaDeviceSynchronize: one S1 row that
# blocked for the kernel's time, one E1 launch before it, both from the program's own code.
. "$E2E_DIR/lib.sh"
under_shim "$PROGS/scenarios" s1 || fail "scenario failed"
one_db
golden "SELECT api, class, stream, ret, count FROM api_calls ORDER BY start_ns" <<'END'
cudaLaunchKernel|E1|legacy|0|1
cudaDeviceSynchronize|S1||0|1
END
golden "SELECT (end_ns - start_ns) BETWEEN 20e6 AND 2e9 FROM api_calls WHERE class = 'S1'" <<'END'
1
END
golden "SELECT count(*) FROM api_calls WHERE site LIKE 'scenarios+0x%' OR site LIKE '%(scenarios)'" <<'END'
2
END
