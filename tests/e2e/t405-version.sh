#!/bin/sh
# SPDX-License-Identifier: MIT
# t405: `syncspy --version` (and -V) names the version, the git commit of a git build
# (`git describe --always --dirty` of the source tree when it has .git, captured by make:
# report/Makefile.am's git_version.h) or "release", the schema version and the SQLite: one line
# on stdout, exit 0. In a git checkout, the commit is the source tree's HEAD.
. "$E2E_DIR/lib.sh"
cd "$tmp" || fail "cd"
"$SYNCSPY" --version >out 2>err || fail "exit $?"
[ -s err ] && fail "stderr: $(cat err)"
[ "$(wc -l <out)" -eq 1 ] || fail "not one line: $(cat out)"
"$SYNCSPY" -V >out2 2>&1 || fail "-V: exit $?"
cmp -s out out2 || fail "-V differs from --version"
version=$(sed -n 's/^AC_INIT(\[syncspy\], \[\([^]]*\)\].*/\1/p' "$TOP_SRCDIR/configure.ac")
[ -n "$version" ] || fail "no version in configure.ac"
grep -Eq "^syncspy $version \((git [0-9A-Za-z._-]+|release); database schema version [0-9]+, SQLite [0-9.]+\)$" out ||
	fail "unexpected: $(cat out)"
if [ -e "$TOP_SRCDIR/.git" ] && command -v git >/dev/null 2>&1 &&
	head=$(cd "$TOP_SRCDIR" && git describe --always 2>/dev/null) && [ -n "$head" ]; then
	grep -Eq "^syncspy $version \(git $head(-dirty)?;" out ||
		fail "a git build must name its commit $head: $(cat out)"
else
	grep -q "^syncspy $version (release;" out || fail "a build without .git must say release: $(cat out)"
fi
exit 0
