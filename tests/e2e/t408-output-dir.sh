#!/bin/sh
# SPDX-License-Identifier: MIT
# t408: one default output directory and one mkdir -p for both halves (issue 15). The default
# is defined once (SS_DEFAULT_OUTPUT_DIR, include/syncspy/env.h): no other C file spells it, and
# the shim without SYNCSPY_OUTPUT and `syncspy run` without -o write to the same directory,
# which both helps name. Directories are made by one function (ss_mkdir_p,
# include/syncspy/mkdir_p.h): no other C file of either half calls mkdir, and both halves make
# the same nested paths (a trailing slash, doubled slashes) and refuse the same ones (a file
# in the way, an empty path) with one message.
. "$E2E_DIR/lib.sh"
cd "$TOP_SRCDIR" || fail "cd $TOP_SRCDIR"
src="include interpose cupti report"

# One definition of the default, one mkdir.
spelled=$(grep -rl --include='*.[ch]' 'syncspy-out' $src)
[ "$spelled" = include/syncspy/env.h ] || fail "the default directory is spelled in: $spelled"
grep -q '^#define SS_DEFAULT_OUTPUT_DIR "./syncspy-out"$' include/syncspy/env.h || fail "env.h: no SS_DEFAULT_OUTPUT_DIR"
grep -q 'X(SYNCSPY_OUTPUT, STR, SS_DEFAULT_OUTPUT_DIR,' include/syncspy/env.h || fail "SYNCSPY_OUTPUT's default is not SS_DEFAULT_OUTPUT_DIR"
makers=$(grep -rlE --include='*.[ch]' '\bmkdir[a-z]*\(' $src)
[ "$makers" = include/syncspy/mkdir_p.h ] || fail "mkdir is called in: $makers"
for f in interpose/dbfile.c report/cmd_run.c; do
	grep -q 'ss_mkdir_p(' "$f" || fail "$f does not use ss_mkdir_p"
done
"$SYNCSPY" help run | grep -q '^  -o DIR .*(default \./syncspy-out; made absolute)$' || fail "help run: $("$SYNCSPY" help run)"
"$SYNCSPY" help env | grep -q '^  SYNCSPY_OUTPUT (string, default: \./syncspy-out)$' || fail "help env: $("$SYNCSPY" help env)"

# Both defaults are the same directory.
mkdir -p "$tmp/shim" "$tmp/run"
(cd "$tmp/shim" && env -u SYNCSPY_OUTPUT LD_PRELOAD="$SHIM_PRELOAD" "$PROGS/scenarios" s1 >/dev/null 2>&1) ||
	fail "s1 under the shim failed"
(cd "$tmp/run" && env -u SYNCSPY_OUTPUT "$SYNCSPY" run -- "$PROGS/scenarios" s1 >/dev/null 2>"$tmp/run.err") ||
	fail "syncspy run failed: $(cat "$tmp/run.err")"
for side in shim run; do
	set -- "$tmp/$side"/syncspy-out/*.sqlite
	[ $# -eq 1 ] && [ -f "$1" ] || fail "$side: no database in ./syncspy-out: $(cd "$tmp/$side" && find . | sort)"
done

# The same nested paths made by both halves.
for path in "a/b/c" "d/e/" "f//g///h"; do
	env LD_PRELOAD="$SHIM_PRELOAD" SYNCSPY_OUTPUT="$tmp/shim/$path" "$PROGS/scenarios" s1 >/dev/null 2>"$tmp/err" ||
		fail "shim, $path: $(cat "$tmp/err")"
	set -- "$tmp/shim/$path"/*.sqlite
	[ -f "$1" ] || fail "shim: no database in $path"
	"$SYNCSPY" run -o "$tmp/run/$path" -- "$PROGS/scenarios" s1 >/dev/null 2>"$tmp/err" ||
		fail "run -o $path: $(cat "$tmp/err")"
	set -- "$tmp/run/$path"/*.sqlite
	[ -f "$1" ] || fail "run: no database in $path"
done

# The same paths refused: a file in the way, an empty path. The program runs on as without the
# shim (t055); `syncspy run` stops before it starts, exit 2, one message (-o '' is refused as
# a missing argument before any directory is made).
touch "$tmp/file"
for path in "$tmp/file/sub" ""; do
	env LD_PRELOAD="$SHIM_PRELOAD" SYNCSPY_OUTPUT="$path" "$PROGS/scenarios" s4 >"$tmp/stdout" 2>"$tmp/err" ||
		fail "shim, '$path': the program failed"
	grep -q 'roundtrip ok' "$tmp/stdout" || fail "shim, '$path': the program's output changed"
	[ "$(grep -c '^syncspy: ' "$tmp/err")" -eq 1 ] &&
		grep -q "^syncspy: .*cannot create SYNCSPY_OUTPUT=$path: " "$tmp/err" ||
		fail "shim, '$path': $(cat "$tmp/err")"
	"$SYNCSPY" run -o "$path" -- "$PROGS/scenarios" s4 >"$tmp/stdout" 2>"$tmp/err"
	code=$?
	[ $code -eq 2 ] || fail "run -o '$path': exit $code, want 2"
	[ ! -s "$tmp/stdout" ] || fail "run -o '$path' started the program"
	want="^syncspy: run: output directory $path: Not a directory$"
	[ -n "$path" ] || want='^syncspy: run: -o needs a directory$'
	[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "$want" "$tmp/err" ||
		fail "run -o '$path': $(cat "$tmp/err")"
done
echo "one default directory, one mkdir -p"
