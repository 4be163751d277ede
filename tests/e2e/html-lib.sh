# SPDX-License-Identifier: MIT
# tests/e2e/html-lib.sh: what the HTML report tests (t5NN-html-*) share. Sourced after lib.sh.
#
#   make_html_inputs      writes $tmp/in/: tests/fixtures/make-db.sh's database with the rows of
#                         report-rules.sql (repeating sites: findings above `info`) as rank 0, and
#                         a copy as rank 1 whose syncs took four times as long and whose first
#                         call site is $HOSTILE (markup that would run script if unescaped)
#   html_report OUT IN... runs `syncspy report --format html -o OUT IN...`
#   make_diff_inputs      writes $tmp/diff/before.sqlite, the committed H200 trace of
#                         examples/torch/08_item_per_step (bad), and after.sqlite, a copy whose
#                         per-step .item() sync takes 2 ms longer (changed, a regression) and
#                         whose libc10_cuda.so allocation site reads $HOSTILE (one finding gone,
#                         one new): every status of `syncspy diff`, figures that are the same
#                         on every machine
#   need_chromium         sets $chromium to Debian's chromium, or skips the test
#   chromium_run ARGS...  headless Chromium as CI runs it (as root, no network, fresh profile);
#                         its log goes to $tmp/chromium.log
#   no_console_messages   fails the test if the page logged anything to the console (an
#                         uncaught error, a refused fetch): the page itself logs nothing
#   shot_is_page PNG N WHAT  fails the test unless PNG is a 1280x900 picture of a page (png.py:
#                         many colors, neither blank nor solid) with more than N pixels of the
#                         viewer's red (--hot, #c0392b), WHAT saying where it should be

# If it ever runs, it marks the body; the tests look for that mark.
HOSTILE='</script><img src=x onerror="document.body.dataset.pwned=1"><!--'

make_html_inputs() {
	mkdir -p "$tmp/in"
	SYNCSPY=$SYNCSPY SQLITE3=$SQLITE3 sh "$TOP_SRCDIR/tests/fixtures/make-db.sh" \
		"$tmp/in/rank0.sqlite" >/dev/null || fail "make-db.sh failed"
	"$SQLITE3" -batch "$tmp/in/rank0.sqlite" <"$TOP_SRCDIR/tests/fixtures/report-rules.sql" ||
		fail "report-rules.sql failed"
	cp "$tmp/in/rank0.sqlite" "$tmp/in/rank1.sqlite"
	"$SQLITE3" -batch "$tmp/in/rank1.sqlite" "
		UPDATE meta SET value = 1 WHERE key = 'rank';
		UPDATE meta SET value = 4243 WHERE key = 'pid';
		UPDATE calls SET end_ns = end_ns + 3 * (end_ns - start_ns) WHERE class LIKE 'S%';
		UPDATE sites SET text = '$HOSTILE' WHERE id = 1;" || fail "cannot edit rank1.sqlite"
}

html_report() {
	report_out=$1
	shift
	"$SYNCSPY" report --format html -o "$report_out" "$@" >"$tmp/report.stdout" \
		2>"$tmp/report.stderr" || fail "syncspy report --format html failed: $(cat "$tmp/report.stderr")"
}

make_diff_inputs() {
	mkdir -p "$tmp/diff"
	cp "$TOP_SRCDIR/examples/traces/08_item_per_step-bad-shared.sqlite" "$tmp/diff/before.sqlite" ||
		fail "no 08_item_per_step trace"
	cp "$tmp/diff/before.sqlite" "$tmp/diff/after.sqlite"
	chmod u+w "$tmp/diff/before.sqlite" "$tmp/diff/after.sqlite"
	"$SQLITE3" -batch "$tmp/diff/after.sqlite" "
		UPDATE sites SET text = '$HOSTILE' WHERE text = 'libc10_cuda.so+0x2f4cb';
		UPDATE calls SET end_ns = end_ns + 2000000 WHERE class LIKE 'S%' AND site_id =
			(SELECT id FROM sites WHERE text LIKE '%08_item_per_step.py:43 in main');" ||
		fail "cannot edit after.sqlite"
}

need_chromium() {
	chromium=$(command -v chromium || command -v chromium-browser || true)
	[ -n "$chromium" ] || skip "no chromium (install Debian's chromium package)"
}

chromium_run() {
	timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
		--disable-background-networking --disable-component-update --disable-sync \
		--user-data-dir="$tmp/chromium-profile" --enable-logging=stderr --v=0 \
		"$@" 2>"$tmp/chromium.log"
}

no_console_messages() {
	if grep -E ':CONSOLE[:(]|Uncaught|Refused to' "$tmp/chromium.log" >&2; then
		fail "the page logged to the console (above)"
	fi
}

shot_is_page() {
	"$PYTHON3" - "$1" "$2" "$3" <<'PY' || fail "the screenshot is not a picture of the page"
import os, sys
sys.path.insert(0, os.environ["E2E_DIR"])
import png
assert os.path.getsize(sys.argv[1]) > 20000, "only %d bytes" % os.path.getsize(sys.argv[1])
colors, nonwhite, red = png.screenshot(sys.argv[1], (1280, 900), (0xc0, 0x39, 0x2b))
assert red > int(sys.argv[2]), "no red %s (%d pixels)" % (sys.argv[3], red)
print("1280x900, %d colors, %.1f%% non-white, %d red pixels" % (colors, 100 * nonwhite, red))
PY
}
