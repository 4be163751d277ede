#!/bin/sh
# SPDX-License-Identifier: MIT
# t241: managed memory prefetched to the host and back every step (docs/rules.md,
# managed-round-trip): the prefetches are recorded with their range (calls.ptr) and location
# (calls.aux: type << 32 | id, interpose/wrapper.h PREFETCH); both lines of the round trip get a
# steady finding naming the other, with the migration estimate as their cost; the setup's
# prefetch to the GPU is never flagged, and a loop that reads a small result instead
# (`managed-once`) gets no finding of the rule. tests/progs/steady.c managed, 30 marked steps.
. "$E2E_DIR/lib.sh"
[ -n "${PYTHON3:-}" ] || skip "no python3"
src=$TOP_SRCDIR/tests/progs/steady.c
line() { grep -n "@$1 " "$src" | cut -d: -f1; }
for mode in managed managed-once; do
	rm -rf "$out" && mkdir -p "$out"
	SYNCSPY_QUIET=1 under_shim "$PROGS/steady" $mode >"$tmp/$mode.out" 2>&1 || fail "steady $mode exited $?: $(cat "$tmp/$mode.out")"
	"$PROGS/steady" $mode >"$tmp/$mode.plain" 2>&1 || fail "steady $mode without the shim exited $?"
	diff -u "$tmp/$mode.plain" "$tmp/$mode.out" >&2 || fail "$mode: output changed under the shim"
	one_db
	cp "$db" "$tmp/$mode.sqlite"
	"$SYNCSPY" report --format json "$db" >"$tmp/$mode.json" || fail "report $mode exited $?"
done
db=$tmp/managed.sqlite
# the prefetches as recorded: 1 to the GPU at setup, 30 to the host and 30 back, one range
golden "SELECT aux >> 32, aux & 4294967295, count(*), count(DISTINCT ptr), min(bytes) = max(bytes)
	FROM calls c JOIN apis a ON a.id = c.api_id WHERE a.name = 'cudaMemPrefetchAsync'
	GROUP BY 1, 2 ORDER BY 1" <<'END'
1|0|31|1|1
2|0|30|1|1
END
TO_HOST=$(line managed-to-host) TO_GPU=$(line managed-to-gpu) SETUP=$(line managed-setup) \
	"$PYTHON3" - "$tmp/managed.json" "$tmp/managed-once.json" <<'PY' || fail "report checks failed"
import json, os, sys
r = json.load(open(sys.argv[1]))
trips = [f for f in r["findings"] if f["rule"] == "managed-round-trip"]
sites = sorted(f["site"].rsplit(":", 1)[1] for f in trips)
want = sorted("%s in managed" % os.environ[k] for k in ("TO_HOST", "TO_GPU"))
assert sites == want, (sites, want)
for f in trips:
    assert f["phase"] == "steady" and f["severity"] != "info", f
    assert f["count"] >= 20 and f["estimate_ns"] > 0 and f["cost_ns"] == f["estimate_ns"], f
    other = os.environ["TO_GPU"] if f["site"].endswith(":%s in managed" % os.environ["TO_HOST"]) else os.environ["TO_HOST"]
    assert ("steady.c:%s in managed" % other) in f["detail"], f
assert trips[0]["estimate_ns"] == trips[1]["estimate_ns"], trips
once = json.load(open(sys.argv[2]))
assert not [f for f in once["findings"] if f["rule"] == "managed-round-trip"], once["findings"]
PY
