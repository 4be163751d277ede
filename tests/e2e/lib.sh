# SPDX-License-Identifier: MIT
# tests/e2e/lib.sh: what every e2e test shares. Sourced, never run.
#
# Environment (set by tests/Makefile.am): SHIM, SYNCSPY, PROGS, STANDIN_DIR, SQLITE3, PYTHON3,
# NM, CUDA_LIBDIR, TOP_SRCDIR, E2E_DIR. Each test gets a fresh $tmp, removed at exit, with the
# shim's output directory in $out.
#
#   under_shim CMD...     runs CMD with the shim preloaded, writing into $out
#   one_db                the one database in $out (fails the test if there is not exactly one)
#   q SQL                 runs SQL on $db
#   golden SQL <<EOF      compares q SQL's output with the here-document (the expected output)
#   fail MESSAGE          fails the test
#   bad MESSAGE           records a failure and goes on (tests of many cases); finish ends
#                         the test: failed if any bad was recorded
#   $make_db              tests/fixtures/make-db.sh (a hand-built database)
#   skip MESSAGE          skips it (exit 77: counted as skipped, never as passed)
#   usage_error MESSAGE FILE CMD...
#                         runs CMD, a usage error: bad unless it exits 2 with MESSAGE alone on
#                         stderr and FILE (what CMD would have written) does not exist
#   sanitizer_build_lock  holds the tests' one sanitizer-build lock until the test ends
set -u

tmp=$(mktemp -d "${TMPDIR:-/tmp}/syncspy-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
out=$tmp/out
db=

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

skip() {
	echo "SKIP: $*" >&2
	exit 77
}

# t856 and t857 build a sanitizer tree each: one after the other, never side by side (two at
# once on a small machine slow the timing-bound tests inside each until they fail). The lock
# is held on descriptor 9 until the test exits.
sanitizer_build_lock() {
	command -v flock >/dev/null 2>&1 || return 0
	exec 9>"$PWD/sanitizer-builds.lock" && flock 9 || fail "cannot take $PWD/sanitizer-builds.lock"
}

failures=0
bad() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

usage_error() {
	expected=$1 absent=$2
	shift 2
	rm -f "$absent"
	"$@" 2>"$tmp/usage.err"
	rc=$?
	[ $rc -eq 2 ] || bad "$*: exit $rc, not 2"
	[ "$(cat "$tmp/usage.err")" = "$expected" ] || bad "$*: message '$(cat "$tmp/usage.err")', not '$expected'"
	[ ! -e "$absent" ] || bad "$*: $absent was written"
}

finish() {
	[ "$failures" = 0 ] || exit 1
	echo "PASS"
	exit 0
}

make_db=$TOP_SRCDIR/tests/fixtures/make-db.sh

# What LD_PRELOAD names to load the shim: in a sanitizer build (configure --enable-sanitizers,
# tests/sanitize.sh) the sanitizer runtime first, as a program not built with it needs.
SHIM_PRELOAD=${SANITIZER_PRELOAD:+$SANITIZER_PRELOAD:}$SHIM

under_shim() {
	env LD_PRELOAD="$SHIM_PRELOAD" SYNCSPY_OUTPUT="$out" "$@"
}

one_db() {
	set -- "$out"/*.sqlite
	[ $# -eq 1 ] && [ -f "$1" ] || fail "expected one database in $out, found: $(ls "$out" 2>&1)"
	db=$1
}

q() {
	"$SQLITE3" -batch "$db" "$@"
}

# rq SQL: a query on no database (for readfile() and the JSON functions on a report).
rq() {
	"$SQLITE3" -batch :memory: "$1"
}

golden() {
	q "$1" >"$tmp/actual" || fail "query failed: $1"
	cat >"$tmp/expected"
	diff -u "$tmp/expected" "$tmp/actual" >&2 || fail "unexpected result of: $1"
}

# The stand-in driver is found as the real one is: in the library path (libcudart dlopens it).
LD_LIBRARY_PATH=$STANDIN_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH

[ -n "${SQLITE3:-}" ] || skip "no sqlite3 command (install the sqlite3 package)"
