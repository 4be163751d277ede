#!/bin/sh
# SPDX-License-Identifier: MIT
# t243: a CUDA library's exit handler that still calls CUDA after CUPTI's own has torn CUPTI
# down (cuBLASLt's unloading its kernels' libraries, on the H100: SIGSEGV in
# cuptiActivityDisable, tests/gpu/results/2026-12-06-session26) meets no CUPTI call of syncspy's:
# the shim's exit notice is the newest exit handler (SHIM-8) and leaves CUPTI first (CUPTI-14).
# gpu_loop exit-syncs registers, before its first CUDA call, an exit handler that launches a
# kernel and waits for it 6 times, 15 ms apart; the stand-in CUPTI tears itself down in an exit
# handler it registers when syncspy first registers its buffer callbacks, and aborts at any of
# its functions called after that. Sampled in windows of 5 ms every 15 ms (every exit sync due
# to switch the timeline: a CUPTI call each), by default (auto), and traced whole: the program's
# output and status as without the shim, the database finished, the exit syncs' host rows kept,
# and the loop's GPU rows flushed at the notice (all 60 kernels where traced whole). A program
# whose first CUDA call comes at exit (exit-only) starts no CUPTI there.
. "$E2E_DIR/lib.sh"
LD_LIBRARY_PATH=$STANDIN_DIR/cupti:$LD_LIBRARY_PATH # the stand-in CUPTI first, as t211
export LD_LIBRARY_PATH SYNCSPY_CUPTI=1

"$PROGS/gpu_loop" 30 exit-syncs >"$tmp/plain.out" 2>"$tmp/plain.err" ||
	fail "without the shim, gpu_loop exit-syncs exited $?: $(cat "$tmp/plain.err")"
printf 'done 30 steps\nexit syncs 6\n' | cmp -s - "$tmp/plain.out" ||
	fail "without the shim: $(cat "$tmp/plain.out")"

for sample in 5/15 auto all; do
	name=$(echo "$sample" | tr / _)
	rm -rf "$out" && mkdir -p "$out"
	status=0
	SYNCSPY_CUPTI_SAMPLE=$sample under_shim "$PROGS/gpu_loop" 30 exit-syncs >"$tmp/$name.out" 2>"$tmp/err" ||
		status=$?
	[ "$status" = 0 ] || fail "$sample: gpu_loop exit-syncs exited $status under the shim: $(cat "$tmp/err")"
	cmp -s "$tmp/plain.out" "$tmp/$name.out" || fail "$sample: output changed: $(cat "$tmp/$name.out")"
	grep -q "torn down" "$tmp/err" && fail "$sample: CUPTI called after its teardown: $(cat "$tmp/err")"
	one_db # finished, not left .partial
	golden "SELECT count(*) FROM calls WHERE api_id = (SELECT id FROM apis WHERE name = 'cudaStreamSynchronize')" <<'END'
36
END
	kernels=$(q "SELECT count(*) FROM gpu_activity WHERE kind = 'kernel'")
	[ "$kernels" -gt 0 ] || fail "$sample: no kernel recorded"
	[ "$sample" != all ] || [ "$kernels" -ge 60 ] || fail "traced whole: $kernels kernels recorded of the loop's 60"
done

# A program whose first CUDA call comes from its exit handler, after the notice: CUPTI is not
# started there (meta.cupti says why), the calls are recorded.
rm -rf "$out" && mkdir -p "$out"
under_shim "$PROGS/gpu_loop" 0 exit-only >"$tmp/only.out" 2>"$tmp/err" ||
	fail "gpu_loop exit-only exited $? under the shim: $(cat "$tmp/err")"
[ "$(cat "$tmp/only.out")" = "exit syncs 6" ] || fail "exit-only: $(cat "$tmp/only.out")"
one_db
golden "SELECT value FROM meta WHERE key = 'cupti'" <<'END'
off: the program first called CUDA while exiting; host data only
END
golden "SELECT count(*) FROM calls WHERE api_id = (SELECT id FROM apis WHERE name = 'cudaStreamSynchronize')" <<'END'
6
END
finish
