#!/bin/sh
# SPDX-License-Identifier: MIT
# t232: module-load-in-loop (docs/rules.md): a driver-API loop that loads a module
# (cuModuleLoad) and a library (cuLibraryLoadData) every step and gets its kernel from each
# (cuModuleGetFunction, cuLibraryGetKernel) every step (driver_loop modules; examples/corpus
# d17) has every load, lookup and unload recorded as X1 with its time, the module or library
# in aux (the load's the one it made, a lookup's and an unload's the one they name), and gets
# a steady finding at each load's line, costing the loads' host time with that of the lookups
# into the modules they made, and one at each lookup's line, right after its load's, costing
# the same (its estimate) and naming the load's line. The library's unload every step gets one
# too, as the lookups' (its estimate: the load's time with its lookups' and unloads'); the
# modules' unloads after the loop (teardown) are not flagged. The runtime's
# cudaLibraryLoadData and cudaLibraryGetKernel every step (gpu_loop library) get the same pair.
# The fix, loaded once before the loop with each kernel got once (driver_loop modules-once),
# gets none; so do loads and lookups sited inside the CUDA runtime library (its lazy loading).
. "$E2E_DIR/lib.sh"
src=$TOP_SRCDIR/tests/progs/driver_loop.c
mark() { grep -n "MARK:$1 " "$src" | cut -d: -f1; }
under_shim "$PROGS/driver_loop" 30 modules >"$tmp/modules.out" 2>&1 || fail "driver_loop modules failed: $(cat "$tmp/modules.out")"
one_db
golden "SELECT api, layer, class, count(*), min(end_ns >= start_ns), count(aux) FROM api_calls
	WHERE api LIKE 'cuModule%' OR api LIKE 'cuLibrary%' GROUP BY 1, 2, 3 ORDER BY 1" <<'END'
cuLibraryGetKernel|driver|X1|30|1|30
cuLibraryLoadData|driver|X1|30|1|30
cuLibraryUnload|driver|X1|30|1|30
cuModuleGetFunction|driver|X1|30|1|30
cuModuleLoad|driver|X1|30|1|30
cuModuleUnload|driver|X1|30|1|30
END
# each lookup names the module or library the load before it made
golden "SELECT g.api, count(*) FROM api_calls g WHERE g.api IN ('cuModuleGetFunction', 'cuLibraryGetKernel')
	AND g.aux = (SELECT l.aux FROM api_calls l WHERE l.start_ns < g.start_ns
	AND l.api = CASE g.api WHEN 'cuModuleGetFunction' THEN 'cuModuleLoad' ELSE 'cuLibraryLoadData' END
	ORDER BY l.start_ns DESC LIMIT 1) GROUP BY 1 ORDER BY 1" <<'END'
cuLibraryGetKernel|30
cuModuleGetFunction|30
END
"$SYNCSPY" report --format json "$db" >"$tmp/modules.json" 2>"$tmp/err" || fail "report exited $?: $(cat "$tmp/err")"
cp "$db" "$tmp/modules.sqlite"
golden "SELECT json_extract(value, '\$.site'), json_extract(value, '\$.phase'), json_extract(value, '\$.count'),
	json_extract(value, '\$.cost_ns') = json_extract(value, '\$.blocked_ns'), json_extract(value, '\$.severity') <> 'info'
	FROM json_each(json_extract(readfile('$tmp/modules.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'module-load-in-loop' ORDER BY 1" <<END
$src:$(mark load) in modules|steady|29|1|1
$src:$(mark get) in modules|steady|29|0|1
$src:$(mark libload) in modules|steady|29|1|1
$src:$(mark libget) in modules|steady|29|0|1
$src:$(mark libunload) in modules|steady|29|0|1
END
# each pair: adjacent in the report, one share; the load's time is its own and the lookups'
# (its detail names them); the lookup's cost is that (estimate_ns), its detail names the load
for pair in load:get libload:libget; do
	l=$(mark "${pair%:*}")
	g=$(mark "${pair#*:}")
	golden "SELECT d.key = i.key + 1, json_extract(d.value, '\$.share') = json_extract(i.value, '\$.share'),
		json_extract(d.value, '\$.estimate_ns') = json_extract(i.value, '\$.blocked_ns'),
		json_extract(i.value, '\$.blocked_ns') > json_extract(d.value, '\$.blocked_ns')
		AND instr(json_extract(i.value, '\$.detail'), '29 lookups') > 0
		AND instr(json_extract(i.value, '\$.detail'), 'driver_loop.c:$g in modules') > 0,
		instr(json_extract(d.value, '\$.detail'), 'driver_loop.c:$l in modules') > 0
		FROM json_each(json_extract(readfile('$tmp/modules.json'), '\$.findings')) i,
		json_each(json_extract(readfile('$tmp/modules.json'), '\$.findings')) d
		WHERE json_extract(i.value, '\$.site') LIKE '%driver_loop.c:$l in modules'
		AND json_extract(d.value, '\$.site') LIKE '%driver_loop.c:$g in modules'" <<'END'
1|1|1|1|1
END
done
# the text report names the rule and its fix
"$SYNCSPY" report "$db" >"$tmp/modules.txt" 2>"$tmp/err" || fail "report exited $?: $(cat "$tmp/err")"
grep -q "module-load-in-loop .*driver_loop.c:$(mark load) in modules" "$tmp/modules.txt" || fail "no module-load-in-loop line in the text report"
grep -q 'fix: Load the module or library once at setup' "$tmp/modules.txt" || fail "no advice in the text report"
# the runtime's libraries (gpu_loop library): cudaLibraryLoadData and cudaLibraryGetKernel every
# step, recorded once each (not again as the driver calls the runtime makes: DRIVER-3), both
# lines flagged, and the unload every step
rm -rf "$out"
under_shim "$PROGS/gpu_loop" 30 library >"$tmp/library.out" 2>&1 || fail "gpu_loop library failed: $(cat "$tmp/library.out")"
one_db
golden "SELECT api, layer, class, count(*), count(aux) FROM api_calls WHERE api LIKE '%Library%' GROUP BY 1, 2, 3 ORDER BY 1" <<'END'
cudaLibraryGetKernel|runtime|X1|30|30
cudaLibraryLoadData|runtime|X1|30|30
cudaLibraryUnload|runtime|X1|30|30
END
"$SYNCSPY" report --format json "$db" >"$tmp/library.json" 2>"$tmp/err" || fail "report exited $?: $(cat "$tmp/err")"
loop=$TOP_SRCDIR/tests/progs/gpu_loop.c
golden "SELECT json_extract(value, '\$.site'), json_extract(value, '\$.phase'), json_extract(value, '\$.count')
	FROM json_each(json_extract(readfile('$tmp/library.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'module-load-in-loop' ORDER BY key" <<END
$loop:$(grep -n 'MARK:libload ' "$loop" | cut -d: -f1) in main|steady|29
$loop:$(grep -n 'MARK:libget ' "$loop" | cut -d: -f1) in main|steady|29
$loop:$(grep -n 'MARK:libunload ' "$loop" | cut -d: -f1) in main|steady|29
END
rm -rf "$out"
under_shim "$PROGS/driver_loop" 30 modules-once >"$tmp/once.out" 2>&1 || fail "driver_loop modules-once failed: $(cat "$tmp/once.out")"
one_db
"$SYNCSPY" report --format json "$db" >"$tmp/once.json" 2>"$tmp/err" || fail "report exited $?: $(cat "$tmp/err")"
golden "SELECT count(*) FROM json_each(json_extract(readfile('$tmp/once.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'module-load-in-loop'" <<'END'
0
END
golden "SELECT api, count(*) FROM api_calls WHERE api LIKE 'cuModule%' OR api LIKE 'cuLibrary%' GROUP BY 1 ORDER BY 1" <<'END'
cuLibraryGetKernel|1
cuLibraryLoadData|1
cuLibraryUnload|1
cuModuleGetFunction|1
cuModuleLoad|1
cuModuleUnload|1
END
# The same loads and lookups sited inside the CUDA runtime library (no user frame: the runtime's
# lazy loading of the kernels an unwrapped runtime call reached first) are not the program's
# to move out of its loop: no finding.
"$SQLITE3" "$tmp/modules.sqlite" "UPDATE sites SET module = '/usr/local/cuda/lib64/libcudart.so.13'
	WHERE id IN (SELECT c.site_id FROM calls c JOIN apis a ON a.id = c.api_id
	WHERE a.name LIKE 'cuModule%' OR a.name LIKE 'cuLibrary%')" || fail "update sites"
"$SYNCSPY" report --format json "$tmp/modules.sqlite" >"$tmp/runtime.json" 2>"$tmp/err" ||
	fail "report exited $?: $(cat "$tmp/err")"
golden "SELECT count(*) FROM json_each(json_extract(readfile('$tmp/runtime.json'), '\$.findings'))
	WHERE json_extract(value, '\$.rule') = 'module-load-in-loop'" <<'END'
0
END
finish
