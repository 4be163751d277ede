#!/bin/sh
# SPDX-License-Identifier: MIT
# t057: SYNCSPY_DISABLE=1 passes everything through: same output, no database, no message.
. "$E2E_DIR/lib.sh"
SYNCSPY_DISABLE=1 under_shim "$PROGS/scenarios" s5 >"$tmp/stdout" 2>"$tmp/stderr" || fail "scenario failed"
[ ! -s "$tmp/stderr" ] || fail "printed: $(cat "$tmp/stderr")"
[ ! -e "$out" ] || fail "wrote $(ls "$out")"
