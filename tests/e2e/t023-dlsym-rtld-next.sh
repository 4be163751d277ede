#!/bin/sh
# SPDX-License-Identifier: MIT
# t023: the shim interposes dlsym, yet dlsym(RTLD_NEXT, ...) keeps glibc's meaning for the
# caller (DRIVER-1): a second preload library that wraps getpid() through RTLD_NEXT gets libc's
# getpid, not its own (which would recurse until the stack overflows).
. "$E2E_DIR/lib.sh"
cat >"$tmp/pid.py" <<'PY'
import os
print("pid ok" if os.getpid() > 0 else "pid bad")
PY
[ -n "${PYTHON3:-}" ] || skip "no python3"
env LD_PRELOAD="$SHIM_PRELOAD $PROGS/next_preload.so" SYNCSPY_OUTPUT="$out" "$PYTHON3" "$tmp/pid.py" >"$tmp/stdout" 2>&1 ||
	fail "crashed: $(cat "$tmp/stdout")"
grep -q 'pid ok' "$tmp/stdout" || fail "wrong output: $(cat "$tmp/stdout")"
env LD_PRELOAD="$SHIM_PRELOAD $PROGS/next_preload.so" SYNCSPY_OUTPUT="$out" "$PROGS/scenarios" s1 >/dev/null 2>&1 ||
	fail "a CUDA program crashed with a second preload library"
