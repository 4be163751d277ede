#!/bin/sh
# SPDX-License-Identifier: MIT
# bench/summarize-scale.sh: `syncspy summarize` against the direct report (issue 17, item 3).
#
# Builds RANKS (default 1,024) synthetic rank databases of CALLS calls (default 2,000) with
# bench/report-scale.sh (GENERATE_ONLY=1), summarizes them in PARTS parts (default 8, as 8
# nodes would, one after the other here), and times with GNU time (seconds, peak RSS):
#   - each summarize, and the summaries' total size against the databases';
#   - the merge: `report --format json` of the PARTS summaries (target <= 10 s on 2 cores), and
#     `check` of them, with the same budget as on the databases;
#   - beside it, the direct report (`report --format json` of the databases) at each of SIZES
#     (default "64 256 1024": the first N databases) and of all of them, and `check` of all.
# The merged report must equal the direct one (cmp); that is asserted by t410 too.
#
#   bench/summarize-scale.sh [RESULT_FILE]     e.g. bench/results/2026-12-04-summarize-scale.txt
#
# env: SYNCSPY (default <repo>/report/syncspy), SQLITE3, RANKS, CALLS, PARTS, SIZES, MIX, WORK
# (default a fresh temporary directory, removed at exit). The result is appended to RESULT_FILE.
# Exit: 0 within target, 1 over it, 2 the benchmark could not run.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
SYNCSPY=${SYNCSPY:-$root/report/syncspy}
SQLITE3=${SQLITE3:-sqlite3}
RANKS=${RANKS:-1024}
CALLS=${CALLS:-2000}
PARTS=${PARTS:-8}
SIZES=${SIZES:-64 256 1024}
TARGET_S=10
result=${1:-}

[ -x /usr/bin/time ] || { echo "summarize-scale: needs GNU time (/usr/bin/time)" >&2; exit 2; }
[ -x "$SYNCSPY" ] || { echo "summarize-scale: $SYNCSPY is not built" >&2; exit 2; }
if [ -n "${WORK:-}" ]; then
	work=$WORK
	mkdir -p "$work"
else
	work=$(mktemp -d "${TMPDIR:-/tmp}/summarize-scale.XXXXXX") || exit 2
	trap 'rm -rf "$work"' EXIT
fi
dbs=$work/dbs
GENERATE_ONLY=1 RANKS=$RANKS CALLS=$CALLS WORK=$dbs SYNCSPY=$SYNCSPY SQLITE3=$SQLITE3 \
	sh "$root/bench/report-scale.sh" >"$work/gen.out" 2>&1 || { cat "$work/gen.out" >&2; exit 2; }
ls "$dbs"/*.sqlite >"$work/all"
split -n l/"$PARTS" -d -a 3 "$work/all" "$work/part." || exit 2

# measure NAME CMD...: "SECONDS s, MIB MiB peak RSS" of one command (exit 1 of check is a result)
measure() {
	name=$1
	shift
	/usr/bin/time -f '%e %M' -o "$work/time.$name" "$@" >"$work/out.$name" 2>"$work/err.$name"
	rc=$?
	if [ $rc -gt 1 ] || { [ $rc = 1 ] && [ "${name#check}" = "$name" ]; }; then
		echo "summarize-scale: $name failed ($rc): $(tail -3 "$work/err.$name")" >&2
		exit 2
	fi
	tail -1 "$work/time.$name" | awk '{printf "%s s, %.0f MiB peak RSS", $1, $2 / 1024}'
}
seconds() { tail -1 "$work/time.$1" | cut -d' ' -f1; }

lines=
total=0
for p in "$work"/part.*; do
	case $p in *.summary) continue ;; esac
	# shellcheck disable=SC2046 # one path per line, no spaces
	m=$(measure "sum${p##*.}" "$SYNCSPY" summarize -o "$p.summary" $(cat "$p"))
	lines="$lines
summarize $(wc -l <"$p") ranks: $m, $(wc -c <"$p.summary") bytes"
	total=$(echo "$total + $(seconds "sum${p##*.}")" | bc)
done
db_bytes=$(xargs cat <"$work/all" | wc -c)
sum_bytes=$(cat "$work"/part.*.summary | wc -c)
echo '{"version": 1, "warmup": {"steady": true}, "limits": [{"class": "sync", "per_rank": true, "max_count_per_step": 100}]}' >"$work/budget.json"
merge=$(measure merge "$SYNCSPY" report --format json -o "$work/merged.json" "$work"/part.*.summary)
merge_s=$(seconds merge)
check_sum=$(measure check_sum "$SYNCSPY" check --budget "$work/budget.json" "$work"/part.*.summary)
direct=
for n in $SIZES; do
	[ "$n" -le "$RANKS" ] || continue
	# shellcheck disable=SC2046
	direct="$direct
direct report $n ranks: $(measure "direct$n" "$SYNCSPY" report --format json -o "$work/direct$n.json" $(head -n "$n" "$work/all"))"
done
direct="$direct
direct report $RANKS ranks (the directory): $(measure direct "$SYNCSPY" report --format json -o "$work/direct.json" "$dbs")"
check_db=$(measure check_db "$SYNCSPY" check --budget "$work/budget.json" "$dbs")
same=differs
cmp -s "$work/merged.json" "$work/direct.json" && same=identical
status=PASS
[ "$(echo "$merge_s <= $TARGET_S" | bc)" = 1 ] || status=FAIL
{
	echo "# bench/summarize-scale.sh: $RANKS databases of $CALLS calls (MIX=${MIX:-worst}) in $PARTS summaries"
	echo "date:        $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "commit:      $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "machine:     $(uname -m), $(nproc) cores, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)"
	echo "databases:   $RANKS x $CALLS calls, $db_bytes bytes"
	echo "summaries:   $PARTS, $sum_bytes bytes ($(echo "scale=2; 100 * $sum_bytes / $db_bytes" | bc)% of the databases), summarize total $total s${lines}"
	echo "merge:       report --format json of the $PARTS summaries: $merge (target <= $TARGET_S s): $status; JSON $same to the direct report's"
	echo "check:       of the summaries $check_sum; of the databases $check_db${direct}"
} | tee ${result:+-a "$result"}
[ $status = PASS ] && [ $same = identical ]
