#!/bin/sh
# SPDX-License-Identifier: MIT
# t016: S7. Two polling loops (cudaStreamQuery until a kernel ends, then cudaEventQuery until
# an event completes): one row per loop (SCHEMA-5), counting every query, spanning the loop.
. "$E2E_DIR/lib.sh"
under_shim "$PROGS/scenarios" s7 >"$tmp/stdout" || fail "scenario failed"
grep -q 'polls 1' "$tmp/stdout" || fail "the program did not poll more than twice"
one_db
golden "SELECT api, class, ret FROM api_calls WHERE class = 'S7' ORDER BY start_ns" <<'END'
cudaStreamQuery|S7|0
cudaEventQuery|S7|0
END
golden "SELECT count > 1, (end_ns - start_ns) > 10e6 FROM api_calls WHERE class = 'S7' ORDER BY start_ns" <<'END'
1|1
1|1
END
