#!/bin/sh
# SPDX-License-Identifier: MIT
# t060: C++ exceptions unwind as usual in a program under the shim (the shim's storage engine
# and unwinder stay out of the global symbol scope); C++ call sites are demangled.
. "$E2E_DIR/lib.sh"
under_shim "$PROGS/exceptions" >"$tmp/stdout" || fail "exceptions failed under the shim: $(cat "$tmp/stdout")"
grep -q 'caught 1001' "$tmp/stdout" || fail "wrong output: $(cat "$tmp/stdout")"
one_db
golden "SELECT count(*) FROM calls" <<'END'
1000
END
# C++ call sites read as their demangled names
golden "SELECT count(*) FROM api_calls WHERE site LIKE 'syncspy_test::device_sync(int)+0x% (exceptions)'" <<'END'
1000
END
