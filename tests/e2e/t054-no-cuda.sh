#!/bin/sh
# SPDX-License-Identifier: MIT
# t054: a program that never calls CUDA or NCCL runs unchanged under the shim (same output,
# same exit code), writes no database and prints nothing. So do shell tools run by wrappers.
. "$E2E_DIR/lib.sh"
"$PROGS/scenarios" nocuda >"$tmp/plain" 2>&1
plain=$?
under_shim "$PROGS/scenarios" nocuda >"$tmp/shim" 2>&1
shim=$?
[ "$plain" -eq 7 ] && [ "$shim" -eq 7 ] || fail "exit codes: $plain without, $shim with"
diff -u "$tmp/plain" "$tmp/shim" >&2 || fail "output differs"
[ ! -e "$out" ] || [ -z "$(ls -A "$out")" ] || fail "files written: $(ls "$out")"
under_shim sh -c 'echo a | tr a b; exit 4' >"$tmp/sh" 2>&1
[ $? -eq 4 ] && [ "$(cat "$tmp/sh")" = b ] || fail "a shell pipeline changed under the shim"
