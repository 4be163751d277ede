#!/bin/sh
# SPDX-License-Identifier: MIT
# t231: many ranks stay bounded (issue 18, item 13; docs/viewer.md "Many ranks"; no timing
# asserted: bench/report-scale-curve.sh measures time and memory). Ranks made by
# bench/report-scale.sh: the HTML page of 100 and of 200 ranks carries the timelines of
# SS_HTML_TIMELINE_RANKS (64) ranks, says so (ranks_total, ranks_shown: the worst ranks the
# findings name among them), so that doubling the ranks grows the page by far less than double;
# it renders in Chromium (where installed) with 64 ranks listed and a button for the others;
# report (text, JSON, HTML) and check of 200 databases run under `ulimit -n 64` (a few open at a
# time); a note of one kind names at most 10 databases, then counts the others.
. "$E2E_DIR/lib.sh"
. "$E2E_DIR/html-lib.sh"
gen() { # DIR RANKS
	GENERATE_ONLY=1 RANKS=$2 CALLS=200 WORK=$1 SYNCSPY=$SYNCSPY SQLITE3=$SQLITE3 sh "$TOP_SRCDIR/bench/report-scale.sh" \
		>"$tmp/bench.out" 2>&1 || fail "bench/report-scale.sh: $(cat "$tmp/bench.out")"
}
gen "$tmp/r100" 100
gen "$tmp/r200" 200

for n in 100 200; do
	html_report "$tmp/p$n.html" "$tmp/r$n"
	# the page's data, for the JSON functions
	awk '/id="syncspy-data">/ { on = 1; sub(/.*id="syncspy-data">/, "") }
		on { if (sub(/<\/script>.*/, "")) { print; exit } print }' "$tmp/p$n.html" >"$tmp/d$n.json"
	[ "$(rq "SELECT json_valid(readfile('$tmp/d$n.json'))")" = 1 ] || fail "$n ranks: no page data"
	[ "$(rq "SELECT json_array_length(readfile('$tmp/d$n.json'), '\$.timeline.ranks') || ' ' ||
		json_extract(readfile('$tmp/d$n.json'), '\$.timeline.ranks_total') || ' ' ||
		json_array_length(readfile('$tmp/d$n.json'), '\$.timeline.ranks_shown') || ' ' ||
		json_array_length(readfile('$tmp/d$n.json'), '\$.report.ranks')")" = "64 $n 64 $n" ] ||
		bad "$n ranks: timelines, total, shown, report ranks: $(rq "SELECT json_array_length(readfile('$tmp/d$n.json'), '\$.timeline.ranks')")"
done
# The worst rank (the straggler, the last) has a timeline although it is beyond the first 64.
[ "$(rq "SELECT count(*) FROM json_each(readfile('$tmp/d200.json'), '\$.timeline.ranks_shown') WHERE value = 199")" = 1 ] ||
	bad "the worst rank's timeline is not in the page"
[ "$(rq "SELECT min(value) FROM json_each(readfile('$tmp/d200.json'), '\$.timeline.finding_ranks')")" -ge 0 ] ||
	bad "a finding links to no timeline"
s100=$(wc -c <"$tmp/p100.html")
s200=$(wc -c <"$tmp/p200.html")
[ $((s200 * 10)) -lt $((s100 * 14)) ] || bad "HTML of 200 ranks $s200 bytes, of 100 ranks $s100: not sublinear"

if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
	need_chromium
	chromium_run --dump-dom "file://$tmp/p200.html" >"$tmp/dom.html" || bad "chromium failed: $(tail -5 "$tmp/chromium.log")"
	grep -q '<body[^>]* data-rendered="ok"' "$tmp/dom.html" || bad "the page of 200 ranks did not render"
	grep -q 'data-error=' "$tmp/dom.html" && bad "the page of 200 ranks had an error"
	grep -qF 'show the other 136 of 200 ranks' "$tmp/dom.html" || bad "no button for the other ranks"
	[ "$(grep -o 'data-name="rank [0-9]*"' "$tmp/dom.html" | wc -l)" = 64 ] || bad "not 64 timeline panels"
fi

# 200 databases under a limit of 64 open files.
echo '{"version": 1, "limits": [{"class": "sync", "per_rank": true, "max_count": 100000}]}' >"$tmp/budget.json"
(
	ulimit -n 64 || exit 77
	for f in text json html; do
		"$SYNCSPY" report --format $f -o "$tmp/u.$f" "$tmp/r200" 2>"$tmp/uerr" || echo "report $f: $(cat "$tmp/uerr")"
	done
	"$SYNCSPY" check --budget "$tmp/budget.json" "$tmp/r200" >/dev/null 2>"$tmp/uerr" || echo "check: $(cat "$tmp/uerr")"
) >"$tmp/ulimit.out"
[ -s "$tmp/ulimit.out" ] && bad "under ulimit -n 64: $(cat "$tmp/ulimit.out")"

# 12 unfinished ranks: 10 notes name their database, one counts the other 2.
mkdir "$tmp/unfinished"
for f in "$tmp"/r100/syncspy-bench-10[0-1][0-9]-*.sqlite; do
	case $f in *-r1[2-9].sqlite) continue ;; esac
	cp "$f" "$tmp/unfinished/"
done
for f in "$tmp"/unfinished/*.sqlite; do
	"$SQLITE3" "$f" "DELETE FROM meta WHERE key = 'exit_reason'" || fail "cannot edit $f"
done
"$SYNCSPY" report --format json -o "$tmp/unf.json" "$tmp/unfinished" 2>"$tmp/err" || fail "report: $(cat "$tmp/err")"
[ "$(rq "SELECT count(*) FROM json_each(readfile('$tmp/unf.json'), '\$.notes') WHERE value LIKE '%.sqlite: unfinished recording%'")" = 10 ] ||
	bad "want 10 notes naming unfinished databases: $(rq "SELECT json_extract(readfile('$tmp/unf.json'), '\$.notes')")"
[ "$(rq "SELECT count(*) FROM json_each(readfile('$tmp/unf.json'), '\$.notes') WHERE value = '2 more databases: unfinished recording (the first 10 are named above)'")" = 1 ] ||
	bad "no note counting the other 2: $(rq "SELECT json_extract(readfile('$tmp/unf.json'), '\$.notes')")"
finish
