#!/bin/sh
# SPDX-License-Identifier: MIT
# t411: bad input around summaries (docs/cli.md "Large jobs", SUMMARY-1): wrong usage of
# summarize, a summary where a recording is needed (HTML, info, dump, export, symbolize, or as
# summarize's input), what `check` cannot judge on a summary (warm-up by seconds or calls,
# range limits), and damaged summaries (another version, no kind, a missing table, a rule this
# syncspy does not know, a dangling text, a collectives blob that does not decode, ranks not
# numbered from 0, a truncated file, a wrong type): each exits 2 with one line on stderr, and
# `report` and `check` both refuse each damaged summary. A failed summarize leaves the old
# summary in place.
. "$E2E_DIR/lib.sh"
job=$tmp/job
GENERATE_ONLY=1 RANKS=8 CALLS=200 WORK=$job SYNCSPY=$SYNCSPY SQLITE3=$SQLITE3 sh "$TOP_SRCDIR/bench/report-scale.sh" \
	>"$tmp/bench.out" 2>&1 || fail "bench/report-scale.sh: $(cat "$tmp/bench.out")"
sum=$tmp/node.summary
"$SYNCSPY" summarize -o "$sum" "$job" 2>"$tmp/err" || fail "summarize: $(cat "$tmp/err")"
"$SYNCSPY" report --format json -o /dev/null "$sum" 2>"$tmp/err" || fail "report of a good summary: $(cat "$tmp/err")"
echo '{"version": 1, "limits": [{"class": "sync", "max_count": 100000}]}' >"$tmp/budget.json"

# expect2 WHAT PATTERN CMD...: exit 2, exactly one line on stderr, matching the glob PATTERN.
expect2() {
	what=$1 pattern=$2
	shift 2
	"$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ $rc = 2 ] || { bad "$what: exit $rc, want 2: $(head -3 "$tmp/err")"; return; }
	[ "$(wc -l <"$tmp/err")" = 1 ] || { bad "$what: not one line on stderr: $(cat "$tmp/err")"; return; }
	# shellcheck disable=SC2254 # the pattern is a glob on purpose
	case $(cat "$tmp/err") in
	$pattern) ;;
	*) bad "$what: message '$(cat "$tmp/err")' does not match '$pattern'" ;;
	esac
}

expect2 "summarize without -o" "syncspy: summarize: -o SUMMARY*" "$SYNCSPY" summarize "$job"
expect2 "summarize without databases" "syncspy: summarize: name at least one*" "$SYNCSPY" summarize -o "$tmp/x.summary"
expect2 "summarize of a summary" "syncspy: $sum: a summary: summarize reads databases*" \
	"$SYNCSPY" summarize -o "$tmp/x.summary" "$sum"
expect2 "summarize into a missing directory" "syncspy: $tmp/no/x.summary: cannot write*" \
	"$SYNCSPY" summarize -o "$tmp/no/x.summary" "$job"
expect2 "HTML report of a summary" "syncspy: $sum: a summary: the HTML report draws*" \
	"$SYNCSPY" report --format html -o "$tmp/x.html" "$sum"
[ -e "$tmp/x.html" ] && bad "a refused HTML report left a file"
expect2 "info of a summary" "syncspy: $sum: a syncspy summary (syncspy summarize), not a recording*" "$SYNCSPY" info "$sum"
expect2 "dump of a summary" "syncspy: $sum: a syncspy summary*" "$SYNCSPY" dump "$sum"
expect2 "export of a summary" "syncspy: $sum: a syncspy summary*" "$SYNCSPY" export -o "$tmp/x.json" "$sum"
expect2 "symbolize of a summary" "syncspy: symbolize: $sum: a syncspy summary*" "$SYNCSPY" symbolize "$sum"

echo '{"version": 1, "warmup": {"seconds": 1}, "limits": [{"class": "sync", "max_count": 1}]}' >"$tmp/seconds.json"
echo '{"version": 1, "warmup": {"calls": 10}, "limits": [{"class": "sync", "max_count": 1}]}' >"$tmp/calls.json"
echo '{"version": 1, "limits": [{"class": "sync", "range": "step*", "max_count_per_range": 1}]}' >"$tmp/range.json"
expect2 "check of a summary, warm-up by seconds" "syncspy: $sum: a summary keeps the steady state's split only*" \
	"$SYNCSPY" check --budget "$tmp/seconds.json" "$sum"
expect2 "check of a summary, warm-up by calls" "syncspy: $sum: a summary keeps the steady state's split only*" \
	"$SYNCSPY" check --budget "$tmp/calls.json" "$sum"
expect2 "check of a summary, range limit" "syncspy: $sum: a summary keeps no range instances*" \
	"$SYNCSPY" check --budget "$tmp/range.json" "$sum"

# Damaged copies: NAME, the SQL that damages it (sqlite3 keeps the header's application_id),
# the message's glob after "syncspy: PATH: ".
n=0
copy_damaged() { # SQL: $f, a copy of the summary that SQL damaged
	n=$((n + 1))
	f=$tmp/d$n.summary
	cp "$sum" "$f"
	"$SQLITE3" "$f" "$1" || fail "cannot damage the copy: $1"
}
damage() { # NAME GLOB SQL
	copy_damaged "$3"
	expect2 "report, $1" "syncspy: $f: $2" "$SYNCSPY" report --format json -o "$tmp/d.json" "$f"
	expect2 "check, $1" "syncspy: $f: $2" "$SYNCSPY" check --budget "$tmp/budget.json" "$f"
}
damage "another version" "syncspy summary version 99; this syncspy reads version 2*" \
	"UPDATE meta SET value = 99 WHERE key = 'summary_version'"
damage "no kind" "damaged syncspy summary: no meta.kind*" "DELETE FROM meta WHERE key = 'kind'"
damage "no findings table" "damaged syncspy summary: no such table: findings" "DROP TABLE findings"
damage "no ranks" "damaged syncspy summary: no ranks" "DELETE FROM ranks"
damage "ranks not from 0" "damaged syncspy summary: ranks.idx not numbered from 0" \
	"UPDATE ranks SET idx = 100 WHERE idx = 7"
damage "a column missing" "damaged syncspy summary: no such column: check_dropped" \
	"ALTER TABLE ranks DROP COLUMN check_dropped"
# what only the analysis reads (check reads its own rows): report only
copy_damaged "UPDATE strings SET text = 'no-such-rule' WHERE text = 'host-sync'"
expect2 "report, an unknown rule" "syncspy: $f: damaged syncspy summary: a finding of rank * has no rule this syncspy knows" \
	"$SYNCSPY" report --format json -o "$tmp/d.json" "$f"
copy_damaged "UPDATE collectives SET calls = x'01' WHERE idx = 3"
expect2 "report, a bad collectives blob" "syncspy: $f: damaged syncspy summary: a collective series without its calls" \
	"$SYNCSPY" report --format json -o "$tmp/d.json" "$f"
copy_damaged "UPDATE ranks SET wall_ns = 'long' WHERE idx = 2"
expect2 "report, a text where a number must be" "syncspy: $f: damaged syncspy summary: rank 2: no wall_ns" \
	"$SYNCSPY" report --format json -o "$tmp/d.json" "$f"
copy_damaged "DELETE FROM strings WHERE id = (SELECT site FROM findings LIMIT 1)"
expect2 "report, a dangling text" "syncspy: $f: damaged syncspy summary: a finding of rank * has no site" \
	"$SYNCSPY" report --format json -o "$tmp/d.json" "$f"
expect2 "check, a dangling text" "syncspy: $f: damaged syncspy summary: NOT NULL constraint failed*" \
	"$SYNCSPY" check --budget "$tmp/budget.json" "$f"
n=$((n + 1))
f=$tmp/d$n.summary
head -c 12288 "$sum" >"$f"
expect2 "report, truncated" "syncspy: $f: damaged syncspy summary: *" "$SYNCSPY" report --format json -o "$tmp/d.json" "$f"
expect2 "check, truncated" "syncspy: $f: damaged syncspy summary: *" "$SYNCSPY" check --budget "$tmp/budget.json" "$f"

# A failed summarize (one bad database) leaves the old summary as it was.
cp "$sum" "$tmp/keep.summary"
cp "$sum" "$tmp/old.summary"
printf 'not a database' >"$tmp/bad.sqlite"
expect2 "summarize of a bad database" "syncspy: $tmp/bad.sqlite: *" "$SYNCSPY" summarize -o "$tmp/old.summary" "$job" "$tmp/bad.sqlite"
cmp -s "$tmp/old.summary" "$tmp/keep.summary" || bad "a failed summarize changed the old summary"
[ "$(ls "$tmp" | grep -c 'old.summary.')" = 0 ] || bad "a failed summarize left its temporary file: $(ls "$tmp")"
finish
