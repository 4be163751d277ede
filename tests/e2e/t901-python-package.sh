#!/bin/sh
# SPDX-License-Identifier: MIT
# t901: the Python package (docs/python.md): `pip install --no-build-isolation .` at the top of
# the tree builds it offline in a venv of Debian's python3, carrying this build's libsyncspy.so
# and syncspy command (the same files) and its header; the wheel is py3-none-PLATFORM.
# `python -m syncspy` is the command (its version, `run`, `report` output byte for byte) and
# records a script (the user's line in the database, steps, the script's exit status passed
# on), a module (-m) and a program; `import syncspy` without the shim says how to start.
. "$E2E_DIR/lib.sh"
. "$E2E_DIR/python-lib.sh"
stand_in_env
script=$TOP_SRCDIR/tests/progs/py_record.py
line=$(grep -n 'MARK:record' "$script" | cut -d: -f1)

# the README's install command, at the top of a copy of the tree's package files
copy_package_tree "$tmp/src"
"$pybase" -m venv --system-site-packages "$tmp/venv" || fail "venv failed"
(cd "$tmp/src" && SYNCSPY_BUILD_DIR=$build "$tmp/venv/bin/pip" install --no-index \
	--no-build-isolation .) >"$tmp/pip.log" 2>&1 || fail "pip install failed: $(tail -20 "$tmp/pip.log")"
py=$tmp/venv/bin/python
site=$(SYNCSPY_QUIET=1 "$py" -c 'import os, syncspy; print(os.path.dirname(syncspy.__file__))') || fail "import failed"
case "$site" in "$tmp/venv/"*) ;; *) fail "syncspy imported from $site, not the venv" ;; esac
cmp "$site/_bundled/lib/libsyncspy.so" "$SHIM" || fail "the package's libsyncspy.so is not the build's"
cmp "$site/_bundled/bin/syncspy" "$SYNCSPY" || fail "the package's syncspy is not the build's"
cmp "$site/_bundled/include/syncspy/syncspy.h" "$TOP_SRCDIR/include/syncspy/syncspy.h" || fail "header differs"
[ -x "$site/_bundled/bin/syncspy" ] || fail "the package's syncspy is not executable"
make_wheel
case "$(basename "$wheel")" in
syncspy-*-py3-none-linux_*.whl) ;;
*) fail "wheel tag: $(basename "$wheel")" ;;
esac

# the command, as built
[ "$("$py" -m syncspy --version)" = "$("$SYNCSPY" --version)" ] || fail "python -m syncspy --version differs"
[ "$("$tmp/venv/bin/syncspy" --version)" = "$("$SYNCSPY" --version)" ] || fail "the syncspy script differs"
"$py" -m syncspy run -o "$tmp/rec" -- "$PROGS/scenarios" s1 >"$tmp/run.out" 2>"$tmp/run.err" ||
	fail "python -m syncspy run failed: $(cat "$tmp/run.err")"
"$py" -m syncspy report "$tmp/rec" >"$tmp/report.py" 2>&1 || fail "python -m syncspy report failed"
"$SYNCSPY" report "$tmp/rec" >"$tmp/report.c" 2>&1 || fail "syncspy report failed"
cmp "$tmp/report.c" "$tmp/report.py" || fail "python -m syncspy report differs from syncspy report"
"$py" -m syncspy report "$tmp/nothing" 2>"$tmp/bad.err"
[ $? -eq 2 ] || fail "python -m syncspy report of a missing directory: not exit 2"

# a script: the shim preloaded, the user's line, the steps, the script's exit status
"$py" -m syncspy run -o "$out" -- "$py" "$script" 0 >/dev/null 2>&1 || fail "run -- python failed"
rm -rf "$out"
(cd "$tmp" && "$py" -m syncspy "$script" 5 >"$tmp/script.out" 2>"$tmp/script.err")
status=$?
[ $status -eq 5 ] || fail "python -m syncspy SCRIPT: exit $status, not the script's 5: $(cat "$tmp/script.err")"
[ "$(cat "$tmp/script.out")" = "recorded 2" ] || fail "script output: $(cat "$tmp/script.out")"
grep -q '^syncspy: run: 1 database' "$tmp/script.err" || fail "no run summary: $(cat "$tmp/script.err")"
out=$tmp/syncspy-out
one_db
golden "SELECT api, site FROM api_calls ORDER BY start_ns" <<END
cudaDeviceSynchronize|$script:$line in <module>
cudaDeviceSynchronize|$script:$line in <module>
END
golden "SELECT kind, name, count(*) FROM ranges GROUP BY kind, name" <<'END'
step|train|2
END
# a module (-m) and a program that is no subcommand of syncspy
mkdir -p "$tmp/mod"
cp "$script" "$tmp/mod/recmod.py"
out=$tmp/mod/syncspy-out
(cd "$tmp/mod" && "$py" -m syncspy -m recmod >"$tmp/mod.out" 2>&1) || fail "python -m syncspy -m MODULE failed: $(cat "$tmp/mod.out")"
one_db
[ "$(q "SELECT count(*) FROM calls WHERE class = 'S1'")" = 2 ] || fail "-m MODULE: not recorded"
(cd "$tmp" && "$py" -m syncspy "$PROGS/guard" >"$tmp/prog.out" 2>&1) || fail "python -m syncspy PROGRAM failed: $(cat "$tmp/prog.out")"
grep -q '^outer guard 1$' "$tmp/prog.out" || fail "PROGRAM did not run under the shim: $(cat "$tmp/prog.out")"

# import without the shim: one warning saying how to start; the guard raises, saying it too
"$py" -c 'import syncspy' 2>"$tmp/warn" || fail "import syncspy failed without the shim"
grep -q 'NotRecordingWarning: syncspy: this process was not started under syncspy .*python -m syncspy SCRIPT.py' "$tmp/warn" ||
	fail "no warning saying how to start: $(cat "$tmp/warn")"
SYNCSPY_QUIET=1 "$py" -c '
import syncspy
try:
    with syncspy.no_sync():
        pass
except syncspy.NotRecording as e:
    print(e)' >"$tmp/notrec" 2>&1 || fail "no_sync without the shim: $(cat "$tmp/notrec")"
grep -q '^syncspy: libsyncspy.so is not loaded in this process: start the program under syncspy: `python -m syncspy SCRIPT.py ARGS`' "$tmp/notrec" ||
	fail "NotRecording: $(cat "$tmp/notrec")"
exit 0
