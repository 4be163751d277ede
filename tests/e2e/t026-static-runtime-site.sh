#!/bin/sh
# SPDX-License-Identifier: MIT
# t026: a program with a statically linked CUDA runtime (as nvcc links by default): its driver
# calls are seen (the runtime looks the driver up through cuGetProcAddress, DRIVER-1), meta
# names the program as carrying a static runtime, and each sync point's user call site is the
# program's code that called the runtime, found past the runtime's own frames by their names in
# the program's symbol table (elfsyms.c): five allocations in a loop share one site, the sixth
# has another; none is attributed to the runtime function.
. "$E2E_DIR/lib.sh"
under_shim "$PROGS/static_runtime" >"$tmp/stdout" || fail "program failed"
grep -q 'static runtime ok' "$tmp/stdout" || fail "wrong output"
one_db
golden "SELECT api, count(*), count(DISTINCT site) FROM api_calls GROUP BY api ORDER BY api" <<'END'
cuMemAlloc_v2|6|2
cuMemFree_v2|6|2
END
golden "SELECT value FROM meta WHERE key = 'static_cudart'" <<'END'
static_runtime
END
# every call has its native stack, whose first frame is inside the runtime function; the site
# is a later frame, the program's own call
golden "SELECT count(*) FROM api_calls WHERE native_stack IS NOT NULL AND site <> substr(native_stack, 1, instr(native_stack, char(10)) - 1)" <<'END'
12
END
