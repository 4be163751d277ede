#!/bin/sh
# SPDX-License-Identifier: MIT
# t062: raw ticks become CLOCK_MONOTONIC ns by one continuous mapping (interpose/clock.c,
# CLOCK-1, CLOCK-2).
#   - on scripted clocks (tests/progs/clock_steps.c), a pairing late by a 3 ms preemption, at
#     load, at the first calibration or where a later segment starts, in one try or in every
#     try, leaves every record in order, converted alike by any drain, and near the true time;
#   - under the shim (the TSC where this CPU has an invariant one), one thread's calls come in
#     the order they were made, and each step of steady's marked loop holds its own stream sync.
. "$E2E_DIR/lib.sh"
for tries in once every; do
	for pairing in none load first later; do
		"$PROGS/clock_steps" $pairing $tries >"$tmp/steps.txt" 2>&1 ||
			fail "clock_steps $pairing $tries: $(cat "$tmp/steps.txt")"
		grep -q "^clock_steps $pairing: [0-9]* records, [0-9]* segments, in order" "$tmp/steps.txt" ||
			fail "clock_steps $pairing $tries output: $(cat "$tmp/steps.txt")"
	done
done

under_shim "$PROGS/steady" marked >/dev/null 2>"$tmp/stderr" || fail "steady marked: $(cat "$tmp/stderr")"
one_db
# a thread's calls are made one after the other: by id (the order they ended), starts rise
[ "$(q "SELECT count(*) FROM calls a JOIN calls b ON b.tid = a.tid AND b.id = (SELECT min(id)
	FROM calls WHERE tid = a.tid AND id > a.id) WHERE b.start_ns < a.end_ns")" = 0 ] ||
	fail "calls of one thread overlap or run backwards: $(q "SELECT id, tid, start_ns, end_ns FROM calls ORDER BY id")"
# every step mark but the last is followed by its step's one cudaStreamSynchronize
[ "$(q "SELECT count(*) FROM ranges WHERE kind = 'step'")" = 20 ] || fail "steps: $(q "SELECT * FROM ranges")"
[ "$(q "SELECT group_concat(n, ' ') FROM (SELECT (SELECT count(*) FROM api_calls c
	WHERE c.api = 'cudaStreamSynchronize' AND c.start_ns >= r.start_ns AND c.start_ns < r.end_ns) AS n
	FROM ranges r WHERE kind = 'step' ORDER BY start_ns)")" = "$(printf '1 %.0s' $(seq 20) | sed 's/ $//')" ] ||
	fail "syncs per step: $(q "SELECT r.start_ns, r.end_ns FROM ranges r WHERE kind = 'step'")"
[ "$(q "SELECT value FROM meta WHERE key = 'clock'")" != "" ] || fail "no clock in meta"
