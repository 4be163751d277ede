#!/bin/sh
# SPDX-License-Identifier: MIT
# t223: a driver enqueue's path through a static runtime is walked once per path, however many
# paths a thread has and wherever its stack lies (interpose/native.c, NATIVE-1 and NATIVE-2).
# tests/progs/static_launch.c in `depths` mode launches from one line at 12 stack depths in
# turn, 200 rounds: 12 paths with one caller (the runtime's call of cuLaunchKernel). Before
# NATIVE-1 a thread kept 8 paths in slots chosen by a hash, so 12 could not all stay and the
# ones sharing a slot were walked again at every launch (session 7's slow torch processes on
# the H200); before NATIVE-2 every frame of every walk was looked up with dladdr. Each of the
# 2400 launch rows names the launching line; the walks are the 12 paths and the program's few
# others; the module lookups are bounded by the return addresses met, not by the launches.
. "$E2E_DIR/lib.sh"
src="$TOP_SRCDIR/tests/progs/static_launch.c"
under_shim "$PROGS/static_launch" depths 12 200 >"$tmp/stdout" || fail "program failed"
grep -q 'static launch depths ok' "$tmp/stdout" || fail "wrong output: $(cat "$tmp/stdout")"
one_db
golden "SELECT api, count(*), count(DISTINCT site) FROM api_calls WHERE class = 'E1' GROUP BY api" <<'END'
cuLaunchKernel|2400|1
END
command -v addr2line >/dev/null 2>&1 || skip "no addr2line"
offset=$(q "SELECT DISTINCT printf('%x', s.module_offset - 1) FROM calls c JOIN sites s ON s.id = c.site_id
	WHERE c.class = 'E1'")
where=$(addr2line -e "$PROGS/static_launch" "0x$offset")
line=${where##*:}
line=${line%% *}
sed -n "${line}p" "$src" | grep -q LAUNCH-DEPTH || fail "$where: not the LAUNCH-DEPTH line"
walks=$(q "SELECT value FROM meta WHERE key = 'enqueue_path_walks'")
lookups=$(q "SELECT value FROM meta WHERE key = 'enqueue_path_lookups'")
walk_ns=$(q "SELECT value FROM meta WHERE key = 'enqueue_path_walk_ns'")
# 12 paths, and one each for the first launch's other callers at most (the stream's creation
# and the allocations are not enqueues): 12-16 walks, never one per round
[ "$walks" -ge 12 ] && [ "$walks" -le 16 ] || fail "enqueue_path_walks=$walks (want 12-16 for 12 paths)"
# a walk meets the launching frame, the recursion's frames and main's callers: some tens of
# distinct return addresses, each looked up once
[ "$lookups" -ge 1 ] && [ "$lookups" -le 64 ] || fail "enqueue_path_lookups=$lookups (want at most 64)"
[ "$walk_ns" -gt 0 ] || fail "enqueue_path_walk_ns=$walk_ns"
