#!/bin/sh
# SPDX-License-Identifier: MIT
# t900: the sync guard's C API (include/syncspy/syncspy.h, interpose/guard.c) from a C program
# on the stand-ins (tests/progs/guard.c): guards count the calling thread's sync points by class
# (S7 by queries) and name each, API, class, count and native site; enqueues and event records
# are not counted; an inner guard counts its classes only, calls its callback, and closing out
# of order is refused; another thread's syncs count in its own guard only (GUARD-3); errno is
# the program's (GUARD-2); the per-thread counters (syncspy_sync_counts). The recording is the
# one made without guards: every call has its row. Without the shim the program finds no guard.
. "$E2E_DIR/lib.sh"
under_shim "$PROGS/guard" >"$tmp/stdout" 2>"$tmp/stderr" || fail "guard failed: $(cat "$tmp/stderr")"
cat >"$tmp/expected" <<'END'
outer guard 1
inner guard 2
callback inner: cudaStreamSynchronize S2 count 1
errno after a guarded sync: 1234
close outer first: -1
inner: 1 sync points, 1 places
  cudaStreamSynchronize S2 x1 at main (guard) line 0, address set
inner S2 1, S1 0, bad class -1; callbacks 1
close inner: 1
thread: guard 1 counted 2; S1 1 S2 1
outer: 9 sync points, 6 places
  cudaDeviceSynchronize S1 x2 at sync_twice (guard) line 0, address set
  cudaMemcpy S4 x1 at main (guard) line 0, address set
  cudaStreamQuery S7 x3 at poll_three_times (guard) line 0, address set
  cudaStreamSynchronize S2 x1 at main (guard) line 0, address set
  cudaDeviceSynchronize S1 x1 at main (guard) line 0, address set
  cudaFree S6 x1 at main (guard) line 0, address set
outer S1 3 S2 1 S4 1 S6 1 S7 3
close outer: 9
again: -1; points of a closed guard: -1
main thread counts (7 classes): S1 3 S2 1 S3 0 S4 1 S5 0 S6 2 S7 3
END
diff -u "$tmp/expected" "$tmp/stdout" >&2 || fail "unexpected output of progs/guard"
one_db
# every call recorded as without a guard: both threads, the enqueues, the polling loop's queries
golden "SELECT class, sum(count) FROM calls GROUP BY class ORDER BY class" <<'END'
E1|1
E2|1
S1|4
S2|2
S4|1
S6|2
S7|3
X1|2
END
# the guard's native site is the database's: the same return address
golden "SELECT count(*) FROM api_calls c JOIN sites s ON s.text = c.site
	WHERE c.api = 'cudaDeviceSynchronize' AND s.symbol = 'sync_twice'" <<'END'
2
END
# without the shim, no guard: the program says so (exit 3)
"$PROGS/guard" >"$tmp/bare" 2>&1 && fail "guard ran without the shim"
[ "$(cat "$tmp/bare")" = "guard: the shim is not loaded" ] || fail "without the shim: $(cat "$tmp/bare")"
exit 0
