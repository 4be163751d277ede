#!/bin/sh
# SPDX-License-Identifier: MIT
# t400: `syncspy run` preloads the shim into CMD and its children (a shell script too), writes
# into -o DIR (made absolute), passes CMD's exit status (0, 3, 128+15 when SIGTERM ended it,
# 127 when CMD is not found), keeps the caller's LD_PRELOAD after the shim, exits 2 when the
# shim cannot be found, and forwards a SIGTERM sent to syncspy to CMD, whose database is then
# finished (exit_reason signal) before syncspy exits.
. "$E2E_DIR/lib.sh"
cd "$tmp" || exit 1

"$SYNCSPY" run -o rel-out -- "$PROGS/scenarios" s1 >/dev/null 2>"$tmp/err" || fail "run s1 exited $?: $(cat "$tmp/err")"
set -- "$tmp"/rel-out/*.sqlite
[ -f "$1" ] || fail "no database in -o DIR: $(ls "$tmp")"
grep -q "^syncspy: run: 1 database in $tmp/rel-out:" "$tmp/err" || fail "summary: $(cat "$tmp/err")"
grep -q "^syncspy: run: next: syncspy [a-z]* $tmp/rel-out" "$tmp/err" || fail "next command: $(cat "$tmp/err")"

# Exit codes, like a shell's.
"$SYNCSPY" run -o "$out" sh -c 'exit 3' 2>/dev/null
[ $? -eq 3 ] || fail "exit 3 not passed"
"$SYNCSPY" run -o "$out" -- "$PROGS/scenarios" sigterm >/dev/null 2>&1
[ $? -eq 143 ] || fail "death by SIGTERM should exit 143"
"$SYNCSPY" run -o "$out" -- no-such-command-t400 2>"$tmp/err"
[ $? -eq 127 ] || fail "missing command should exit 127"
grep -q 'no-such-command-t400: command not found' "$tmp/err" || fail "message: $(cat "$tmp/err")"
SYNCSPY_LIB=$tmp/nothing-here.so "$SYNCSPY" run -o "$out" true 2>"$tmp/err"
[ $? -eq 2 ] || fail "shim not found should exit 2"
grep -q 'cannot find libsyncspy.so' "$tmp/err" || fail "message: $(cat "$tmp/err")"

# A shell script whose children use CUDA, one of them after changing directory; the caller's
# LD_PRELOAD stays (after the shim) and the output variable is absolute.
mkdir -p "$tmp/elsewhere"
cat >"$tmp/job.sh" <<END
#!/bin/sh
echo "preload=\$LD_PRELOAD"
echo "output=\$SYNCSPY_OUTPUT"
echo "cupti=\${SYNCSPY_CUPTI-unset}"
echo "sample=\${SYNCSPY_CUPTI_SAMPLE-unset}"
echo "pause=\${SYNCSPY_CUPTI_PAUSE-unset}"
"$PROGS/scenarios" s1 >/dev/null
cd "$tmp/elsewhere" && "$PROGS/scenarios" s2 >/dev/null
END
chmod +x "$tmp/job.sh"
LD_PRELOAD=${SANITIZER_PRELOAD:+$SANITIZER_PRELOAD:}libc.so.6 "$SYNCSPY" run -o script-out --cupti --cupti-sample 100/1000 --cupti-pause detach "$tmp/job.sh" >"$tmp/stdout" 2>"$tmp/err" || fail "script run exited $?: $(cat "$tmp/err")"
grep -q "^preload=$SHIM:libc.so.6\$" "$tmp/stdout" || grep -q "^preload=.*/libsyncspy.so:${SANITIZER_PRELOAD:+$SANITIZER_PRELOAD:}libc.so.6\$" "$tmp/stdout" || fail "LD_PRELOAD: $(cat "$tmp/stdout")"
grep -q "^output=$tmp/script-out\$" "$tmp/stdout" || fail "SYNCSPY_OUTPUT: $(cat "$tmp/stdout")"
grep -q "^cupti=1\$" "$tmp/stdout" || fail "SYNCSPY_CUPTI: $(cat "$tmp/stdout")"
grep -q "^sample=100/1000\$" "$tmp/stdout" || fail "SYNCSPY_CUPTI_SAMPLE: $(cat "$tmp/stdout")"
grep -q "^pause=detach\$" "$tmp/stdout" || fail "SYNCSPY_CUPTI_PAUSE: $(cat "$tmp/stdout")"
[ "$(ls "$tmp"/script-out/*.sqlite | wc -l)" -eq 2 ] || fail "expected 2 databases: $(ls "$tmp/script-out")"
grep -q '^syncspy: run: 2 databases in ' "$tmp/err" || fail "summary: $(cat "$tmp/err")"
[ -z "$(ls "$tmp/elsewhere")" ] || fail "a child wrote into its own directory"

# --cupti-sample with anything but auto, all or ON/PERIOD (0 < ON < PERIOD): exit 2, one message, and the
# command does not run.
for bad in 100 0/10 10/10 1/2x; do
	"$SYNCSPY" run -o bad-sample-out --cupti-sample "$bad" "$tmp/job.sh" >"$tmp/stdout" 2>"$tmp/err"
	rc=$?
	[ $rc -eq 2 ] || fail "--cupti-sample $bad: exit $rc"
	[ "$(cat "$tmp/err")" = "syncspy: run: --cupti-sample $bad: not auto, all, or ON/PERIOD in ms with 0 < ON < PERIOD" ] ||
		fail "--cupti-sample $bad: $(cat "$tmp/err")"
	[ ! -s "$tmp/stdout" ] && [ ! -e "$tmp/bad-sample-out" ] || fail "--cupti-sample $bad: the command ran"
done

# --cupti-pause with anything but disable or detach: exit 2, one message, the command does not run.
for bad in pause DETACH ""; do
	"$SYNCSPY" run -o bad-pause-out --cupti-pause "$bad" "$tmp/job.sh" >"$tmp/stdout" 2>"$tmp/err"
	rc=$?
	[ $rc -eq 2 ] || fail "--cupti-pause '$bad': exit $rc"
	[ "$(cat "$tmp/err")" = "syncspy: run: --cupti-pause $bad: not disable or detach" ] ||
		fail "--cupti-pause '$bad': $(cat "$tmp/err")"
	[ ! -s "$tmp/stdout" ] && [ ! -e "$tmp/bad-pause-out" ] || fail "--cupti-pause '$bad': the command ran"
done

# Signal forwarding: SIGTERM to syncspy reaches the child, which finishes its database.
"$SYNCSPY" run -o sig-out -- "$PROGS/scenarios" flood 100000000 >/dev/null 2>"$tmp/err" &
run_pid=$!
i=0
until ls "$tmp"/sig-out/*.partial >/dev/null 2>&1; do
	i=$((i + 1))
	[ $i -lt 100 ] || { kill $run_pid; fail "no recording started"; }
	sleep 0.1
done
sleep 0.3
kill -TERM $run_pid
wait $run_pid
rc=$?
[ $rc -eq 143 ] || fail "forwarded SIGTERM: expected 143, got $rc ($(cat "$tmp/err"))"
set -- "$tmp"/sig-out/*.sqlite
[ -f "$1" ] || fail "no finished database after SIGTERM: $(ls "$tmp/sig-out")"
db=$1
golden "SELECT value FROM meta WHERE key IN ('exit_reason', 'file_final') ORDER BY key" <<'END'
signal
1
END
exit 0
