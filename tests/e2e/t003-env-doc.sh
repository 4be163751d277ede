#!/bin/sh
# SPDX-License-Identifier: MIT
# t003: every SYNCSPY_* variable of the one table (include/syncspy/env.h) is documented in the
# README, and the README names no variable that the table does not have.
. "$E2E_DIR/lib.sh"
sed -n 's/^[[:space:]]*X(\(SYNCSPY_[A-Z_]*\),.*/\1/p' "$TOP_SRCDIR/include/syncspy/env.h" | sort -u >"$tmp/table"
[ -s "$tmp/table" ] || fail "no variables found in env.h"
grep -o 'SYNCSPY_[A-Z_]*[A-Z]' "$TOP_SRCDIR/README.md" | sort -u >"$tmp/readme"
comm -23 "$tmp/table" "$tmp/readme" >"$tmp/undocumented"
[ -s "$tmp/undocumented" ] && fail "not in README.md: $(tr '\n' ' ' <"$tmp/undocumented")"
comm -13 "$tmp/table" "$tmp/readme" >"$tmp/unknown"
[ -s "$tmp/unknown" ] && fail "README.md names variables env.h lacks: $(tr '\n' ' ' <"$tmp/unknown")"
echo "$(wc -l <"$tmp/table") variables documented"
