# SPDX-License-Identifier: MIT
# tests/e2e/fuzz-lib.sh: what t807 and t808 share. Sourced after lib.sh, never run.
#
#   fuzz TARGET   runs the fuzz target TARGET of tests/fuzz/targets.c from its committed corpus
#                 (tests/fuzz/corpus/TARGET): with libFuzzer (FUZZ_MODE=libfuzzer), seed 1,
#                 SYNCSPY_FUZZ_RUNS inputs (default 400: the same inputs on every machine, so
#                 that CI does not fail on what a faster machine happened to reach) within
#                 SYNCSPY_FUZZ_SECONDS (default 20, a cap), else (no clang) replaying the
#                 corpus once. Longer fuzzing: SYNCSPY_FUZZ_RUNS=-1 and more seconds. A crash, a sanitizer report or an abort fails the test, with the
#                 input that did it kept in tests/fuzz-artifacts/ of the build directory.
fuzz() {
	[ -x "${FUZZ:-}" ] || fail "no fuzz program (FUZZ=${FUZZ:-}): make check builds it"
	sh "$TOP_SRCDIR/tests/fixtures/make-db.sh" "$tmp/template.sqlite" >/dev/null ||
		fail "make-db.sh failed"
	seeds=$TOP_SRCDIR/tests/fuzz/corpus/$1
	mkdir "$tmp/corpus" "$tmp/work" || fail "mkdir"
	artifacts=$PWD/fuzz-artifacts/$1
	mkdir -p "$artifacts" || fail "mkdir $artifacts"
	export SYNCSPY_FUZZ_TARGET=$1 SYNCSPY_FUZZ_TEMPLATE=$tmp/template.sqlite \
		SYNCSPY_FUZZ_WORKDIR=$tmp/work
	case $FUZZ_MODE in
	libfuzzer)
		# -error_exitcode: libFuzzer's default, 77, would read as a skip
		"$FUZZ" \
			-seed=1 -runs="${SYNCSPY_FUZZ_RUNS:-400}" \
			-max_total_time="${SYNCSPY_FUZZ_SECONDS:-20}" -timeout=20 -rss_limit_mb=2048 \
			-error_exitcode=1 -timeout_exitcode=1 -print_final_stats=1 \
			-artifact_prefix="$artifacts/" "$tmp/corpus" "$seeds" >"$tmp/log" 2>&1
		;;
	*) "$FUZZ" "$seeds" >"$tmp/log" 2>&1 ;;
	esac
	rc=$?
	tail -n 40 "$tmp/log" >&2
	[ $rc -eq 0 ] || fail "fuzz target $1 ($FUZZ_MODE) exited $rc; inputs kept in $artifacts"
	echo "fuzz target $1 ($FUZZ_MODE): ok"
}
