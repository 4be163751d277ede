#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/e2e/t802-budget-limits.sh: hostile budget files for `syncspy check` (issue 18, item 11):
# a budget of /dev/zero (read without end before: capped at 16 MiB), a 50 KB site pattern
# (SQLite's "LIKE or GLOB pattern too complex", exit 3, before), a NUL inside a string ("x\u0000*"
# was silently cut to "x"): each a bad budget, exit 2, one line. 16,000 limits are checked in
# seconds (each limit parsed from its own text, not the whole document again), and 1e308 ms
# prints as 1e+308, not as 309 digits. Generated, at least 60 more: every key of a limit, of
# "warmup" and of the top level with a value of a wrong type or out of range, each refused with
# its JSON path.
#
# env: as tests/e2e/lib.sh says. Exit 0 pass, 1 fail.

. "$E2E_DIR/lib.sh"
sh "$make_db" "$tmp/good.sqlite" || { echo "FAIL: make-db.sh"; exit 1; }

# expect CODE MESSAGE BUDGET: check's exit code and its one stderr line.
expect() {
	timeout 60 "$SYNCSPY" check --budget "$3" "$tmp/good.sqlite" >"$tmp/out" 2>"$tmp/err"
	code=$?
	if [ "$code" != "$1" ] || [ "$(wc -l <"$tmp/err")" != 1 ] || ! grep -qF -- "$2" "$tmp/err"; then
		bad "check --budget $3 -> exit $code (want $1), stderr: $(cat "$tmp/err")"
	fi
}

expect 2 "syncspy: /dev/zero: larger than 16 MiB: not a budget" /dev/zero

pattern=$(head -c 50000 /dev/zero | tr '\0' '*')
printf '{"version": 1, "limits": [{"site": "%s", "max_count": 1}]}\n' "$pattern" >"$tmp/long.json"
expect 2 "long.json: \$.limits[0].site: pattern of 50000 bytes (at most 4096)" "$tmp/long.json"
printf '{"version": 1, "allow": ["%s"], "limits": [{"max_count": 1}]}\n' "$pattern" >"$tmp/allow.json"
expect 2 "allow.json: \$.allow[0]: pattern of 50000 bytes" "$tmp/allow.json"

printf '{"version": 1, "limits": [{"site": "x\\u0000*", "max_count": 1}]}\n' >"$tmp/nul.json"
expect 2 "nul.json: a string contains a NUL character (\\u0000): not allowed" "$tmp/nul.json"
# an escaped backslash before u0000 is two characters, not a NUL
printf '{"version": 1, "limits": [{"site": "x\\\\u0000*", "max_count": 1}]}\n' >"$tmp/notnul.json"
"$SYNCSPY" check --budget "$tmp/notnul.json" "$tmp/good.sqlite" >/dev/null 2>&1 ||
	bad "a budget with an escaped backslash was refused"

printf '{"version": 1, "limits": [{"max_blocked_ms": 1e308}]}\n' >"$tmp/huge.json"
"$SYNCSPY" check --budget "$tmp/huge.json" "$tmp/good.sqlite" >"$tmp/out" 2>&1 || bad "1e308"
grep -qF "PASS limits[0] class=sync: blocked 13.031 ms <= 1e+308 ms" "$tmp/out" ||
	bad "1e308 printed as: $(grep PASS "$tmp/out")"

# 16,000 limits: every one checked and counted (their speed is no unit test's business: each is
# parsed from its own text now, under a second here, 13-23 s before; the timeout only ends a hang).
{
	printf '{"version": 1, "limits": ['
	i=0
	while [ $i -lt 16000 ]; do
		[ $i = 0 ] || printf ','
		printf '{"max_count": %d}' $i
		i=$((i + 1))
	done
	printf ']}\n'
} >"$tmp/many.json"
timeout 300 "$SYNCSPY" check --budget "$tmp/many.json" "$tmp/good.sqlite" >"$tmp/out" 2>&1
status=$?
[ $status = 1 ] || bad "16000 limits: exit $status (want 1: the small maxima are breached)"
grep -qF "syncspy check: 16000 limits, 16000 checks: 15954 passed, 46 breached" "$tmp/out" ||
	bad "16000 limits: $(tail -1 "$tmp/out")"

# Generated (issue 18's suite: at least 60 budget files): every key of a limit, of "warmup" and
# the top level given each value of a wrong type or out of range. Each is a bad budget: exit 2,
# one line naming the key's JSON path.
generated=0
wrong() { # wrong PATH JSON: the budget JSON is bad at PATH
	generated=$((generated + 1))
	printf '%s\n' "$2" >"$tmp/gen-$generated.json"
	expect 2 "gen-$generated.json: $1" "$tmp/gen-$generated.json"
}
for key in name api site range class; do
	for value in 1 true null '[]' '{}' '""'; do
		wrong "\$.limits[0].$key" "{\"version\": 1, \"limits\": [{\"$key\": $value, \"max_count\": 1}]}"
	done
done
for value in '"0"' 1.5 true null '[]' '{}'; do
	wrong '$.limits[0].rank' "{\"version\": 1, \"limits\": [{\"rank\": $value, \"max_count\": 1}]}"
done
for value in 1 '"true"' null '[]' '{}'; do
	wrong '$.limits[0].per_rank' "{\"version\": 1, \"limits\": [{\"per_rank\": $value, \"max_count\": 1}]}"
done
for key in max_count max_count_per_range max_blocked_ms max_blocked_ms_per_range; do
	for value in -1 '"1"' true null '[]' '{}'; do
		wrong "\$.limits[0].$key" "{\"version\": 1, \"limits\": [{\"$key\": $value}]}"
	done
done
for key in max_count_per_step max_blocked_ms_per_step; do
	for value in -1 '"1"' true null '[]' '{}'; do
		wrong "\$.limits[0].$key" "{\"version\": 1, \"warmup\": {\"steady\": true}, \"limits\": [{\"$key\": $value}]}"
	done
done
for value in '"1"' 0 2 1.5 null true '[]' '{}'; do
	wrong '$.version' "{\"version\": $value, \"limits\": [{\"max_count\": 1}]}"
done
for warmup in '{"seconds": -1}' '{"seconds": "1"}' '{"calls": 1.5}' '{"calls": -2}' '{"steady": 1}' \
	'{"seconds": 1, "calls": 2}' '{}' '{"minutes": 1}' '[]' 1; do
	wrong '$.warmup' "{\"version\": 1, \"warmup\": $warmup, \"limits\": [{\"max_count\": 1}]}"
done
for allow in '"*"' '[1]' '[null]' '[""]' '{}'; do
	wrong '$.allow' "{\"version\": 1, \"allow\": $allow, \"limits\": [{\"max_count\": 1}]}"
done
wrong '$.limits[0].max_cost' '{"version": 1, "limits": [{"max_cost": 1}]}'
wrong '$.extra' '{"version": 1, "extra": 1, "limits": [{"max_count": 1}]}'
[ "$generated" -ge 60 ] || bad "only $generated generated budgets"
echo "generated: $generated bad budget files"

finish
