#!/bin/sh
# SPDX-License-Identifier: MIT
# t407: the output formats are one table (report/formats.c, formats.h) and everything that
# names them agrees with it, as t005 holds the rules to theirs. For each command that takes
# --format from the table (report, export, diff), the formats it offers, in the table's order,
# are what `syncspy help formats` lists, what its help's synopsis and --format line say, what
# its message for an unknown format names, what the bash completion offers after --format, and
# what the manual page and docs/cli.md write in its synopsis. Each format works where it is
# offered (a file of its extension's kind: .json parses, .html is a page, .txt is text) and is
# refused where it is not (exit 2); a command's default is the first it offers.
. "$E2E_DIR/lib.sh"
[ -n "${PYTHON3:-}" ] || skip "no python3"
src=$TOP_SRCDIR
sh "$make_db" "$tmp/a.sqlite" >/dev/null || fail "make-db.sh"
"$SYNCSPY" help formats >"$tmp/help" || fail "help formats: exit $?"

# The table as report/formats.c writes it, checked against `help formats`; then one line per
# command: CMD|NAMES|a|b|c|"a, b or c"|"a (default), b or c".
"$PYTHON3" - "$src/report/formats.c" "$tmp/help" >"$tmp/commands" <<'PY' || fail "the table"
import re, sys
src = open(sys.argv[1]).read()
body = re.search(r"^const struct ss_format ss_formats\[\] = \{(.*?)^\};", src, re.S | re.M).group(1)
rows = []
for entry in re.findall(r"\{(.*?)\n    \}", body, re.S):
    name = re.search(r'\.name = "([^"]+)"', entry).group(1)
    ext = re.search(r'\.extension = "([^"]+)"', entry).group(1)
    cmds = [c for c in ("report", "export", "diff") if re.search(r"\.%s = &" % c, entry)]
    rows.append((name, ext, cmds))
assert len(rows) >= 4, rows
assert len({r[0] for r in rows}) == len(rows), "a format is in the table twice"
listed = []
for line in open(sys.argv[2]).read().splitlines():
    m = re.match(r"^  ([a-z0-9]+) +\.([a-z]+) +((?:report|export|diff)(?: (?:report|export|diff))*) +\S", line)
    if m:
        listed.append((m.group(1), m.group(2), m.group(3).split()))
assert listed == rows, ("help formats", listed, "table", rows)
def words(names, suffix=""):
    names = [names[0] + suffix] + names[1:]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
for cmd in ("report", "export", "diff"):
    names = [r[0] for r in rows if cmd in r[2]]
    exts = [r[1] for r in rows if cmd in r[2]]
    assert names, cmd + " offers no format"
    print("|".join([cmd, " ".join(names), " ".join(exts), "|".join(names), words(names), words(names, " (default)")]))
others = sorted({r[0] for r in rows})
print("ALL|" + " ".join(others))
PY
all=$(sed -n 's/^ALL|//p' "$tmp/commands")

completion=$src/share/bash-completion/completions/syncspy
man=$src/docs/syncspy.1
while IFS='|' read -r cmd names exts rest; do
	[ "$cmd" = ALL ] && continue
	bar=$(echo "$rest" | sed 's/|\([^|]*\)|\([^|]*\)$//')
	list=$(echo "$rest" | sed 's/^.*|\([^|]*\)|[^|]*$/\1/')
	choices=$(echo "$rest" | sed 's/^.*|//')
	case $cmd in
	diff) set -- "$tmp/a.sqlite" "$tmp/a.sqlite" ;;
	*) set -- "$tmp/a.sqlite" ;;
	esac

	# help: the synopsis and the --format line
	"$SYNCSPY" help "$cmd" >"$tmp/h" || fail "help $cmd"
	grep -qF "usage: syncspy $cmd [--format $bar]" "$tmp/h" || fail "help $cmd: synopsis: $(head -1 "$tmp/h")"
	grep -q -- "^  --format F  *$choices: " "$tmp/h" || fail "help $cmd: the --format line does not say '$choices': $(grep -- --format "$tmp/h")"

	# each format offered works and writes what its extension says
	i=0
	for f in $names; do
		i=$((i + 1))
		ext=$(echo $exts | cut -d' ' -f$i)
		out=$tmp/$cmd.$f.$ext
		"$SYNCSPY" "$cmd" --format "$f" -o "$out" "$@" >/dev/null 2>"$tmp/err" || fail "$cmd --format $f: exit $?: $(cat "$tmp/err")"
		"$PYTHON3" - "$out" "$ext" <<'PY' || fail "$cmd --format $f: not a .$ext file"
import json, sys
text = open(sys.argv[1], "rb").read().decode("utf-8")
assert text and "\0" not in text
if sys.argv[2] == "json":
    json.loads(text)
elif sys.argv[2] == "html":
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>"), text[:40]
else:
    assert sys.argv[2] == "txt" and not text.lstrip().startswith(("{", "[", "<")), text[:40]
PY
		[ $i -eq 1 ] && first_out=$out
	done
	# the default is the first
	"$SYNCSPY" "$cmd" -o "$tmp/default" "$@" >/dev/null 2>&1 || fail "$cmd without --format: exit $?"
	cmp -s "$tmp/default" "$first_out" || fail "$cmd: the default is not $(echo $names | cut -d' ' -f1)"

	# an unknown format, and every format of the table the command does not offer
	for bad in no-such $all; do
		echo " $names " | grep -q " $bad " && continue
		"$SYNCSPY" "$cmd" --format "$bad" -o "$tmp/x" "$@" >/dev/null 2>"$tmp/err"
		code=$?
		[ $code -eq 2 ] || fail "$cmd --format $bad: exit $code, want 2"
		grep -qxF "syncspy: $cmd: unknown format '$bad' ($list)" "$tmp/err" ||
			fail "$cmd --format $bad: $(cat "$tmp/err") (want the formats: $list)"
		[ -e "$tmp/x" ] && fail "$cmd --format $bad wrote -o FILE"
	done

	# the completion after --format, the manual page, docs/cli.md
	if command -v bash >/dev/null 2>&1; then
		got=$(bash -c '. "$1"; COMP_WORDS=(syncspy "$2" --format ""); COMP_CWORD=3; _syncspy; echo "${COMPREPLY[*]}"' \
			sh "$completion" "$cmd") || fail "completion failed"
		[ "$got" = "$names" ] || fail "completion of $cmd --format: '$got', want '$names'"
	fi
	grep -qF ".BR $cmd \" [\" \\-\\-format \" $bar]" "$man" || fail "syncspy.1: $cmd's synopsis does not say --format $bar"
	grep -qF "    syncspy $cmd [--format $bar]" "$src/docs/cli.md" || fail "docs/cli.md: $cmd's synopsis does not say --format $bar"
	grep -qF "| \`$cmd [--format $(echo "$bar" | sed 's/|/\\|/g')]" "$src/docs/cli.md" || fail "docs/cli.md: $cmd's row does not say --format $bar"
done <"$tmp/commands"
echo "$(echo $all | wc -w) formats, one table"
