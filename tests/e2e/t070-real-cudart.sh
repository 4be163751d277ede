#!/bin/sh
# SPDX-License-Identifier: MIT
# t070: the toolkit's real libcudart.so.13 on this machine without GPU or driver: every call
# fails fast; under the shim each returns the same code as without it (and the same sticky
# last error), and is recorded once with that code.
. "$E2E_DIR/lib.sh"
unset LD_LIBRARY_PATH # the real runtime must not find the stand-in driver
[ -x "$PROGS/real_cudart" ] || skip "configure found no real libcudart.so.13"
"$PROGS/real_cudart" >"$tmp/plain" 2>&1 || fail "program failed"
under_shim "$PROGS/real_cudart" >"$tmp/shim.all" 2>&1 || fail "program failed under the shim"
grep -v '^syncspy:' "$tmp/shim.all" >"$tmp/shim"
diff -u "$tmp/plain" "$tmp/shim" >&2 || fail "return codes differ under the shim"
grep -q ' 0$' "$tmp/plain" && grep -v GetLastError "$tmp/plain" | grep -q ' 0$' && fail "a call succeeded without a GPU?"
one_db
# one row per call of the program, in order, each with the code the program saw
q "SELECT api || ' ' || ret FROM api_calls ORDER BY start_ns" >"$tmp/rows"
sed -n 's/^\(cuda[A-Za-z]*\)(.* \([0-9]*\)$/\1 \2/p' "$tmp/plain" >"$tmp/expected"
diff -u "$tmp/expected" "$tmp/rows" >&2 || fail "recorded rows differ from the calls made"
