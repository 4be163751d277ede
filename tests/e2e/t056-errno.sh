#!/bin/sh
# SPDX-License-Identifier: MIT
# t056: the program's errno is the same with and without the shim (SHIM-2), across the calls
# whose wrappers do more than time the call: the first call of the process (writer and CUPTI
# start), a pageable async copy (the driver is asked about the pointer), a sync point (native
# and Python stacks), NCCL's communicator calls (the registry; a split asks NCCL for its rank).
. "$E2E_DIR/lib.sh"
"$PROGS/scenarios" errno >"$tmp/plain" 2>&1 || fail "scenario failed without the shim"
grep -q 'errno 4242$' "$tmp/plain" || fail "the scenario does not see its own errno: $(cat "$tmp/plain")"
under_shim "$PROGS/scenarios" errno >"$tmp/shim.all" 2>&1 || fail "scenario failed under the shim"
grep -v '^syncspy:' "$tmp/shim.all" >"$tmp/shim"
diff -u "$tmp/plain" "$tmp/shim" >&2 || fail "errno or results differ under the shim"
one_db
golden "SELECT count(*) FROM api_calls" <<'END'
11
END
