#!/bin/sh
# SPDX-License-Identifier: MIT
# t004: docs/architecture.md stays the map of the code: every invariant the code cites
# (SHIM-n, SCHEMA-n, ...) has its entry there and every entry is cited; every "F<n>" fact cited
# as docs/architecture.md's exists; nothing cites the design notes outside the repository
# ("DESIGN.md"); no two tests share a number, and each number is in a range the page lists.
. "$E2E_DIR/lib.sh"
doc=$TOP_SRCDIR/docs/architecture.md
[ -f "$doc" ] || fail "no docs/architecture.md"
families='SHIM|CLOCK|SCHEMA|READ|CUPTI|DRIVER|ANALYSIS|STEPS|EXPORT|HTML|VIEW|DUMP|RUN|GUARD|SUMMARY'

# The sources and docs (by suffix: the build's own outputs and logs are not sources).
find "$TOP_SRCDIR" \( -name .git -o -name autom4te.cache -o -name demo-out -o -name results -o -name build-asan -o -name sanitize-build \) -prune -o \
	-type f \( -name '*.[ch]' -o -name '*.cc' -o -name '*.cu' -o -name '*.js' -o -name '*.sh' -o \
	-name '*.py' -o -name '*.md' -o -name '*.am' -o -name '*.map' -o -name '*.expect' -o \
	-name '*.html' -o -name '*.css' -o -name run \) -print | grep -v '/docs/architecture.md$' |
	sort >"$tmp/files"
[ "$(wc -l <"$tmp/files")" -ge 50 ] || fail "found only $(wc -l <"$tmp/files") source files"

xargs grep -ohE "\\b($families)-[0-9]+\\b" <"$tmp/files" | sort -u >"$tmp/cited"
sed -nE "s/^- \\*\\*(($families)-[0-9]+)\\*\\*.*/\\1/p" "$doc" | sort >"$tmp/listed"
[ -s "$tmp/cited" ] && [ -s "$tmp/listed" ] || fail "no invariants found"
comm -23 "$tmp/cited" "$tmp/listed" >"$tmp/missing"
[ ! -s "$tmp/missing" ] || fail "invariants cited in the code but not in docs/architecture.md: $(tr '\n' ' ' <"$tmp/missing")"
comm -13 "$tmp/cited" "$tmp/listed" >"$tmp/stale"
[ ! -s "$tmp/stale" ] || fail "invariants in docs/architecture.md that no code cites: $(tr '\n' ' ' <"$tmp/stale")"
[ -z "$(uniq -d "$tmp/listed")" ] || fail "invariants listed twice: $(uniq -d "$tmp/listed")"

# Facts: "architecture.md F<n>" (also "F<n>, F<m>") must name an F<n> the page defines.
xargs grep -ohE 'architecture\.md,? F[0-9]+(, F[0-9]+)*' <"$tmp/files" | grep -oE 'F[0-9]+' |
	sort -u >"$tmp/facts"
[ -s "$tmp/facts" ] || fail "no file cites a fact of docs/architecture.md"
while read -r f; do
	grep -q "^- \\*\\*$f\\*\\* " "$doc" || fail "$f is cited but docs/architecture.md has no $f"
done <"$tmp/facts"

# Nothing points outside the repository.
# (This file names it, to look for it.)
if grep -v '/t004-architecture-doc\.sh$' "$tmp/files" | xargs grep -l 'DESIGN\.md' >"$tmp/design"; then
	fail "files still cite DESIGN.md: $(tr '\n' ' ' <"$tmp/design")"
fi

# Test numbers: unique, and each inside a range of the page's table (| tAAA-tBBB | ... |).
ls "$E2E_DIR" | sed -n 's/^t\([0-9][0-9][0-9]\)-.*\.sh$/\1/p' | sort >"$tmp/numbers"
[ -z "$(uniq -d "$tmp/numbers")" ] || fail "tests share a number: $(uniq -d "$tmp/numbers" | tr '\n' ' ')"
sed -n 's/^| t\([0-9]*\)-t\([0-9]*\) |.*/\1 \2/p' "$doc" >"$tmp/ranges"
[ -s "$tmp/ranges" ] || fail "no test-number ranges in docs/architecture.md"
while read -r n; do
	awk -v n="$n" '$1 + 0 <= n + 0 && n + 0 <= $2 + 0 { found = 1 } END { exit !found }' "$tmp/ranges" ||
		fail "t$n is in no range of docs/architecture.md's test table"
done <"$tmp/numbers"
