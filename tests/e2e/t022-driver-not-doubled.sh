#!/bin/sh
# SPDX-License-Identifier: MIT
# t022: the runtime reaches the driver through cuGetProcAddress pointers (the stand-in runtime
# does, as NVIDIA's does), which the shim wraps; a runtime call's own driver calls are not
# recorded again (DRIVER-3): one call of the program, one row. meta.driver_clients names the
# runtime as the module that looked the driver up.
. "$E2E_DIR/lib.sh"
under_shim "$PROGS/scenarios" s4 >/dev/null || fail "scenario failed"
one_db
golden "SELECT layer, count(*) FROM api_calls GROUP BY layer" <<'END'
runtime|4
END
golden "SELECT value LIKE '%libcudart.so.13%', (SELECT value FROM meta WHERE key = 'static_cudart') IS NULL FROM meta WHERE key = 'driver_clients'" <<'END'
1|1
END
