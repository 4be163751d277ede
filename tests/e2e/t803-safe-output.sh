#!/bin/sh
# SPDX-License-Identifier: MIT
# tests/e2e/t803-safe-output.sh: how report -o, export -o and check --junit write (issue 18,
# item 10; report/outfile.h, docs/cli.md "Output files"): a regular file is replaced whole (a
# new inode, its permissions kept) and a failed command leaves it as it was; a symlink to one
# keeps the link and replaces its target; a character device or a FIFO is written through (it
# stays a device: export used to rename a regular file over it); a directory or a dangling
# symlink is refused (exit 2).
#
# env: as tests/e2e/lib.sh says. Exit 0 pass, 1 fail.

. "$E2E_DIR/lib.sh"
sh "$make_db" "$tmp/good.sqlite" || { echo "FAIL: make-db.sh"; exit 1; }
echo '{"version": 1, "limits": [{"max_count": 1000}]}' >"$tmp/budget.json"

# write WHAT PATH: one command writing PATH
write() {
	case $1 in
	report) "$SYNCSPY" report -o "$2" "$tmp/good.sqlite" ;;
	html) "$SYNCSPY" report --format html -o "$2" "$tmp/good.sqlite" ;;
	export) "$SYNCSPY" export -o "$2" "$tmp/good.sqlite" ;;
	junit) "$SYNCSPY" check --budget "$tmp/budget.json" --junit "$2" "$tmp/good.sqlite" ;;
	esac
}

for what in report html export junit; do
	# a regular file: replaced by a new one (rename), permissions kept, no temporary left
	echo old >"$tmp/$what.out"
	chmod 640 "$tmp/$what.out"
	before=$(ls -i "$tmp/$what.out" | cut -d' ' -f1)
	write $what "$tmp/$what.out" >/dev/null 2>&1 || bad "$what -o a regular file"
	after=$(ls -i "$tmp/$what.out" | cut -d' ' -f1)
	[ "$before" != "$after" ] || bad "$what: the regular file was written in place, not replaced"
	grep -q '^old$' "$tmp/$what.out" && bad "$what: the old content is still there"
	[ "$(stat -c %a "$tmp/$what.out")" = 640 ] || bad "$what: permissions $(stat -c %a "$tmp/$what.out")"
	ls "$tmp" | grep -q '\.tmp\.' && bad "$what: a temporary file was left: $(ls "$tmp")"

	# a symlink to a regular file: the link stays, its target is replaced
	echo old >"$tmp/$what.target"
	ln -s "$what.target" "$tmp/$what.link"
	write $what "$tmp/$what.link" >/dev/null 2>&1 || bad "$what -o a symlink"
	[ -L "$tmp/$what.link" ] || bad "$what: the symlink was replaced by a file"
	grep -q '^old$' "$tmp/$what.target" && bad "$what: the symlink's target was not written"

	# a character device and a symlink to one: written through, still a device
	ln -s /dev/null "$tmp/$what.null"
	write $what "$tmp/$what.null" >/dev/null 2>&1 || bad "$what -o a symlink to /dev/null"
	[ -L "$tmp/$what.null" ] || bad "$what: the symlink to /dev/null was replaced"
	[ -c /dev/null ] || bad "$what: /dev/null is no longer a character device"
	write $what /dev/null >/dev/null 2>&1 || bad "$what -o /dev/null"

	# a FIFO: written through (read at the other end)
	mkfifo "$tmp/$what.fifo"
	cat "$tmp/$what.fifo" >"$tmp/$what.fromfifo" &
	write $what "$tmp/$what.fifo" >/dev/null 2>&1 || bad "$what -o a FIFO"
	wait
	[ -p "$tmp/$what.fifo" ] || bad "$what: the FIFO was replaced"
	[ -s "$tmp/$what.fromfifo" ] || bad "$what: nothing came through the FIFO"

	# refused: a directory, a symlink to nothing
	mkdir "$tmp/$what.dir"
	write $what "$tmp/$what.dir" >/dev/null 2>"$tmp/err"
	[ $? = 2 ] && grep -q "a directory: not written" "$tmp/err" ||
		bad "$what -o a directory: $(cat "$tmp/err")"
	ln -s "$tmp/nothing" "$tmp/$what.dangling"
	write $what "$tmp/$what.dangling" >/dev/null 2>"$tmp/err"
	[ $? = 2 ] && grep -q "a symbolic link to nothing: not written" "$tmp/err" ||
		bad "$what -o a dangling symlink: $(cat "$tmp/err")"
	[ -e "$tmp/nothing" ] && bad "$what: the dangling symlink's target was created"
done

# A failed report leaves the old file as it was.
echo old >"$tmp/kept.txt"
: >"$tmp/empty.sqlite"
"$SYNCSPY" report -o "$tmp/kept.txt" "$tmp/empty.sqlite" >/dev/null 2>&1
grep -q '^old$' "$tmp/kept.txt" || bad "a failed report changed its output file"

finish
