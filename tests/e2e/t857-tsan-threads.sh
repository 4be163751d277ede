#!/bin/sh
# SPDX-License-Identifier: MIT
# t857: the shim's threads under ThreadSanitizer: tests/sanitize.sh with SANITIZE=thread builds
# everything with `configure --enable-sanitizers=thread` in a build directory of its own and
# runs the tests whose programs keep several threads recording at once beside the writer
# (t030, t035, t211, t851, t852: the whole set is `make check-tsan`). It fails when any
# process reports a data race: before 1cd1b15 every one of them did (the ring region read by
# the writer without its publication, meta.cupti's text rewritten under a lock the writer did
# not take). Without DRIVER-5's SS_PRE_INIT on sigaction every program dies in TSan's start-up.
# Skipped where the compiler cannot build and run with -fsanitize=thread, and inside a
# sanitizer build's own run.
. "$E2E_DIR/lib.sh"
[ -z "${SANITIZER_PRELOAD:-}" ] || skip "this is a sanitizer build's own run (tests/sanitize.sh)"
cc=${CC:-cc}
printf '#include <pthread.h>\nstatic void *f(void *a) { return a; }\nint main(void) { pthread_t t; pthread_create(&t, 0, f, 0); return pthread_join(t, 0); }\n' >"$tmp/probe.c"
$cc -fsanitize=thread "$tmp/probe.c" -o "$tmp/probe" -lpthread >/dev/null 2>&1 && "$tmp/probe" ||
	skip "$cc cannot build and run with -fsanitize=thread (install libtsan)"
command -v autoreconf >/dev/null 2>&1 || fail "no autoreconf (the sanitizer tree is configured afresh)"
sanitizer_build_lock
build=$PWD/tsan-build
SANITIZE=thread CC=$cc SANITIZE_TESTS="e2e/t030-threads.sh e2e/t035-capture-triggers.sh \
e2e/t211-cupti-standin.sh e2e/t851-burst-threads.sh e2e/t852-many-threads.sh" \
	sh "$TOP_SRCDIR/tests/sanitize.sh" "$build" >"$tmp/summary" 2>&1
rc=$?
cat "$tmp/summary" >&2
[ $rc -eq 0 ] || fail "a data race under -fsanitize=thread (exit $rc; $build/summary.txt)"
# the five ran, and passed: native stacks off does not touch them
grep -q '^totals: 5 tests, 5 passed, 0 skipped, 0 failed, 0 errors$' "$tmp/summary" ||
	fail "the five tests did not all pass under TSan"
