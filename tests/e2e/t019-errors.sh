#!/bin/sh
# SPDX-License-Identifier: MIT
# t019: errors reach the program unchanged (same codes, same sticky last error) and are
# recorded with their code.
. "$E2E_DIR/lib.sh"
"$PROGS/scenarios" errors >"$tmp/plain" 2>&1 || fail "scenario failed without the shim"
under_shim "$PROGS/scenarios" errors >"$tmp/shim" 2>&1 || fail "scenario failed under the shim"
grep -v '^syncspy:' "$tmp/shim" >"$tmp/shim.out"
diff -u "$tmp/plain" "$tmp/shim.out" >&2 || fail "output differs under the shim"
one_db
golden "SELECT api, ret <> 0 FROM api_calls ORDER BY start_ns" <<'END'
cudaStreamSynchronize|1
cudaMemcpy|1
END
# each row holds the code the program printed for that call
code_stream=$(sed -n 's/^bad stream -> //p' "$tmp/plain")
code_copy=$(sed -n 's/^null copy -> //p' "$tmp/plain")
golden "SELECT api, ret FROM api_calls ORDER BY start_ns" <<END
cudaStreamSynchronize|$code_stream
cudaMemcpy|$code_copy
END
