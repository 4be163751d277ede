#!/bin/sh
# SPDX-License-Identifier: MIT
# t031: with a 1 MiB cap and a writer that drains rarely, a burst of calls overflows the ring:
# the overflow is counted in meta.dropped_events, and recorded + dropped = calls made (SHIM-5):
# 200000 records plus one event create and one destroy.
. "$E2E_DIR/lib.sh"
SYNCSPY_BUFFER_MB=1 SYNCSPY_DRAIN_MS=1000 under_shim "$PROGS/scenarios" flood 200000 ||
	fail "scenario failed"
one_db
golden "SELECT (SELECT count(*) FROM calls) + (SELECT value FROM meta WHERE key = 'dropped_events')" <<'END'
200002
END
golden "SELECT value > 0, value = (SELECT value FROM meta WHERE key = 'dropped_full_buffer') FROM meta WHERE key = 'dropped_events'" <<'END'
1|1
END
