#!/bin/sh
# SPDX-License-Identifier: MIT
# t226: a sync point reached through Thrust's or CUB's functions compiled into the program
# (templates instantiated in the user's binary, frames of their own) is named by the program's
# line that called into them, not by a line inside them (interpose/elfsyms.c, ELFSYMS-1: the
# module's .symtab names them thrust:: and cub::). tests/progs/thrust_frames.cc allocates
# through thrust::detail::temporary_allocate and syncs through cub::SyncStream every step:
# alloc-in-loop names the @site thrust-alloc line of main, the sync's finding @site cub-sync;
# before ELFSYMS-1 both named lines inside the namespaces' functions (the corpus' c27 on the
# H200: count_if's temporary allocations named inside Thrust). And where no user frame is near:
# tests/progs/static_launch.c `library` launches through its static runtime from 16 frames of a
# Thrust-named function; the launch rows name the library's launching line (LAUNCH-LIBRARY),
# not the runtime's frame that called the driver (a path keeps 12 frames: NATIVE-1).
. "$E2E_DIR/lib.sh"
src="$TOP_SRCDIR/tests/progs/thrust_frames.cc"
under_shim "$PROGS/thrust_frames" >"$tmp/stdout" 2>&1 || fail "program failed: $(cat "$tmp/stdout")"
one_db
"$SYNCSPY" report --format json "$db" >"$tmp/r.json" || fail "report failed"
site_of() { # RULE LINE: the site of its finding at main's LINE, else of its first one (the
	# loop's cudaFree is an alloc-in-loop finding too, at its own line of main: which of the two
	# costs more per step depends on the machine's load)
	rq "SELECT json_extract(value, '\$.site') FROM json_each(json_extract(readfile('$tmp/r.json'), '\$.findings'))
		WHERE json_extract(value, '\$.rule') = '$1'
		ORDER BY json_extract(value, '\$.site') NOT LIKE '%/progs/thrust_frames.cc:$2 in main' LIMIT 1"
}
# no finding names a line inside Thrust's or CUB's functions
[ "$(rq "SELECT count(*) FROM json_each(json_extract(readfile('$tmp/r.json'), '\$.findings'))
	WHERE json_extract(value, '\$.site') NOT LIKE '%/progs/thrust_frames.cc:% in main'")" = 0 ] ||
	fail "findings inside the libraries: $(rq "SELECT group_concat(json_extract(value, '\$.rule') || ' ' || json_extract(value, '\$.site'), '; ') FROM json_each(json_extract(readfile('$tmp/r.json'), '\$.findings'))")"
for pair in alloc-in-loop:thrust-alloc host-sync:cub-sync; do
	rule=${pair%%:*} mark=${pair#*:}
	line=$(grep -n "@site $mark\$" "$src" | cut -d: -f1)
	site=$(site_of "$rule" "$line")
	case $site in
	*/progs/thrust_frames.cc:"$line in main") ;;
	*) fail "$rule: site '$site', want thrust_frames.cc:$line in main (findings: $(rq "SELECT group_concat(json_extract(value, '\$.rule') || ' ' || json_extract(value, '\$.site'), '; ') FROM json_each(json_extract(readfile('$tmp/r.json'), '\$.findings'))"))" ;;
	esac
done

under_shim "$PROGS/static_launch" library >"$tmp/stdout" 2>&1 || fail "static_launch library failed: $(cat "$tmp/stdout")"
rm -f "$db"
one_db
command -v addr2line >/dev/null 2>&1 || skip "no addr2line"
offsets=$(q "SELECT DISTINCT printf('%x', s.module_offset - 1) FROM calls c JOIN sites s ON s.id = c.site_id
	WHERE c.class = 'E1'")
[ "$(echo "$offsets" | wc -l)" = 1 ] || fail "library launches: sites $offsets"
where=$(addr2line -e "$PROGS/static_launch" "0x$offsets")
line=${where##*:}
line=${line%% *}
sed -n "${line}p" "$TOP_SRCDIR/tests/progs/static_launch.c" | grep -q LAUNCH-LIBRARY ||
	fail "library launch site $where: not the LAUNCH-LIBRARY line"
