#!/bin/sh
# SPDX-License-Identifier: MIT
# t055: an output directory that cannot be created: one clear message on stderr, recording
# off, and the program runs on with its own output and exit code.
. "$E2E_DIR/lib.sh"
touch "$tmp/file"
env LD_PRELOAD="$SHIM_PRELOAD" SYNCSPY_OUTPUT="$tmp/file/sub" "$PROGS/scenarios" s4 >"$tmp/stdout" 2>"$tmp/stderr"
[ $? -eq 0 ] || fail "the program failed"
grep -q 'roundtrip ok' "$tmp/stdout" || fail "program output changed"
[ "$(grep -c '^syncspy: ' "$tmp/stderr")" -eq 1 ] || fail "expected one message: $(cat "$tmp/stderr")"
grep -q "cannot create SYNCSPY_OUTPUT=$tmp/file/sub" "$tmp/stderr" || fail "unclear message: $(cat "$tmp/stderr")"
