#!/bin/sh
# SPDX-License-Identifier: MIT
# t043: the writer names native frames from sorted copies of the modules' dynamic symbol tables
# (interpose/dynsyms.c, SITES-2) instead of dladdr's walk of a whole table per address: both
# must give the same module, base, symbol and symbol address, at every dynamic symbol's edges
# and across every executable segment of the modules loaded (tests/progs/dynsyms_check.c).
. "$E2E_DIR/lib.sh"
"$PROGS/dynsyms_check" >"$tmp/out" 2>"$tmp/err" || fail "ss_dladdr differs from dladdr: $(cat "$tmp/err")"
cat "$tmp/out" >&2
# it compared something: the modules' segments and symbols, at least libc's
n=$(sed -n 's/^dynsyms: \([0-9]*\) addresses compared, 0 differ, \([0-9]*\) modules read$/\1 \2/p' "$tmp/out")
[ -n "$n" ] || fail "unexpected output: $(cat "$tmp/out")"
set -- $n
[ "$1" -gt 20000 ] && [ "$2" -ge 3 ] || fail "too little compared: $(cat "$tmp/out")"
