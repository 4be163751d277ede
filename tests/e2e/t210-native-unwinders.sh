#!/bin/sh
# SPDX-License-Identifier: MIT
# t210: native stacks stay whole and cheap under a frame libunwind's fast trace cannot classify
# (its CFA a DWARF expression, as in realigned frames of torch's libraries). Each call site
# times both unwinders on its first stacks and keeps the faster (interpose/native.c): under
# such a frame libunwind's unw_step fallback makes system calls per frame and is some 18 times
# slower than libgcc's unwinder on this machine; over ordinary frames libunwind's cached trace
# is some 8 times faster than libgcc's. The choice is by measured speed, with those margins.
. "$E2E_DIR/lib.sh"
under_shim "$PROGS/cfa_expression" 50 >"$tmp/stdout" 2>&1 || fail "cfa_expression failed: $(cat "$tmp/stdout")"
one_db
golden "SELECT value FROM meta WHERE key = 'native_stacks'" <<END
libunwind
END
# One stack per call site, each taken 50 times (the trials walk the same frames with both).
golden "SELECT count(DISTINCT native_stack_id), count(*) FROM calls WHERE api_id = (SELECT id FROM apis WHERE name = 'cudaStreamSynchronize') GROUP BY site_id ORDER BY min(id)" <<END
1|50
1|50
END
# Whole: the stack under the expression frame is the plain one and two frames more
# (sync_beneath and through_expression in place of sync_plain, main's other return address
# aside), and both end in the same outermost frames, down to _start.
q "SELECT s.depth, s.frames FROM stacks s JOIN calls c ON c.native_stack_id = s.id GROUP BY s.id ORDER BY min(c.id)" >"$tmp/stacks" ||
	fail "stacks query"
plain_depth=$(q "SELECT s.depth FROM stacks s JOIN calls c ON c.native_stack_id = s.id GROUP BY s.id ORDER BY min(c.id) LIMIT 1")
beneath_depth=$(q "SELECT s.depth FROM stacks s JOIN calls c ON c.native_stack_id = s.id GROUP BY s.id ORDER BY min(c.id) LIMIT 1 OFFSET 1")
[ -n "$plain_depth" ] && [ "$beneath_depth" = $((plain_depth + 1)) ] ||
	fail "depths $plain_depth and $beneath_depth: $(cat "$tmp/stacks")"
q "SELECT frames FROM stacks s JOIN calls c ON c.native_stack_id = s.id GROUP BY s.id ORDER BY min(c.id) LIMIT 1" | tail -n 3 >"$tmp/plain_tail"
q "SELECT frames FROM stacks s JOIN calls c ON c.native_stack_id = s.id GROUP BY s.id ORDER BY min(c.id) LIMIT 1 OFFSET 1" | tail -n 3 >"$tmp/beneath_tail"
diff -u "$tmp/plain_tail" "$tmp/beneath_tail" >&2 || fail "the stacks end differently"
grep -q '__libc_start_main' "$tmp/plain_tail" || fail "the stack does not reach libc's start: $(cat "$tmp/plain_tail")"
# The site under the expression frame chose libgcc's unwinder; the plain one kept libunwind.
golden "SELECT value FROM meta WHERE key = 'native_stacks_libgcc_sites'" <<END
1
END
