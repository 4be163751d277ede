#!/bin/sh
# SPDX-License-Identifier: MIT
# t236: CUPTI is detached (cuptiFinalize, CUPTI-8) only while no other thread is inside a CUDA
# call (CUPTI-10, interpose/gate.h): on the H100 a finalize made while another thread waited in
# cudaStreamSynchronize crashed that thread at the call's exit, inside libcupti (c109 of
# examples/corpus, 7 runs of 8). gpu_loop lanes: four threads, each syncing its own stream every
# step, sampled (20/60) so that CUPTI is detached at every pause. The stand-in CUPTI counts a
# finalize made while another thread is inside a reported driver call (finalize_races): none,
# while detaches still happen (at exits where the others are outside: the rest are deferred and
# counted), the program's output is unchanged, and the database is finished. With
# SYNCSPY_CUPTI_PAUSE=disable nothing is finalized at all.
. "$E2E_DIR/lib.sh"
LD_LIBRARY_PATH=$STANDIN_DIR/cupti:$LD_LIBRARY_PATH # the stand-in CUPTI first, as t211
export LD_LIBRARY_PATH SYNCSPY_CUPTI=1 SYNCSPY_CUPTI_SAMPLE=20/60
steps=300

"$PROGS/gpu_loop" $steps lanes >"$tmp/plain.out" 2>&1 || fail "gpu_loop lanes without the shim: $(cat "$tmp/plain.out")"
STANDIN_CUPTI_REPORT=$tmp/standin.txt under_shim "$PROGS/gpu_loop" $steps lanes >"$tmp/shim.out" 2>"$tmp/shim.err" ||
	fail "gpu_loop lanes under the shim failed: $(cat "$tmp/shim.err")"
cmp -s "$tmp/plain.out" "$tmp/shim.out" || fail "output differs: $(cat "$tmp/shim.out")"
one_db
standin() { sed -n "s/^$1 //p" "$tmp/standin.txt"; }
[ "$(standin finalize_races)" = 0 ] ||
	fail "cuptiFinalize while another thread was inside a call: $(cat "$tmp/standin.txt")"
finalizes=$(standin finalizes)
[ "${finalizes:-0}" -ge 2 ] || fail "CUPTI detached ${finalizes:-0} times: $(cat "$tmp/standin.txt")"
golden "SELECT value FROM meta WHERE key = 'cupti_detaches'" <<END
$finalizes
END
deferrals=$(q "SELECT value FROM meta WHERE key = 'cupti_detach_deferrals'")
[ "${deferrals:-0}" -ge 1 ] || fail "no detach deferred with four threads syncing: '${deferrals}'"
golden "SELECT count(*) FROM meta WHERE key = 'cupti_detach_fallback'" <<'END'
0
END
# every thread's kernels were traced in the windows
[ "$(q "SELECT count(DISTINCT stream_id) FROM gpu_activity WHERE kind = 'kernel'")" = 4 ] ||
	fail "kernels of $(q "SELECT count(DISTINCT stream_id) FROM gpu_activity WHERE kind = 'kernel'") lanes recorded"
rm -rf "$out"

STANDIN_CUPTI_REPORT=$tmp/disable.txt SYNCSPY_CUPTI_PAUSE=disable under_shim "$PROGS/gpu_loop" $steps lanes \
	>"$tmp/disable.out" 2>&1 || fail "gpu_loop lanes (disable) failed"
[ "$(sed -n 's/^finalizes //p' "$tmp/disable.txt")" = 0 ] || fail "disable: finalized: $(cat "$tmp/disable.txt")"
finish
