#!/bin/sh
# SPDX-License-Identifier: MIT
# t005: every rule is one file, one table line and one section of docs/rules.md
# (docs/architecture.md, "Adding a rule"). A rule file missing from the table compiles and never
# runs; one missing from report/Makefile.am leaves the table's line unresolved only at link time
# of a fresh checkout. So: the sections of docs/rules.md that are rules, the files
# report/rules/NAME.c (NAME: the id with _ for -) and their .id, the X(NAME) lines of
# report/rules/registry.c and the RULES of report/Makefile.am name the same set.
. "$E2E_DIR/lib.sh"
rules=$TOP_SRCDIR/report/rules

# docs/rules.md: "## ID: what it finds", the sections marked "(not a rule)" left out.
sed -n 's/^## \([a-z0-9-]*\): .*/\1/p' "$TOP_SRCDIR/docs/rules.md" | sort -u >"$tmp/docs"
[ "$(wc -l <"$tmp/docs")" -ge 5 ] || fail "found only $(wc -l <"$tmp/docs") rules in docs/rules.md"

# The files and the id each one defines.
: >"$tmp/files"
for f in "$rules"/*.c; do
	name=$(basename "$f" .c)
	[ "$name" = registry ] && continue
	grep -q "^const struct ss_rule ss_rule_$name = {" "$f" || fail "$f defines no ss_rule_$name"
	id=$(sed -n 's/^ *\.id = "\([^"]*\)",$/\1/p' "$f")
	[ "$(echo "$id" | tr - _)" = "$name" ] || fail "$f: id '$id' is not its file name"
	grep -q '^ *\.phase = SS_RULE_[A-Z]*,$' "$f" || fail "$f: no phase"
	echo "$id" >>"$tmp/files"
done
sort -u -o "$tmp/files" "$tmp/files"

# The table and the build.
sed -n 's/^[[:space:]]*X(\([a-z0-9_]*\))[[:space:]]*\\*$/\1/p' "$rules/registry.c" | tr _ - |
	sort >"$tmp/table"
grep -o 'rules/[a-z0-9_]*\.c' "$TOP_SRCDIR/report/Makefile.am" | sed 's|rules/||; s|\.c$||' |
	grep -v '^registry$' | tr _ - | sort >"$tmp/build"

[ -z "$(uniq -d "$tmp/table")" ] || fail "listed twice in registry.c: $(uniq -d "$tmp/table")"
cmp -s "$tmp/docs" "$tmp/files" ||
	fail "docs/rules.md and report/rules/ differ: $(diff "$tmp/docs" "$tmp/files" | grep '^[<>]' | tr '\n' ' ')"
cmp -s "$tmp/files" "$tmp/table" ||
	fail "report/rules/ and registry.c's table differ: $(diff "$tmp/files" "$tmp/table" | grep '^[<>]' | tr '\n' ' ')"
cmp -s "$tmp/files" "$tmp/build" ||
	fail "report/rules/ and report/Makefile.am's RULES differ: $(diff "$tmp/files" "$tmp/build" | grep '^[<>]' | tr '\n' ' ')"
echo "$(wc -l <"$tmp/files") rules: one file, one table line, one section each"
