#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/sanitize.sh [BUILDDIR]: the e2e suite under AddressSanitizer and UBSan (issue 18 item 14).
#
# Builds the shim, the command, the stand-ins and the test programs with `configure
# --enable-sanitizers` in a build directory of its own (default build-asan/ beside the
# sources: a VPATH build; a source tree configured in place cannot host one, so the files git
# knows are copied to BUILDDIR/src first), runs `make check` there and prints a summary: each
# test's result, the reason of each test that cannot run under ASan (its SKIP line), and every
# sanitizer report, which the runtime writes to BUILDDIR/reports/ (log_path: a test that hides
# a child's stderr or exit status cannot hide a report). Exit 0 only when no test failed and
# no process reported an error. `make check-sanitize` runs it; the summary is also left in
# BUILDDIR/summary.txt.
set -u
unset MAKEFLAGS MFLAGS MAKELEVEL # a make of its own (t856 runs it inside `make check`)
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build-asan}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
mkdir -p "$build" || exit 2
build=$(cd "$build" && pwd)
start=$(date +%s)

src=$top
if [ -f "$top/config.status" ]; then
	src=$build/src
	rm -rf "$src" && mkdir -p "$src" || exit 2
	(cd "$top" && git ls-files -co --exclude-standard -z | xargs -0 cp --parents -t "$src") ||
		exit 2
	(cd "$src" && autoreconf -fi >/dev/null 2>&1) || {
		echo "sanitize: autoreconf failed in $src" >&2
		exit 2
	}
fi
obj=$build/obj
reports=$build/reports
rm -rf "$obj" "$reports" && mkdir -p "$obj" "$reports" || exit 2

cd "$obj" || exit 2
"$src/configure" --enable-sanitizers ${SANITIZE_CONFIGURE_ARGS:-} >"$build/configure.log" 2>&1 || {
	echo "sanitize: configure --enable-sanitizers failed (see $build/configure.log):" >&2
	tail -n 3 "$build/configure.log" >&2
	exit 2
}
make -j"$jobs" >"$build/make.log" 2>&1 || {
	echo "sanitize: the sanitizer build failed (see $build/make.log)" >&2
	tail -n 20 "$build/make.log" >&2
	exit 2
}
built=$(date +%s)

# Leaks are not checked: the programs the tests run (sh, python3, sqlite3) are not built with
# LeakSanitizer in mind, and the shim keeps its tables until the process ends by design.
ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:log_path=$reports/asan${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$reports/ubsan${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export ASAN_OPTIONS UBSAN_OPTIONS
make -j"$jobs" check ${SANITIZE_TESTS:+TESTS="$SANITIZE_TESTS"} >"$build/check.log" 2>&1
check_rc=$?
end=$(date +%s)

{
	echo "syncspy e2e suite under -fsanitize=address,undefined ($(date -u +%Y-%m-%d))"
	echo "commit: $(cd "$top" && git rev-parse --short HEAD 2>/dev/null)$(cd "$top" && git diff --quiet HEAD 2>/dev/null || echo ' (with local changes)')"
	echo "compiler: $(sed -n 's/^CC = //p' "$obj/Makefile") ($($(sed -n 's/^CC = //p' "$obj/Makefile") --version | head -n 1))"
	echo "runtime preloaded for programs not built with it: $(sed -n 's/^SANITIZER_PRELOAD = //p' "$obj/Makefile")"
	echo "host: $(nproc) cores; build $((built - start)) s, make check $((end - built)) s (-j$jobs)"
	echo
	for trs in $(find "$obj/tests" -name '*.trs' | sort); do
		name=${trs#"$obj"/tests/}
		name=${name%.trs}
		result=$(sed -n 's/^:test-result: //p' "$trs")
		case $result in
		SKIP) echo "$result $name: $(grep -h '^SKIP: ' "${trs%.trs}.log" | head -n 1 | cut -c7-)" ;;
		PASS) echo "$result $name" ;;
		*) echo "$result $name: $(grep -h '^FAIL' "${trs%.trs}.log" | head -n 1)" ;;
		esac
	done
	echo
	grep -h '^# \(TOTAL\|PASS\|SKIP\|XFAIL\|FAIL\|XPASS\|ERROR\)' "$obj/tests/test-suite.log" \
		"$obj/tests/standin/test-suite.log" 2>/dev/null | awk '{ n[$2] += $3 } END {
		printf "totals: %d tests, %d passed, %d skipped, %d failed, %d errors\n",
			n["TOTAL:"], n["PASS:"], n["SKIP:"], n["FAIL:"] + n["XPASS:"], n["ERROR:"] }'
	n=$(ls "$reports" | wc -l)
	echo "sanitizer reports: $n"
	for f in "$reports"/*; do
		[ -f "$f" ] || continue
		echo "--- $(basename "$f"):"
		grep -m 3 -E 'ERROR: |runtime error|SUMMARY: ' "$f"
	done
} >"$build/summary.txt"
cat "$build/summary.txt"
[ $check_rc -eq 0 ] && [ -z "$(ls "$reports")" ]
