#!/bin/sh
# SPDX-License-Identifier: MIT
# t852: 200 threads alive and recording at once (issue 18 item 2: with the default cap a 33rd
# live thread recorded nothing, 32 rings taking the whole cap). Rings start at one 4 KiB block
# and share the cap (interpose/ring.c): every thread records, with the default cap and under a
# 1 MiB one (256 blocks for 200 threads). Each thread makes 20 calls after all have attached.
. "$E2E_DIR/lib.sh"
unset SYNCSPY_BUFFER_MB
for cap in default 1; do
	rm -rf "$out"
	[ "$cap" = default ] || export SYNCSPY_BUFFER_MB=$cap
	SYNCSPY_QUIET=1 under_shim "$PROGS/burst" 200 20 0 live >"$tmp/stdout" 2>"$tmp/stderr" ||
		fail "burst failed (cap $cap): $(cat "$tmp/stderr")"
	[ -s "$tmp/stderr" ] && fail "stderr (cap $cap): $(cat "$tmp/stderr")"
	grep -q 'burst: 4800 calls' "$tmp/stdout" || fail "wrong output: $(cat "$tmp/stdout")"
	one_db
	golden "SELECT count(*), count(DISTINCT tid) FROM calls" <<'END'
4800|200
END
	golden "SELECT key, value FROM meta WHERE key IN ('dropped_events', 'dropped_no_buffer', 'threads') ORDER BY key" <<'END'
dropped_events|0
dropped_no_buffer|0
threads|200
END
done
