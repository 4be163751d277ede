#!/bin/sh
# SPDX-License-Identifier: MIT
# t856: the e2e suite under AddressSanitizer and UBSan (issue 18 item 14): tests/sanitize.sh
# builds everything with `configure --enable-sanitizers` in a build directory of its own and
# runs `make check` there, the sanitized shim preloaded (after the sanitizer runtime) into the
# test programs, sh, python3 and sqlite3. It fails when a test fails there (one that failed with
# no sanitizer report anywhere runs once more alone, and is named in the summary: the slowed
# programs beside the plain suite can miss a stand-in's timing margin) or any process writes a
# sanitizer report; without DRIVER-5 (interpose/driver.c) every program under the shim
# dies in ASan's start-up. Skipped only where the compiler cannot build with the sanitizers, and
# inside that run itself. The fuzzers run 5 s each there (SYNCSPY_FUZZ_SECONDS).
. "$E2E_DIR/lib.sh"
[ -z "${SANITIZER_PRELOAD:-}" ] || skip "this is the sanitizer build's own run (tests/sanitize.sh)"
cc=${CC:-cc}
printf 'int main(void) { return 0; }\n' >"$tmp/probe.c"
$cc -fsanitize=address,undefined "$tmp/probe.c" -o "$tmp/probe" >/dev/null 2>&1 && "$tmp/probe" ||
	skip "$cc cannot build and run with -fsanitize=address,undefined (install libasan and libubsan)"
command -v autoreconf >/dev/null 2>&1 || fail "no autoreconf (the sanitizer tree is configured afresh)"
sanitizer_build_lock
build=$PWD/sanitize-build
SYNCSPY_FUZZ_SECONDS=5 CC=$cc sh "$TOP_SRCDIR/tests/sanitize.sh" "$build" >"$tmp/summary" 2>&1
rc=$?
cat "$tmp/summary" >&2
[ $rc -eq 0 ] || fail "the suite under -fsanitize=address,undefined failed (exit $rc; $build/summary.txt)"
grep -q '^totals: .* 0 failed, 0 errors$' "$tmp/summary" || fail "no totals line"
