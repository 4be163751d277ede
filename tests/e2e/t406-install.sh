#!/bin/sh
# SPDX-License-Identifier: MIT
# t406: `make install DESTDIR=...` from the build tree installs a tool (Makefile.am): the
# binary and libsyncspy.so, the manual page syncspy(1), bash completion, the documentation under
# $(docdir) and the example budgets under $(pkgdatadir)/budgets, as the same files as the tree's.
# The manual page names every subcommand `syncspy help` lists and renders with `man -l` (where
# man is installed; else groff checks it; with neither, the render part is skipped, said on
# stderr); the completion is valid bash and completes the subcommands.
. "$E2E_DIR/lib.sh"
build=$(cd "$(dirname "$SYNCSPY")/.." && pwd) || fail "no build tree"
[ -f "$build/Makefile" ] || skip "no build tree beside $SYNCSPY"
dest=$tmp/dest
# a make of its own: not the jobserver or variables of the make running the tests
(unset MAKEFLAGS MFLAGS MAKELEVEL; make -s -C "$build" install DESTDIR="$dest" prefix=/usr/local) \
	>"$tmp/install.log" 2>&1 || fail "make install failed: $(tail -20 "$tmp/install.log")"
p=$dest/usr/local
for f in bin/syncspy lib/libsyncspy.so share/man/man1/syncspy.1 \
	share/bash-completion/completions/syncspy share/doc/syncspy/cli.md share/doc/syncspy/budget.md \
	share/doc/syncspy/diff.md share/doc/syncspy/rules.md share/doc/syncspy/report-json.md \
	share/doc/syncspy/README.md share/doc/syncspy/LICENSE share/syncspy/budgets/README.md include/syncspy/syncspy.h; do
	[ -f "$p/$f" ] || fail "not installed: $f ($(cd "$dest" && find . -type f | sort | head -50))"
done
n=0
for b in "$TOP_SRCDIR"/examples/budgets/*.json; do
	cmp -s "$b" "$p/share/syncspy/budgets/$(basename "$b")" || fail "budget $(basename "$b") not installed as is"
	n=$((n + 1))
done
[ $n -ge 13 ] || fail "only $n example budgets"
cmp -s "$TOP_SRCDIR/include/syncspy/syncspy.h" "$p/include/syncspy/syncspy.h" || fail "header differs"
# the installed header is usable as is, from C and C++, and names only what the shim exports
printf '#include <syncspy/syncspy.h>\nint main(void) { syncspy_step("s"); return syncspy_gpu_trace(1); }\n' >"$tmp/use.c"
${CC:-cc} -I"$p/include" -c -o "$tmp/use.o" "$tmp/use.c" 2>"$tmp/cc.err" || fail "header does not compile: $(cat "$tmp/cc.err")"
if command -v c++ >/dev/null 2>&1; then
	c++ -x c++ -I"$p/include" -c -o "$tmp/use2.o" "$tmp/use.c" 2>"$tmp/cxx.err" || fail "header does not compile as C++: $(cat "$tmp/cxx.err")"
fi
sed -n 's/^[a-z].* \**\(syncspy_[a-z_]*\)(.*/\1/p' "$p/include/syncspy/syncspy.h" >"$tmp/declared"
[ -s "$tmp/declared" ] || fail "no function found in syncspy.h"
nm -D --defined-only "$p/lib/libsyncspy.so" | awk '{print $3}' >"$tmp/exported"
while read -r f; do grep -qx "$f" "$tmp/exported" || fail "syncspy.h declares $f, libsyncspy.so does not export it"; done <"$tmp/declared"
cmp -s "$TOP_SRCDIR/docs/syncspy.1" "$p/share/man/man1/syncspy.1" || fail "man page differs"
"$p/bin/syncspy" --version >/dev/null || fail "the installed syncspy does not run"

# every subcommand of `syncspy help` has its entry in the manual page
man=$TOP_SRCDIR/docs/syncspy.1
"$SYNCSPY" help | sed -n 's/^  \([a-z][a-z]*\) .*/\1/p' >"$tmp/commands"
[ "$(wc -l <"$tmp/commands")" -ge 10 ] || fail "syncspy help lists: $(cat "$tmp/commands")"
while read -r c; do
	grep -q "^\.BR $c\( \|$\)" "$man" || fail "syncspy.1 has no entry for '$c'"
	grep -qw "$c" "$p/share/bash-completion/completions/syncspy" || fail "completion lacks '$c'"
done <"$tmp/commands"
for section in NAME SYNOPSIS DESCRIPTION COMMANDS OPTIONS "EXIT STATUS" ENVIRONMENT FILES "SEE ALSO"; do
	grep -q "^\.SH \"*$section\"*$" "$man" || fail "syncspy.1 has no $section section"
done

if command -v bash >/dev/null 2>&1; then
	bash -n "$p/share/bash-completion/completions/syncspy" || fail "completion: not valid bash"
	got=$(bash -c '. "$1"; COMP_WORDS=(syncspy di); COMP_CWORD=1; _syncspy; echo "${COMPREPLY[*]}"
		COMP_WORDS=(syncspy report --format ""); COMP_CWORD=3; _syncspy; echo "${COMPREPLY[*]}"' \
		sh "$p/share/bash-completion/completions/syncspy") || fail "completion failed"
	[ "$got" = "diff
text json html" ] || fail "completion: $got"
fi

if command -v man >/dev/null 2>&1; then
	MANWIDTH=100 man -l "$p/share/man/man1/syncspy.1" >"$tmp/man.txt" 2>"$tmp/man.err" ||
		fail "man -l failed: $(cat "$tmp/man.err")"
	grep -q '^SYNCSPY(1)' "$tmp/man.txt" || fail "man -l: $(head -5 "$tmp/man.txt")"
	grep -Eq '^ +diff +\[--format +text\|json\|html\]' "$tmp/man.txt" || fail "man -l: no diff entry"
elif command -v groff >/dev/null 2>&1; then
	groff -man -ww -z "$man" 2>"$tmp/groff.err" || fail "groff: $(cat "$tmp/groff.err")"
	[ -s "$tmp/groff.err" ] && fail "groff warnings: $(cat "$tmp/groff.err")"
else
	echo "t406: neither man nor groff installed: the manual page's rendering is not checked" >&2
fi
exit 0
